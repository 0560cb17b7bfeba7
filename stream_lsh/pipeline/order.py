"""Event-time watermarks, for applying probes at the band partitions in (event time, id) order.

Why: a band partition applies probes in the order they reach it. When a later copy (larger
``(event time, id)``) is applied first and decided before the earlier copy is even registered, it
founds the cluster, and a page that batch would have joined to the earlier copy may found a second
one. If instead every band partition applies the probes it holds in ``(event time, id)`` order, a
later page always finds the earlier ones in its buckets (never the reverse), and the gather's
existing rules (registration before probe; an earlier candidate in flight is waited for) give
batch's decisions for the same candidates, whatever the interleaving of partitions upstream.

How a band partition knows that nothing earlier is still coming: watermarks, two hops only.

* ingest, per input partition, after each batch: ``{"k": "wm", "src": input partition, "w": mark}``
  to every site partition; ``mark`` is the largest ``(event time, id)`` of the batch's pages from
  that partition (minus ``lateness`` seconds, if input partitions are not sorted by event time), or
  None when the partition is idle (quiet: a timer sends it). When the batch took the partition's
  last record (``"idle": true``, *caught up*: nothing more was on the broker when it was fetched),
  the partition is idle after its mark: a live feed, where every partition is caught up at every
  batch, then waits for no partition's next page, and a backfill, where none is, keeps the order;
* a site partition forwards the minimum over its input partitions that are not idle to every band
  partition, after the probes of the batch (one Kafka message per band partition: the mark rides
  with the probes); when all are idle, the largest mark it has seen;
* a band partition holds each probe until the minimum over all site partitions passes it, then
  applies what it holds in order. Queries, undated pages and *late* probes (at or below what was
  released already: late input, redeliveries) are applied at once, under the old rules.

A source that has never spoken holds everything back; an idle source holds nothing back until it
sends a mark again. A receiver never applies a probe at or below what it has released already:
pages that come later than that (input out of event-time order by more than ``lateness``, a
partition that resumes after being idle with older pages, redeliveries) are *late* and are applied
on arrival, under the arrival-order rules of the gather.

Marks are ``(event time, id)`` pairs, ``None`` on the wire for "idle"; in snapshots the time of
"everything" (infinity) is written as None too, since JSON has no infinity.
"""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["Marks", "INF_MARK", "encode_mark", "decode_mark", "mark_of"]

_INF = float("inf")
INF_MARK: tuple[float, str] = (_INF, "")
Mark = tuple[float, str]


def mark_of(event_time: float | None, page_id: str) -> Mark:
    return (event_time if event_time is not None else _INF, page_id)


def encode_mark(mark: Mark | None) -> list[Any] | None:
    if mark is None:
        return None
    return [None if mark[0] == _INF else mark[0], mark[1]]


def decode_mark(value: list[Any] | None) -> Mark | None:
    if value is None:
        return None
    return (_INF if value[0] is None else value[0], value[1])


class Marks:
    """What each of ``sources`` senders said last: its mark, or that it is idle.

    ``low`` is the smallest mark over the senders that are not idle: nothing at or below it can
    still come from them. An idle sender is left out; if every sender is idle, the largest mark
    seen stands (not infinity: a sender that resumes with newer pages must not find them late).
    """

    def __init__(self, sources: int) -> None:
        self.sources = sources
        self.last: dict[int, Mark] = {}
        self.idle: set[int] = set()

    def update(self, source: int, wire: list[Any] | None, idle_after: bool = False) -> None:
        """``wire`` None: the sender is idle. ``idle_after``: it sent its mark and is idle after it
        (caught up), until its next mark."""
        mark = decode_mark(wire)
        if mark is None:
            self.idle.add(source)
            return
        if idle_after:
            self.idle.add(source)
        else:
            self.idle.discard(source)
        old = self.last.get(source)
        self.last[source] = mark if old is None else max(old, mark)

    def low(self) -> Mark | None:
        """None while a sender has said nothing, or no sender has sent a mark."""
        if len(self.last.keys() | self.idle) < self.sources or not self.last:
            return None
        active = [mark for source, mark in self.last.items() if source not in self.idle]
        return min(active) if active else max(self.last.values())

    def state(self) -> list[list[Any]]:
        return [[source, encode_mark(self.last.get(source)), source in self.idle]
                for source in sorted(self.last.keys() | self.idle)]

    def load(self, state: Iterable[list[Any]]) -> None:
        self.last = {source: decode_mark(mark) for source, mark, _ in state if mark is not None}  # type: ignore[misc]
        self.idle = {source for source, _, idle in state if idle}
