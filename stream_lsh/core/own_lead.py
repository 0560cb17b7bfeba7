"""Copies with a lead of their own: where a story begins after an outlet's own first sentences.

An outlet that carries a wire story often puts a sentence or two of its own on top: a local
angle, a line of context, a sentence from another report. Its copy then begins where the other
copies do not, and the lead (:mod:`.lead`), which counts a page's first quarter three times,
weighs against it: copies whose first sentences differ lose three times over the shingles their
leads would have shared. On the short articles of wire briefs (60-200 words) the lead is most of
the page, and such copies measured containment 0.35-0.55 against the story's other copies on the
real-prose rows of ``benchmarks/eval_grid.py``, below the containment threshold: 23 of the 25
copies that the plain-copies row left apart (seeds 1-3).

What such a copy still shares with the others is where the story begins: the opening key
(:mod:`.opening`) of its second or third sentence is the opening of a copy without the extra
sentences, or such a key of a copy with others. So every page has its **openings after a lead**,
the keys of its first :data:`LEAD_SENTENCES` sentences that do not open the page, and a candidate
**opens like the page after a lead** when the two pages open differently but one's opening or an
opening after its lead is the other's. Such a candidate is a copy (``match`` "lead") from lower
bars than the verification rule's (:func:`holds_story`): containment
:data:`MIN_CONTAINMENT`, with at least :data:`MIN_SHARE_OF_CANDIDATE` of the candidate in the
page (the page carries the story, not a line of it) and :data:`MIN_SHARE_OF_PAGE` of the page in
the candidate (the story is most of what the page says).

What it must not take in is a page that quotes the start of another story after a paragraph of
its own, a commentary that cites it, or a digest whose second sentence opens a story: on the
generated quoting pages whose second paragraph opens the story they quote, containment measured
0.19-0.51 against the copies' 0.27-0.76. On two sets built blind from real news the rule first
merged only such pages (a quoting story and a commentary, at shares of the page 0.27-0.39),
until the share of the page was asked too; with it, both sets score as without the rule
(docs/accuracy.md). A roundup (:mod:`.roundup`) matches this way no more than otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Final

__all__ = [
    "LEAD",
    "MIN_CONTAINMENT",
    "MIN_SHARE_OF_CANDIDATE",
    "MIN_SHARE_OF_PAGE",
    "after_lead",
    "holds_story",
    "opens_after_lead",
]

#: The ``match`` of a copy found by where the story begins after a lead of its own.
LEAD: Final = "lead"
#: A lead of one's own is at most this many sentences.
LEAD_SENTENCES: Final = 2
#: A candidate that opens like the page after a lead matches from this containment...
MIN_CONTAINMENT: Final = 0.4
#: ... when at least this share of it lies in the page...
MIN_SHARE_OF_CANDIDATE: Final = 0.4
#: ... and at least this share of the page lies in it.
MIN_SHARE_OF_PAGE: Final = 0.4


def after_lead(opening: int, sentence_openings: Iterable[int]) -> tuple[int, ...]:
    """A page's openings after a lead of its own: the opening keys of its first
    :data:`LEAD_SENTENCES` sentences that do not open the page (its sentences' keys in text order,
    :func:`.opening.sentence_openings`)."""
    return tuple(islice((key for key in sentence_openings if key and key != opening), LEAD_SENTENCES))


def opens_after_lead(
    opening: int, after: Sequence[int], other_opening: int, other_after: Sequence[int]
) -> bool:
    """Whether two pages, each given by its opening and its openings after a lead, open alike
    once a lead of one's own is set aside: they open differently, and one's opening or an
    opening after its lead is the other's (0s never match)."""
    if not opening or not other_opening or opening == other_opening:
        return False
    return bool({opening, *after} & ({other_opening, *other_after} - {0}))


def holds_story(containment: float, of_page: float | None, of_candidate: float | None) -> bool:
    """Whether a candidate that opens like the page after a lead is a copy of it, by their
    containment and the shares of each in the other (None: not measured, as for a candidate
    reported before shares were: containment alone decides)."""
    return (
        containment >= MIN_CONTAINMENT
        and (of_candidate is None or of_candidate >= MIN_SHARE_OF_CANDIDATE)
        and (of_page is None or of_page >= MIN_SHARE_OF_PAGE)
    )
