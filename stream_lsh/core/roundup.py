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
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # the rule (.decision) calls this module
    from .decision import Match

__all__ = ["HOLDS", "STORIES", "holds_most_of", "is_roundup"]

#: A page whose paragraphs open this many earlier stories (distinct clusters) is a roundup.
STORIES: Final = 3
#: A roundup is a copy only of a page in which at least this share of it lies.
HOLDS: Final = 0.7


def is_roundup(opened: Collection[str]) -> bool:
    """Whether a page is a roundup, from the clusters of the earlier pages whose openings its
    paragraphs hold."""
    return len(opened) >= STORIES


def holds_most_of(candidate: Match) -> bool:
    """Whether a candidate holds most of the page, so that a roundup may be a copy of it; a
    candidate whose share was not measured is not asked to (as in :mod:`.fuller`)."""
    return candidate.of_page is None or candidate.of_page >= HOLDS
