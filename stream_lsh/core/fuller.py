"""The fuller-member check: a page that only *holds* a small page of a story is not a copy of it.

Containment is what makes a teaser a copy of its story: the teaser's text lies whole in every full
copy (:mod:`.verification`). It lies just as whole in a page that is not that story at all: a
newsletter digest or a roundup that gives the story's headline and first sentence beside those of
five other stories, or a page that quotes the teaser's sentences. Judged against the teaser alone,
such a page is its "fuller copy", joins the teaser's cluster, and every page of that story is then
paired with it. On two evaluation sets built blind from real news (``docs/accuracy.md``), these
were 54 of 54 and 150 of 153 of the false pairs.

The story's own full pages tell the two apart: a copy of the story holds most of them, a digest
holds one sentence of them. So when every member of a cluster that a page matches is *smaller* than
the page (the page holds them), the cluster's other members are asked as well: those among the
page's candidates, and the page each matched member was decided a copy of (its ``duplicate_of``,
which a teaser's is: the full page it joined), which often shares no band with a digest. A
**fuller member** ``R``:

1. does not match the page;
2. is at least :data:`FULLER` times the size of the largest member the page matched;
3. matches that member itself (``R`` is that member's story, in full);
4. holds less than :data:`HOLDS` of the page.

The story is then larger than what the page holds of it, and most of the page is something else:
the page does not join that cluster (it may join another, or found its own), and its decision names
``R`` as ``refused_by``. A copy of the story, trimmed, edited or with comments below it, matches
``R`` itself, so ``R`` refuses nothing; a teaser is smaller than what it matches, so it is never
asked. The check needs a fuller member at hand, so a digest that arrives while the story has only
its teaser, or whose teaser founded the cluster, still joins it (``docs/accuracy.md`` counts those).

The two constants were measured on the blind sets and on the generated shapes, not fitted to either
alone: ``benchmarks/eval_grid.py --by-shape`` and ``stream-lsh eval`` give the figures the accuracy
page reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:  # the rule (.decision) calls this module
    from .decision import Match

__all__ = ["FULLER", "HOLDS", "Neighbours", "refusals"]

#: A fuller member is at least this many times the size of the largest member the page matched.
FULLER: Final = 1.5
#: ... and holds less than this share of the page.
HOLDS: Final = 0.5


class Neighbours(Protocol):
    """What the check asks of the window, beyond the page's candidates; called only for a cluster
    the page joins through smaller members alone, so rarely."""

    def agree(self, first: Match, second: Match) -> bool:
        """Whether two members match each other."""

    def original(self, member: Match) -> tuple[Match, str | None] | None:
        """The page ``member`` was decided a copy of, measured against the page, with the
        verification rule's verdict on it; None if it has none, or it has left the window."""


def refusals(
    candidates: Sequence[Match], verdicts: Sequence[str | None], neighbours: Neighbours
) -> dict[str, str]:
    """The clusters the page may not join: {cluster id: the id of the fuller member that refuses
    it} (see the module doc).

    Args:
        candidates: the page's candidates, with the shares of :func:`.verification.measure`; those
            without shares, or not earlier than the page (no cluster), are never asked.
        verdicts: the verification rule's verdict on each candidate (None: no match).
        neighbours: the window's other members of a cluster, and whether two members match.
    """
    members: dict[str, list[tuple[Match, str | None]]] = {}
    for candidate, verdict in zip(candidates, verdicts, strict=True):
        if candidate.cluster_id is not None:
            members.setdefault(candidate.cluster_id, []).append((candidate, verdict))
    refused: dict[str, str] = {}
    for cluster_id, found in members.items():
        matched = [c for c, verdict in found if verdict is not None]
        sizes = [_size(c) for c in matched]
        if not sizes or any(size is None or size >= 1.0 for size in sizes):
            continue  # no match, a match the shares cannot size, or one that holds the page
        largest = max(size for size in sizes if size is not None)
        asked, known = list(found), {c.id for c, _ in found}
        for member in matched:
            original = neighbours.original(member)
            if original is not None and original[0].cluster_id == cluster_id and original[0].id not in known:
                known.add(original[0].id)
                asked.append(original)
        for fuller, verdict in asked:
            size = _size(fuller)
            if (
                verdict is None
                and size is not None
                and size >= FULLER * largest
                and (fuller.of_page or 0.0) < HOLDS
                and any(neighbours.agree(fuller, member) for member in matched)
            ):
                refused[cluster_id] = fuller.id
                break
    return refused


def _size(candidate: Match) -> float | None:
    """The candidate's size over the page's, or None when the shares do not tell it."""
    if candidate.of_page is None or not candidate.of_candidate:
        return None
    return candidate.of_page / candidate.of_candidate
