"""Waits that have lasted too long: what a stage reports about a page whose decision is stuck.

Every wait in the dataflow has something that ends it (docs/architecture.md, "Liveness"). This is
the guard for when something does not: the band partitions and the homes keep, outside their
state, when each wait began, and :meth:`stalled` returns the ones older than a bound whose cause
has not moved for that long. A backfill, where pages wait for lagging partitions that are making
progress, reports nothing; a wait nothing will end is reported once, with its page and its cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from ..core.clock import clock_of_record

__all__ = ["Wait", "clock_text"]


def clock_text(clock_ms: int) -> str:
    """A record timestamp as operators read it: ISO 8601, UTC, milliseconds; "none" for one that
    means no clock (a file's lines before its first date, see stream_lsh.core.clock)."""
    if clock_of_record(clock_ms) is None:
        return "none"
    return datetime.fromtimestamp(clock_ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Wait:
    """A page undecided for longer than the alert bound, where it waits and for what."""

    stage: str
    partition: int
    page_id: str
    clock_ms: int
    seconds: float
    waits_for: str

    def describe(self) -> str:
        return (
            f"page {self.page_id!r} (clock {clock_text(self.clock_ms)}) undecided for {self.seconds:.1f} s: "
            f"{self.stage} partition {self.partition} waits for {self.waits_for}"
        )
