"""Candidates as band partitions report them, and which of them a decision waits for.

One rule for two places: a band partition asks the home of every candidate a page's decision
needs (:meth:`stream_lsh.pipeline.shard.Shard._ask_homes`), and the page's home waits for exactly
those answers (:class:`stream_lsh.pipeline.gather.Gather`). Were the two to differ, a page would
wait for an answer nobody asks for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from ..core.verification import Verification

__all__ = ["LINK_BAND", "Candidate", "Exact", "Need", "needed"]

#: The band of a *link*: a later page that an earlier one met first (it has no band of its own;
#: it sorts after every real candidate, as batch would never have met it).
LINK_BAND = 1 << 30


class Candidate(NamedTuple):
    """One candidate of a probe, a list on the wire: how it resembles the page (Jaccard
    similarity and containment, :mod:`stream_lsh.core.verification`), where batch would have met
    it first (band, position in that bucket: ties go to the one met first), and where to ask
    about it. A containment of None was not estimated (sent before containment existed)."""

    id: str
    similarity: float
    band: int
    position: int
    home: int
    clock_or_event_time: Any  # the candidate's event time, or for a link its clock (not used to decide)
    containment: float | None = None

    @property
    def contained(self) -> float:
        return self.similarity if self.containment is None else self.containment


class Exact(NamedTuple):
    """The page with the same content that a band partition holds (a list on the wire)."""

    id: str
    home: int
    event_time: float | None


class Need(NamedTuple):
    """Where to ask about a candidate, and how it resembles the page (passed on in the question)."""

    home: int
    similarity: float
    containment: float


def needed(candidates: Iterable[Candidate], exact: Exact | None, rule: Verification) -> dict[str, Need]:
    """Candidate id -> where to ask about it, for every candidate whose status the decision needs:
    those ``rule`` matches, and the exact copy."""
    wanted: dict[str, Need] = {}
    if exact is not None:
        wanted[exact.id] = Need(exact.home, 1.0, 1.0)
    for candidate in candidates:
        if rule.match(candidate.similarity, candidate.contained):
            wanted.setdefault(candidate.id, Need(candidate.home, candidate.similarity, candidate.contained))
    return wanted
