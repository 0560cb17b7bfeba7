"""Records held until a release point passes them, then given back in (clock, id) order.

Two stages hold records for a watermark (:mod:`.order`): a site partition, so that its boilerplate
learner reads each site's pages in batch's order whatever the interleaving of the input
partitions, and the decide partition, so that the engine does. Both follow one rule, written
here:

* a record above what was released already waits; one at or below it is *late* and goes on at
  once (a partition whose timestamps go backwards by more than the lateness, or one that resumes
  after being declared idle with an older record);
* when the release point moves, everything at or below it comes back in ``(clock, id, arrival)``
  order;
* the same delivery (same page, clock and body) held twice is held once: a record read again
  after a crash, or resent by an upstream partition that restarts, before the first was released.

It also remembers, outside the state, when each record began to wait and when the release point
last moved, for the reports of stuck waits (:mod:`.waits`): a backfill, whose release point moves,
reports nothing.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from .order import Mark, decode_mark, encode_mark
from .waits import clock_text

__all__ = ["Holdable", "Holding"]


class Holdable(Protocol):
    """A record that can wait for a release point: it has an id, a clock and a wire form."""

    @property
    def id(self) -> str: ...

    @property
    def clock(self) -> int: ...

    def to_wire(self) -> dict[str, Any]: ...


H = TypeVar("H", bound=Holdable)


class Holding(Generic[H]):
    """The records one stage partition holds for its release point (see the module doc).

    Args:
        delivery: a held record's delivery key (records with equal keys are held once), or None
            for a record that is never held twice (a retraction).
        clock: seconds, for how long records have waited.
    """

    def __init__(
        self,
        delivery: Callable[[H], tuple[object, ...] | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._delivery = delivery
        self._monotonic = clock
        self.released: Mark | None = None
        self.late = 0
        self._heap: list[tuple[int, str, int, H]] = []
        self._keys: set[tuple[object, ...]] = set()
        self._since: dict[int, float] = {}
        self._sequence = 0
        self._moved_at = clock()
        self._stuck_reported = False
        # held records added (the record) and released (None) since the caller last took them,
        # by sequence number; None unless asked for (see track_changes)
        self._changes: dict[int, H | None] | None = None

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[H]:
        """The held records, in the order they will be released."""
        return (record for _, _, _, record in sorted(self._heap, key=lambda item: item[:3]))

    def waits(self, record: H) -> bool:
        """Whether ``record`` waits for the release point; if not, it is late, and counted."""
        if self.released is None or (record.clock, record.id) > self.released:
            return True
        self.late += 1
        return False

    def hold(self, record: H) -> None:
        key = self._delivery(record)
        if key is not None:
            if key in self._keys:
                return  # a resend of a record held already
            self._keys.add(key)
        self._sequence += 1
        self._push(record, self._sequence)

    def _push(self, record: H, sequence: int) -> None:
        if not self._heap:
            self._moved()
        self._since[sequence] = self._monotonic()
        heapq.heappush(self._heap, (record.clock, record.id, sequence, record))
        if self._changes is not None:
            self._changes[sequence] = record

    def release(self, point: Mark) -> list[H] | None:
        """Everything held at or below ``point``, in order; None when ``point`` does not move
        past what was released already."""
        if self.released is not None and point <= self.released:
            return None
        self.released = point
        self._moved()
        ready: list[H] = []
        heap = self._heap
        while heap and (heap[0][0], heap[0][1]) <= point:
            _, _, sequence, record = heapq.heappop(heap)
            self._since.pop(sequence, None)
            if self._changes is not None:  # held and released between two takes: no row at all
                if self._changes.get(sequence) is not None:
                    del self._changes[sequence]
                else:
                    self._changes[sequence] = None
            key = self._delivery(record)
            if key is not None:
                self._keys.discard(key)
            ready.append(record)
        return ready

    def longest_wait(self) -> float | None:
        """Seconds the longest-waiting record has waited; None when none waits."""
        first = next(iter(self._since.values()), None)
        return None if first is None else max(0.0, self._monotonic() - first)

    def stuck(self, bound: float) -> tuple[int, str, float] | None:
        """The first record to be released, its (clock, id) and the seconds the release point has
        stood still, once: when that is over ``bound`` seconds while records wait."""
        waited = self._monotonic() - self._moved_at
        if not self._heap or self._stuck_reported or waited <= bound:
            return None
        self._stuck_reported = True
        clock, record_id, _, _ = self._heap[0]
        return clock, record_id, waited

    def waiting_text(self) -> str:
        """What a stuck wait waits for, as its report begins it (the holder adds who holds it)."""
        released = "nothing yet" if self.released is None else f"clock {clock_text(self.released[0])}"
        return f"the watermark: {len(self)} pages held, released up to {released}"

    def state(self) -> dict[str, Any]:
        """What the stage's snapshot keeps of it: the release point, the held records, the count
        of late ones."""
        return {
            "released": encode_mark(self.released),
            "held": [record.to_wire() for record in self],
            "late": self.late,
        }

    def load(self, state: dict[str, Any], decode: Callable[[dict[str, Any]], H]) -> None:
        """Load :meth:`state`; ``decode`` turns a held record's wire form back into the record."""
        self.clear()
        self.released = decode_mark(state["released"])
        for wire in state["held"]:
            self.hold(decode(wire))
        self.late = state["late"]

    # -- kept as rows, one per held record ------------------------------------------------------
    def track_changes(self) -> None:
        """From now on, account for every record held and released (:meth:`take_changes`)."""
        self._changes = {}

    def take_changes(self) -> list[tuple[int, H | None]]:
        """Records held (the record) and released (None) since the last call, by sequence number."""
        if self._changes is None:
            raise ValueError("call track_changes() first")
        changes, self._changes = sorted(self._changes.items(), key=lambda item: item[0]), {}
        return changes

    def marks(self) -> dict[str, Any]:
        """What a store of rows keeps beside the held records: the release point, the count of late
        records, the last sequence number."""
        return {"released": encode_mark(self.released), "late": self.late, "sequence": self._sequence}

    def load_rows(self, marks: dict[str, Any], held: list[tuple[int, H]]) -> None:
        """Load :meth:`marks` and the held records, each under its sequence number."""
        self.clear()
        self.released = decode_mark(marks["released"])
        self.late = marks["late"]
        self._sequence = marks["sequence"]
        for sequence, record in held:
            key = self._delivery(record)
            if key is not None:
                self._keys.add(key)
            self._push(record, sequence)
        if self._changes is not None:
            self._changes = {}

    def clear(self) -> None:
        self._heap, self._keys, self._since = [], set(), {}
        self._moved()

    def _moved(self) -> None:
        self._moved_at = self._monotonic()
        self._stuck_reported = False
