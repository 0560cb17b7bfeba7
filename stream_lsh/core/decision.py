"""The decision rule: what a page is, given the pages it was found to resemble.

One pure function, called by the engine (:class:`.dedup.Deduplicator`), which batch and the
stream's decide partition both run.

The rule (MMDS sec. 3.4.3, with the exact-copy fast path of sec. 3.9.1):

1. an earlier page with the same content is the page's original: ``duplicate``, similarity 1.0
   (for a listing, only when that page is a roundup too: :func:`.roundup.may_copy`);
2. a page that could not be signed (too few shingles) is ``no_content``;
3. otherwise the most similar *earlier* candidate that matches (:class:`.verification.Verification`:
   its Jaccard similarity reaches the Jaccard threshold, or else its containment reaches the
   containment threshold) is the original (most similar by Jaccard similarity; ties: the candidate
   batch meets first); with none, the page is ``unique`` and founds a cluster named after itself
   (:func:`cluster_name`).
4. but a page joins no cluster only through smaller pages it holds when a fuller page of that
   story, among its candidates, says most of the page is something else (:mod:`.fuller`: a digest
   or a roundup holds a story's teaser; it is not that story).
5. a short page that step 3 leaves ``unique``, or that could not be signed, is a duplicate of the
   earlier page it opens like, when the engine found one (:mod:`.opening`: a teaser of one
   sentence), ``match`` "opening"; else of the earlier page with its headline
   (:mod:`.headline`: a card of a headline and a deck), ``match`` "headline".
6. a page that steps 3 to 5 leave ``unique``, and that is no roundup, joins the earlier, smaller
   page it opens like and holds (:mod:`.opening`: a story after its teaser or push alert),
   ``match`` "opening"; else the earliest page with its headline when another site gave it
   (:mod:`.headline`: a story after a card whose deck it does not hold), ``match`` "headline".

Clusters are never merged: a page matching pages of two clusters joins the most similar one's.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from .fuller import Neighbours, refusals
from .opening import holds_earlier_opening
from .roundup import copies_listing, may_copy
from .verification import JACCARD, Verification

__all__ = [
    "DUPLICATE",
    "HEADLINE",
    "NO_CONTENT",
    "OPENING",
    "UNIQUE",
    "Decision",
    "Match",
    "Status",
    "cluster_name",
    "decide",
]

UNIQUE: Final = "unique"
DUPLICATE: Final = "duplicate"
NO_CONTENT: Final = "no_content"
Status = str  # one of UNIQUE, DUPLICATE, NO_CONTENT
#: The ``match`` of a short page joined to the earlier page it opens like (:mod:`.opening`).
OPENING: Final = "opening"
#: The ``match`` of a short page joined to the earlier page with its headline (:mod:`.headline`).
HEADLINE: Final = "headline"


@dataclass(frozen=True)
class Decision:
    """The verdict on one page; ``to_dict`` is the output record."""

    id: str
    status: Status
    cluster_id: str | None
    duplicate_of: str | None = None
    similarity: float | None = None
    candidates: int = 0
    date_ignored: str | None = None  # why the page's published_at was not its event time (see .clock)
    match: str | None = None  # what made it a duplicate: jaccard, containment, opening or headline
    containment: float | None = None  # of the candidate ``similarity`` belongs to
    replayed: bool = field(default=False, compare=False)  # given again to a redelivered page
    # of ``candidates``, those whose resemblance matches (not part of the record: the stream's
    # metrics count LSH false positives from it)
    verified: int = field(default=0, compare=False)
    # the fuller page of a story that kept the page out of that story's cluster (.fuller)
    refused_by: str | None = None
    # the page opens several earlier stories (a digest, a roundup), so it joins none of them (.roundup)
    roundup: bool = False
    # a ``no_content`` page that says its article is not here: the kind of notice (.notice)
    notice: str | None = None
    # a duplicate that holds the smaller page it joined (a story after its teaser, card or alert)
    fuller: bool = False

    @property
    def fullest_so_far(self) -> bool:
        """Whether the page is its cluster's fullest telling so far: it founded the cluster, or it
        holds the smaller page it joined. What dedup before indexing keeps (the unique output):
        a story that came after its alert joined the alert's cluster, and is the page to index."""
        return self.status == UNIQUE or self.fuller

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "cluster_id": self.cluster_id,
            "duplicate_of": self.duplicate_of,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "candidates": self.candidates,
            "match": self.match,
            "containment": None if self.containment is None else round(self.containment, 4),
        }
        if self.date_ignored is not None:
            record["date_ignored"] = self.date_ignored
        if self.refused_by is not None:
            record["refused_by"] = self.refused_by
        if self.roundup:
            record["roundup"] = True
        if self.notice is not None:
            record["notice"] = self.notice
        if self.fuller:
            record["fuller"] = True
        return record

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Decision:
        """The inverse of :meth:`to_dict` (``replayed`` is not part of the record)."""
        return cls(
            record["id"],
            record["status"],
            record["cluster_id"],
            record["duplicate_of"],
            record["similarity"],
            record["candidates"],
            record.get("date_ignored"),
            record.get("match"),  # records written before containment have neither
            record.get("containment"),
            refused_by=record.get("refused_by"),
            roundup=bool(record.get("roundup", False)),
            notice=record.get("notice"),
            fuller=bool(record.get("fuller", False)),
        )


class Match(NamedTuple):
    """A candidate as the rule sees it: how similar it is, the cluster it is in, or None when it
    is not an earlier page (it came later, or is gone), which it cannot then be the original of,
    and its containment (:mod:`.verification`). A containment of None was not estimated (a
    candidate reported before containment existed): the Jaccard similarity, its lower bound,
    stands in for it. ``of_page`` and ``of_candidate``: the share of the page that lies in the
    candidate and the share of the candidate that lies in the page (:func:`.verification.measure`),
    for the fuller-member check (:mod:`.fuller`); None leaves the candidate out of it."""

    id: str
    similarity: float
    cluster_id: str | None
    containment: float | None = None
    of_page: float | None = None
    of_candidate: float | None = None
    roundup: bool = False  # the candidate is a roundup: a page is its copy only if it holds most of it
    measured: bool = True  # False: a keyed page (.keyed), found by a key with nothing to measure
    other_site: bool = False  # the candidate is of another site than the page (both known)

    @property
    def contained(self) -> float:
        return self.similarity if self.containment is None else self.containment


def decide(
    page_id: str,
    *,
    signed: bool,
    exact: Match | None,
    candidates: Sequence[Match],
    rule: Verification,
    founds: str | None,
    neighbours: Neighbours | None = None,
    opening: Match | None = None,
    roundup: bool = False,
    listing: bool = False,
    joined_by: str = OPENING,
    opened_by: Match | None = None,
    opened_how: str = OPENING,
    keyed: bool = False,
) -> Decision:
    """The page's decision (see the module doc).

    Args:
        signed: the page has enough shingles to have a signature.
        exact: an earlier page with the same content, if any (a listing takes it only when it is a
            roundup too: what its site's learner leaves of a front can be one card's text).
        candidates: pages sharing a band, with their resemblance, in the order batch meets them
            (ties go to the first); those ``rule`` does not match only count and report the
            best similarity.
        founds: the name of the cluster the page founds if it is unique (:func:`cluster_name`).
        neighbours: the window's other members of the candidates' clusters, for the
            fuller-member check (:mod:`.fuller`); None skips the check.
        opening: the earlier page this short page opens like, which it may join
            (:mod:`.opening`; the engine checked that it may), with its resemblance when the page
            is signed; None: no such page.
        roundup: the page opens several earlier stories (:mod:`.roundup`): it matches only a
            candidate that holds most of it, and never joins by its opening.
        listing: the page is a roundup by its shape (:func:`.roundup.is_listing`): it matches
            only a candidate that is a roundup too.
        joined_by: how ``opening`` was found: :data:`OPENING`, or :data:`HEADLINE` for the
            earlier page with the page's headline (:mod:`.headline`).
        opened_by: the earlier, smaller page this page opens like and holds (:mod:`.opening`;
            the engine checked that it holds it), or the earlier page of another site with its
            headline (:mod:`.headline`), which the page joins if nothing else takes it.
        opened_how: how ``opened_by`` was found: :data:`OPENING` or :data:`HEADLINE`.
        keyed: the page is unsigned but found by its keys (:mod:`.keyed`): when nothing takes
            it, it founds a cluster rather than being ``no_content``.
    """
    if exact is not None and exact.cluster_id is not None and (not listing or copies_listing(exact)):
        return Decision(
            page_id, DUPLICATE, exact.cluster_id, exact.id, 1.0, 1, match=JACCARD, containment=1.0
        )
    if opening is not None and opening.roundup:  # a short page is one item of a roundup (.roundup)
        opening = None
    if opened_by is not None and opened_by.roundup:
        opened_by = None
    if not signed:
        if opening is not None and opening.cluster_id is not None:
            return Decision(page_id, DUPLICATE, opening.cluster_id, opening.id, match=joined_by)
        return Decision(page_id, UNIQUE, founds) if keyed else Decision(page_id, NO_CONTENT, None)
    verdicts = [
        (c, rule.match(c.similarity, c.contained) if may_copy(roundup, c, listing=listing) else None)
        for c in candidates
    ]
    verified = sum(how is not None for _, how in verdicts)
    refused: dict[str, str] = {}
    if neighbours is not None and verified:  # a refusal needs a match
        refused = refusals(candidates, [how for _, how in verdicts], neighbours)
    refused_by = None
    if refused:
        closest_refused = max(
            (c for c, how in verdicts if how is not None and c.cluster_id in refused),
            key=lambda c: c.similarity,
        )
        refused_by = refused[closest_refused.cluster_id or ""]
    others = [c for c, how in verdicts if how is None or c.cluster_id in refused]
    earlier = [
        (c, how)
        for c, how in verdicts
        if how is not None and c.cluster_id is not None and c.cluster_id not in refused
    ]
    if earlier:
        best, how = max(earlier, key=lambda pair: pair[0].similarity)  # max() keeps the first of equals
        return _copy(page_id, best, how, len(candidates), verified, refused_by, rule.containment)
    if opening is not None and opening.cluster_id is not None and refused_by is None and not roundup:
        return _copy(page_id, opening, joined_by, len(candidates), verified, None, rule.containment)
    if opened_by is not None and opened_by.cluster_id is not None and refused_by is None and not roundup:
        return _copy(page_id, opened_by, opened_how, len(candidates), verified, None, rule.containment)
    if not others:
        return Decision(page_id, UNIQUE, founds, None, None, len(candidates), verified=verified)
    closest = max(others, key=lambda c: c.similarity)
    return Decision(
        page_id,
        UNIQUE,
        founds,
        None,
        closest.similarity,
        len(candidates),
        containment=closest.contained,
        verified=verified,
        refused_by=refused_by,
    )


def _copy(
    page_id: str,
    original: Match,
    how: str,
    candidates: int,
    verified: int,
    refused_by: str | None,
    containment: float | None,
) -> Decision:
    """The decision that the page is a copy of ``original``, found by ``how`` (with no similarity
    when nothing was measured), and whether it is the fuller of the two: it holds ``original``
    (at least the ``containment`` threshold's share of it) at twice its size or more, or
    ``original`` is a keyed page (.keyed), too short to sign."""
    fuller = not original.measured or holds_earlier_opening(
        original.of_page, original.of_candidate, containment
    )
    return Decision(
        page_id,
        DUPLICATE,
        original.cluster_id,
        original.id,
        original.similarity if original.measured else None,
        candidates,
        match=how,
        containment=original.contained if original.measured else None,
        verified=verified,
        refused_by=refused_by,
        fuller=fuller,
    )


def cluster_name(page_id: str, taken: Container[str]) -> str:
    """The name of the cluster a unique page founds: its id, unless a live cluster has that name
    (the id was re-sent with another story, or retracted and reused): then ``id#2``, ``id#3``...
    so that one cluster id never names two stories at once."""
    name, n = page_id, 1
    while name in taken:
        n += 1
        name = f"{page_id}#{n}"
    return name
