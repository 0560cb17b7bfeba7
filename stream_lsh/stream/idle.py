"""Which input partitions are quiet, for event-time order (:mod:`stream_lsh.pipeline.order`).

Band partitions apply probes once every input partition's watermark has passed them. A partition
that gets no pages sends no watermark, so it would hold every page back; the worker that owns it
declares it idle instead, after ``STREAM_LSH_IDLE_MS`` without a record.
"""

from __future__ import annotations

import time
from typing import AbstractSet, Callable

__all__ = ["QuietInputs"]


class QuietInputs:
    """Which input partitions of this worker have been quiet for ``idle`` seconds (event-time order).

    A partition is declared idle once per quiet spell: when it was assigned or last heard from
    more than ``idle`` seconds ago. Hearing from it again ends the spell (its pages carry marks
    again). Declaring a partition idle that still has records the consumer has not delivered yet
    costs no page: those records come as *late* and are applied in arrival order.
    """

    def __init__(self, idle: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle = idle
        self.clock = clock
        self.last: dict[int, float] = {}
        self.declared: set[int] = set()

    def heard(self, partitions: set[int], caught_up: AbstractSet[int] = frozenset()) -> None:
        """Records from ``partitions``; those in ``caught_up`` said with their marks that they are
        idle after them, so the timer has nothing to declare for them."""
        now = self.clock()
        for partition in partitions:
            self.last[partition] = now
        self.declared = (self.declared - partitions) | (caught_up & partitions)

    def newly_idle(self, assigned: set[int]) -> list[int]:
        now = self.clock()
        for partition in assigned - self.last.keys():
            self.last[partition] = now  # newly assigned: quiet from now on
        found = sorted(p for p in assigned - self.declared if now - self.last[p] >= self.idle)
        self.declared.update(found)
        return found

    def forget(self) -> None:
        """After a rebalance every partition starts a new spell (and is declared again if quiet)."""
        self.last.clear()
        self.declared.clear()
