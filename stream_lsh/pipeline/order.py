"""Watermarks, so that the decide partition applies pages in (clock, id) order, as batch does.

Why: pages reach the decide partition from several site partitions, in an order that depends on
which worker ran first. Applied as they come, a later copy could found a cluster before the
earlier copy arrived. Held until nothing earlier can still come, and applied in ``(clock, id)``
order (the clock: the record's timestamp, :mod:`stream_lsh.core.clock`), they meet the engine in
batch's order, whatever the interleaving upstream. A file fed with ``stream-lsh produce`` carries
the file's clock, one millisecond apart per line, so that order is the file's.

How the decide partition knows that nothing earlier is still coming: watermarks, over two hops.

* ingest, after each batch, for every input partition in it: ``{"k": "wm", "src": partition,
  "w": [clock, id]}`` to every site partition, the largest (clock, id) of the batch's records from
  that partition, *every* record counted (a page with or without a date, a retraction, a record
  that became a dead letter: each one moves its partition on). ``"idle": true`` when the batch
  held the partition's last record as of the consumer's latest fetch (*caught up*), and ``"w":
  null`` when a timer finds the partition quiet: the partition holds nothing back until its next
  mark. An idle claim carries the consumer group generation its worker made it in (``"g"``), and
  the offset below which its worker had taken every record (``"o"``: the high watermark of the
  fetch it was made from). A worker's marks carry the end offsets of the input partitions *other*
  workers read (``"e"``), asked after its batch was fetched: a claim below one of them is belied
  (records were stored after the claim's fetch, maybe older than the marks that would pass them),
  and the partition holds the release point at its last mark until its owner reads on.
  ``{"k": "owner", "src": partition}`` when a worker gives the partition up (its idle claim is
  withdrawn); and at every assignment, a worker sends ``{"k": "owner", "src": p, "before": g}``
  for *every* input partition p, g its new generation: claims made in an earlier generation are
  withdrawn, those its owner has made since the rebalance stand. Claimed idle and then left unread
  (its owner stopped or crashed, a successor still starting, or the group still counting the
  crashed worker as the owner until its session times out), the partition would let the others
  release past the records that pile up in it meanwhile, and those would come late; withdrawn, it
  holds the release point at its last mark until its owner reads it;
* a site partition (:class:`InputMarks`) forwards, after its batch's pages, its *release point*
  to the decide partition: the smallest mark of its input partitions that are not idle, less the
  lateness, at a whole millisecond (a partition's next record may have the same clock and a smaller
  id); or, when every input partition is idle, the largest mark (everything received);
* the decide partition (:class:`ReleasePoints`) applies, in (clock, id) order, every page and
  retraction at or below the smallest release point of all site partitions.

A source that has never spoken holds everything back. A page at or below what the decide
partition has released already is *late* and is applied on arrival: a partition whose record timestamps go
backwards by more than the lateness, or one that resumes after being declared idle with a record
older than what others released meanwhile. Queries are never held.

Marks are ``(clock, id)`` pairs, lists on the wire, ``None`` for "idle".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["InputMarks", "Mark", "ReleasePoints", "decode_mark", "encode_mark"]

Mark = tuple[int, str]


def encode_mark(mark: Mark | None) -> list[Any] | None:
    return None if mark is None else [mark[0], mark[1]]


def decode_mark(value: list[Any] | None) -> Mark | None:
    return None if value is None else (value[0], value[1])


class InputMarks:
    """At a site partition: what each input partition said last, its mark or that it is idle.

    An idle claim is only as good as the fetch it was made from: records stored in the partition
    after its worker's fetch are not covered by it. So a claim carries the offset below which its
    worker had taken every record (``taken``), and the marks of other workers carry the end offsets
    the broker gave them for the partitions they do not read, fetched after the records they mark
    (``ends``). A claim below such an end is *belied*: the partition holds the release point at
    its last mark until its owner reads on. Why: a steady feed keeps every partition caught up
    after each batch, so every mark is an idle claim; a page stored in one worker's partition a
    few milliseconds before a later page in another's came late whenever the other worker's mark
    reached the site partition first (136 pages of 872 at the site partitions, and up to 24 at
    the decide partition, in ``../shared/repro/rebalance-handover``).

    Args:
        sources: the number of input partitions.
        lateness_ms: how far one input partition's record timestamps may go backwards.
    """

    def __init__(self, sources: int, lateness_ms: int = 0) -> None:
        self.sources = sources
        self.lateness_ms = lateness_ms
        self.last: dict[int, Mark] = {}
        self.idle: set[int] = set()
        self.claimed_in: dict[int, int] = {}  # the group generation of an idle claim, when known
        self.taken: dict[int, int] = {}  # the offset an idle claim covers records below, when known
        self.ends: dict[int, int] = {}  # the largest end offset other workers saw, per partition

    def update(
        self,
        source: int,
        wire: list[Any] | None,
        idle_after: bool = False,
        generation: int | None = None,
        taken: int | None = None,
        ends: Iterable[tuple[int, int]] = (),
    ) -> None:
        """``wire`` None: the source is idle. ``idle_after``: it sent its mark and is idle after it
        (caught up), until its next mark. ``generation``: the group generation of an idle claim;
        ``taken``: the offset below which the claim's worker took every record; ``ends``: end
        offsets of other partitions seen after the records this mark covers."""
        for other, end in ends:
            self.ends[other] = max(self.ends.get(other, end), end)
        mark = decode_mark(wire)
        if mark is None or idle_after:
            self.idle.add(source)
            if generation is None:
                self.claimed_in.pop(source, None)
            else:
                self.claimed_in[source] = generation
            if taken is not None:
                if taken < self.taken.get(source, taken):
                    self.ends.pop(source, None)  # offsets went back: the topic was made anew
                self.taken[source] = taken
            if mark is None:
                return
        else:
            self.idle.discard(source)
        old = self.last.get(source)
        self.last[source] = mark if old is None else max(old, mark)

    def withdraw(self, source: int, before: int | None = None) -> None:
        """The source may have changed hands (a rebalance, a restart): an idle claim made by a
        previous owner no longer holds, since nobody may be reading its new records. With
        ``before``, a group generation, only a claim made in an earlier one (or an unknown one) is
        withdrawn. Withdrawn, the source holds the release point back at its last mark (or,
        without one, holds everything) until its owner speaks."""
        claimed = self.claimed_in.get(source)
        if before is not None and claimed is not None and claimed >= before:
            return
        self.idle.discard(source)

    def idle_now(self) -> set[int]:
        """The sources whose idle claim stands: claimed, and not belied by an end offset past it."""
        return {
            source
            for source in self.idle
            if source not in self.taken or self.ends.get(source, 0) <= self.taken[source]
        }

    def release_point(self) -> Mark | None:
        """Everything at or below it has been received from every source; None while a source
        has said nothing (or none has sent a mark)."""
        return self._release_point(self.idle_now())

    def _release_point(self, idle: set[int]) -> Mark | None:
        """:meth:`release_point` with the standing claims known (:meth:`idle_now`)."""
        if len(self.last.keys() | idle) < self.sources or not self.last:
            return None
        active = [mark for source, mark in self.last.items() if source not in idle]
        if not active:
            return max(self.last.values())
        return (min(active)[0] - self.lateness_ms, "")

    def holding_back(self) -> list[int]:
        """The sources that set the release point (for reports of pages that wait)."""
        idle = self.idle_now()
        point = self._release_point(idle)
        if point is None:
            return sorted(set(range(self.sources)) - self.last.keys() - idle)
        return sorted(
            source
            for source, mark in self.last.items()
            if source not in idle and mark[0] - self.lateness_ms == point[0]
        )

    def state(self) -> list[list[Any]]:
        sources = self.last.keys() | self.idle | self.taken.keys() | self.ends.keys()
        return [
            [
                source,
                encode_mark(self.last.get(source)),
                source in self.idle,
                self.claimed_in.get(source),
                self.taken.get(source),
                self.ends.get(source),
            ]
            for source in sorted(sources)
        ]

    def load(self, state: Iterable[list[Any]]) -> None:
        rows = [list(row) + [None] * (6 - len(row)) for row in state]  # rows saved before offsets: four
        self.last = {row[0]: decode_mark(row[1]) for row in rows if row[1] is not None}  # type: ignore[misc]
        self.idle = {row[0] for row in rows if row[2]}
        self.claimed_in = {row[0]: row[3] for row in rows if row[2] and row[3] is not None}
        self.taken = {row[0]: row[4] for row in rows if row[4] is not None}
        self.ends = {row[0]: row[5] for row in rows if row[5] is not None}


class ReleasePoints:
    """At the decide partition: the release point each site partition forwarded last."""

    def __init__(self, sources: int) -> None:
        self.sources = sources
        self.points: dict[int, Mark] = {}

    def update(self, source: int, wire: list[Any] | None) -> None:
        """``wire`` None: the site partition has no release point yet (an input partition has not
        spoken); it said so to name who holds it back."""
        mark = decode_mark(wire)
        if mark is None:
            return
        old = self.points.get(source)
        self.points[source] = mark if old is None else max(old, mark)

    def low(self) -> Mark | None:
        """The smallest release point; None while a site partition has said nothing."""
        if len(self.points) < self.sources:
            return None
        return min(self.points.values())

    def holding_back(self) -> list[int]:
        """The site partitions at the smallest release point, or silent."""
        low = self.low()
        if low is None:
            return sorted(set(range(self.sources)) - self.points.keys())
        return sorted(source for source, point in self.points.items() if point == low)

    def state(self) -> list[list[Any]]:
        return [[source, encode_mark(point)] for source, point in sorted(self.points.items())]

    def load(self, state: Iterable[list[Any]]) -> None:
        self.points = {source: decode_mark(point) for source, point in state}  # type: ignore[misc]
