"""Which input partitions are quiet, for clock order (:mod:`stream_lsh.pipeline.order`).

Band partitions apply probes once every input partition's watermark has passed them. A partition
that gets no records sends no watermark, so it would hold every page back; the worker that owns it
declares it idle instead, after ``STREAM_LSH_IDLE_MS`` without a record, and only once it has
taken every record the broker had for it (a partition whose records are still on their way, as
at start-up, is not idle: declared, its records would come in below what others have released).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet

__all__ = ["QuietInputs"]


class QuietInputs:
    """Which input partitions of this worker have been quiet for ``idle`` seconds.

    A partition is declared idle once per quiet spell: when it was assigned or last heard from
    more than ``idle`` seconds ago. Hearing from it again ends the spell (its records carry marks
    again). The caller declares a quiet partition (:meth:`declare`) once it knows the partition
    has nothing left on the broker: :meth:`taken` says how far this worker's agent has read it.
    """

    def __init__(self, idle: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self.clock = clock
        self.last: dict[int, float] = {}
        self.next_offsets: dict[int, int] = {}
        self.declared: set[int] = set()
        self.claimed: dict[int, int] = {}  # a declared partition: the offset its claim covers

    def heard(
        self,
        offsets: Mapping[int, int],
        idle_after: AbstractSet[int] = frozenset(),
        covered: Mapping[int, int] | None = None,
    ) -> None:
        """A batch took records up to ``offsets`` (partition -> last offset); the partitions in
        ``idle_after`` were declared idle with their marks (what ingest actually sent, see
        :meth:`~stream_lsh.pipeline.ingest.Ingest.idle_after`), so the timer never takes a
        partition for declared that nobody declared; ``covered``: the offsets their claims cover."""
        now = self.clock()
        for partition, offset in offsets.items():
            self.last[partition] = now
            self.next_offsets[partition] = max(self.next_offsets.get(partition, 0), offset + 1)
            self.claimed.pop(partition, None)
        partitions = set(offsets)
        self.declared = (self.declared - partitions) | (idle_after & partitions)
        for partition in idle_after & partitions:
            if covered is not None and partition in covered:
                self.claimed[partition] = covered[partition]

    def restart(self, partitions: Iterable[int]) -> None:
        """The quiet spells of ``partitions`` start again from now (a batch's sends are done).
        Partitions forgotten meanwhile (a revocation) stay forgotten."""
        now = self.clock()
        for partition in partitions:
            if partition in self.last:
                self.last[partition] = now

    def quiet(self, assigned: set[int]) -> list[int]:
        """The assigned partitions quiet for ``idle`` seconds and not declared idle since."""
        now = self.clock()
        for partition in assigned - self.last.keys():
            self.last[partition] = now  # newly assigned: quiet from now on
        return sorted(p for p in assigned - self.declared if now - self.last[p] >= self.idle)

    def quiet_for(self, partition: int) -> float:
        """Seconds since the partition was last heard from (or assigned)."""
        return self.clock() - self.last.get(partition, self.clock())

    def taken(self, partition: int) -> int | None:
        """The offset after the last record taken from the partition (None: none since it was assigned)."""
        return self.next_offsets.get(partition)

    def declare(self, partition: int, covered: int | None = None) -> None:
        self.declared.add(partition)
        if covered is None:
            self.claimed.pop(partition, None)
        else:
            self.claimed[partition] = covered

    def outgrown(self, assigned: set[int], highwater: Callable[[int], int | None]) -> list[int]:
        """Declared partitions quiet for ``idle`` seconds whose high watermark has passed the
        offset their claim covers: a claim the site partitions take as belied once another
        worker sees the new end (:class:`~stream_lsh.pipeline.order.InputMarks`). Records past it
        come in a batch, with a claim of their own; a transactional producer's commit marker
        never does, so the timer claims the partition again, or it would hold every page back."""
        now = self.clock()
        found = []
        for partition in sorted(assigned & self.declared):
            covered, top = self.claimed.get(partition), highwater(partition)
            if covered is not None and top is not None and top > covered:
                if now - self.last.get(partition, now) >= self.idle:
                    found.append(partition)
        return found

    def undeclare(self, partitions: set[int]) -> None:
        """Their claims were withdrawn (records came for them): the timer may declare them again
        once they are quiet with everything taken."""
        self.declared -= partitions
        for partition in partitions:
            self.claimed.pop(partition, None)

    def forget(self) -> None:
        """After a rebalance every partition starts a new spell (and is declared again if quiet)."""
        self.last.clear()
        self.next_offsets.clear()
        self.declared.clear()
        self.claimed.clear()
