"""Roundups: a page that opens several stories is none of them.

A newsletter digest, a roundup ("What you need to know today"), a live page or a front page gives
the headline and first sentence or two of several stories. Against one of those stories it can
look like a copy: it holds that story's opening, which is the story's lead (:mod:`.lead`), and for
the short articles of wire briefs that lead is half the story or more. On the real-prose digests
of ``benchmarks/eval_grid.py`` such pages were most of the false pairs, matched by Jaccard
similarity 0.3-0.45 or by containment, while their stories' own full pages were no larger than
they, so the fuller-member check (:mod:`.fuller`) had nothing to refuse them with.

What gives them away is that they hold *several* openings. Every sentence of prose (each
paragraph's first, and each after it) has the opening key an article beginning there would have
(:func:`.opening.sentence_openings`): a digest's item often gives its headline before the
story's first sentence, in one paragraph ("Fire damages cathedral. Fire has damaged part of St
John the Divine..."). The window already remembers the first page with each opening
(:mod:`.opening`). A page whose sentences open :data:`STORIES` or more earlier stories (distinct
clusters) is a **roundup**. The paragraphs the boilerplate learner took out count too: a site's
front and section pages repeat their stories' openings from one version to the next, so the
learner drops them, and what is left of a later version is the few items that are new, which look
like a teaser of a story or two. Its own opening counts only when the page it opens like resembles
it (shares a band): outlets open pages of many stories with the same stock line ("In case you
missed it, this is one of the big stories of the day."), which opens no story. A roundup is a
copy only of a page that holds most of it, at least :data:`HOLDS` of it (the share of the page
that lies in the candidate): another outlet's copy of the same newsletter. It never joins one of
the stories it sums up, and it never joins by its opening.

Two openings make no roundup: a page may carry two stories, or one story and a "related" paragraph
that opens another. A copy of a story whose "related" box gives the first sentences of two others
holds three openings and is a roundup by this count; it still joins its story, because most of it
lies there (the story's text, and the lead it shares with the story, :mod:`.lead`).

A front or section page that comes before its stories opens none that the window knows. So a page
is a roundup by its shape too, a **listing**: :data:`LISTING_ITEMS` or more items, each a
headline line followed by a summary of at most :data:`SUMMARY_WORDS` words, at least half of them
about their headline (sharing a word of five letters or more with it: a "Related:" line between an
article's paragraphs names another story), the items making at least half its words
(:func:`is_listing`, on the page's blocks before its site's boilerplate is dropped). On the
eleventh to thirteenth outside sets this took 205 of 285 pages of several stories, and on the ninth
to thirteenth none of about 6,400 stories.

And the other way round: **no page is a copy of a roundup that holds it**. A card, an RSS item or
a short story whose text is one item of a front that came first lies wholly in it, which reads
as a teaser of a fuller page; it joined the front, and every later copy of the story joined it
there. A page joins a roundup only when it holds :data:`HOLDS` of it: another copy of the same
page (:func:`may_copy`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Final

from .text import heading

_LONG_WORD = re.compile(r"\w{5,}")

if TYPE_CHECKING:  # the rule (.decision) calls this module
    from .decision import Match

__all__ = [
    "HOLDS",
    "LISTING_ITEMS",
    "STORIES",
    "SUMMARY_WORDS",
    "holds_most_of",
    "is_listing",
    "is_roundup",
    "may_copy",
]

#: A page whose paragraphs open this many earlier stories (distinct clusters) is a roundup.
STORIES: Final = 3
#: A roundup is a copy only of a page in which at least this share of it lies.
HOLDS: Final = 0.7
#: A page of this many items or more (a headline, then a short summary) is a listing.
LISTING_ITEMS: Final = 4
#: ... an item's summary having at most this many words.
SUMMARY_WORDS: Final = 60


def is_roundup(opened: Collection[str]) -> bool:
    """Whether a page is a roundup, from the clusters of the earlier pages whose openings its
    paragraphs hold."""
    return len(opened) >= STORIES


def holds_most_of(candidate: Match) -> bool:
    """Whether a candidate holds most of the page, so that a roundup may be a copy of it; a
    candidate whose share was not measured is not asked to (as in :mod:`.fuller`)."""
    return candidate.of_page is None or candidate.of_page >= HOLDS


def is_listing(blocks: Sequence[str]) -> bool:
    """Whether a page's blocks are a listing: :data:`LISTING_ITEMS` items or more, each a headline
    line (:func:`.text.heading`) and the summary after it (a block of at most
    :data:`SUMMARY_WORDS` words that is no heading, and about the headline), the items making half
    its words or more."""
    if len(blocks) < 2 * LISTING_ITEMS:
        return False
    heads = [heading(block) for block in blocks]
    items = about = item_words = 0
    for at in range(len(blocks) - 1):
        if heads[at] and not heads[at + 1]:
            title, summary = blocks[at], blocks[at + 1]
            words = summary.count(" ") + 1
            if words <= SUMMARY_WORDS:
                items += 1
                about += _about(summary, title)
                item_words += title.count(" ") + 1 + words
    return (
        items >= LISTING_ITEMS
        and 2 * about >= items
        and 2 * item_words >= sum(block.count(" ") + 1 for block in blocks)
    )


def _about(summary: str, title: str) -> bool:
    """Whether a summary is about the headline above it: they share a word of five letters or more
    (a name, a subject). A "Related:" line between two paragraphs of an article names another
    story, and the paragraph after it shares nothing with it."""
    return not set(_LONG_WORD.findall(title)).isdisjoint(_LONG_WORD.findall(summary))


def may_copy(roundup: bool, candidate: Match) -> bool:
    """Whether the page may be a copy of ``candidate`` at all: a roundup only of a candidate that
    holds most of it (:func:`holds_most_of`), and any page of a roundup candidate only when it
    holds most of that candidate, never because the candidate holds the page (one of its items).
    A share that was not measured asks nothing."""
    if roundup and not holds_most_of(candidate):
        return False
    return not candidate.roundup or candidate.of_candidate is None or candidate.of_candidate >= HOLDS
