"""What the stages tell operators, apart from their messages: events as they happen, and gauges.

The stages are pure; they only *say* what happened. A :class:`Tally` rides on the :class:`.Outbox`
of one ``handle`` call and is counted by the stream's metrics once that outbox has been sent. A
batch replayed from the journal (a restart rebuilding its state) discards its outbox, tally and
all, so nothing is counted twice for one handling; a batch handled again after a crash is counted
again, as its outputs are sent again.

:class:`Gauges` is what a stage partition holds *now*, read when Prometheus scrapes the worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

__all__ = ["DecisionTiming", "Gauged", "Gauges", "Tally"]


class DecisionTiming(NamedTuple):
    """When a decided page entered the stream: its input record's timestamp (ms; None when the
    home never heard it, e.g. after a restart rebuilt its state) and its event time (seconds)."""

    received_ms: int | None
    event_time: float | None


@dataclass
class Tally:
    """Events of one ``handle`` call; every field adds up across calls (:meth:`add`)."""

    pages: int = 0  # ingest: input records read as pages
    flattened: int = 0  # ingest: ... whose text held a whole article on one line (.core.text.flattened)
    retractions: int = 0  # ingest: retractions read
    queries: int = 0  # ingest: queries read
    # decide: pages and retractions applied at once, behind the release point, in the order applied
    late_ids: list[str] = field(default_factory=list)
    verified: int = 0  # bands: bucket collisions whose resemblance makes them a match
    rejected: int = 0  # bands: ... below it (LSH false positives)
    evicted: int = 0  # bands: ids pushed out of a full bucket by the bucket cap
    blocks_dropped: list[int] = field(default_factory=list)  # sites: boilerplate blocks dropped, per page
    decided: list[DecisionTiming] = field(default_factory=list)  # decide: one per fresh decision

    def add(self, other: Tally) -> None:
        self.pages += other.pages
        self.flattened += other.flattened
        self.retractions += other.retractions
        self.queries += other.queries
        self.late_ids.extend(other.late_ids)
        self.verified += other.verified
        self.rejected += other.rejected
        self.evicted += other.evicted
        self.blocks_dropped.extend(other.blocks_dropped)
        self.decided.extend(other.decided)


@dataclass(frozen=True)
class Gauges:
    """What one stage partition holds now.

    ``window_pages``: the decide partition: pages in the window. ``waiting``: pages (and
    retractions) held for the release point. ``oldest_wait_s``: how long the oldest of those
    has waited, in seconds (None when none waits). ``boilerplate_blocks``: site partitions: blocks learnt.
    ``alerts_frontier_ms``: the decide partition: how far every decision is applied to its
    cluster's spread, so its alerts are out, as a record clock: every one before it, and, when
    it ends in .5, those at its whole millisecond up to some page too (None: not known yet, or no
    alerts). Fed by ``stream-lsh produce`` (one record per millisecond), ``> t`` means: every
    record up to the one at ``t`` has its alerts out.
    """

    window_pages: int = 0
    waiting: int = 0
    oldest_wait_s: float | None = None
    boilerplate_blocks: int | None = None
    alerts_frontier_ms: float | None = None


class Gauged(Protocol):
    """A stage partition's state machine, as the metrics read it."""

    def gauges(self) -> Gauges: ...
