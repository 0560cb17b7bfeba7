"""The clock, and the event time a page gets from its date and the clock.

Every page is read at some moment: its *clock*, in milliseconds since the epoch. In the stream it
is the Kafka record's timestamp (set by whoever produced the record, or by the broker); in a file
it is the file's own clock (:class:`FileClock`), which ``stream-lsh produce`` stamps on the records
it sends, so a file gets the same clocks in batch and in the stream. Nothing here reads the wall
clock: the same input gives the same decisions whatever day it is processed.

The clock orders pages (the first copy of a story is the first one received) and moves the
window (a page leaves the index when the clock passes its event time plus the window). A page's
*event time* is its date when that date is plausible for the clock, else the clock itself
(:func:`event_time`). So one page dated 2099 cannot empty the index: its date is ignored, and it
could never move the clock anyway.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from .dates import DateReading

__all__ = ["EARLIEST_DATE", "EventTime", "FileClock", "clock_of_record", "event_time"]

#: Dates before this are placeholders (0001-01-01, the Unix epoch's 1970-01-01), not news.
EARLIEST_DATE = 631_152_000.0  # 1990-01-01T00:00:00Z
#: Record timestamps before it mean "no clock" (``produce`` stamps a file's lines before the
#: file's first date this way: they keep their order, and no clock is made up for them).
_EARLIEST_CLOCK_MS = int(EARLIEST_DATE * 1000)

#: Why a date was not used (the ``date_ignored`` of a decision).
UNREADABLE, PLACEHOLDER, FUTURE, LATE = "unreadable", "before_1990", "future", "late"


@dataclass(frozen=True)
class EventTime:
    """A page's event time in POSIX seconds (None: no time at all, the page never expires), and
    why its date was ignored, if it was."""

    seconds: float | None
    date_ignored: str | None = None


def clock_of_record(timestamp_ms: int | None) -> int | None:
    """A record's timestamp as a clock reading; None when it means "no clock"."""
    if timestamp_ms is None or timestamp_ms < _EARLIEST_CLOCK_MS:
        return None
    return timestamp_ms


def event_time(
    date: DateReading, clock_ms: int | None, *, window: float | None, max_future: float
) -> EventTime:
    """The event time of a page with ``date`` read at ``clock_ms``.

    * a plausible date is the event time: not before 1990, not more than ``max_future`` seconds
      after the clock, and not older than the ``window`` when the page arrives;
    * otherwise the clock is (``date_ignored`` says why: ``unreadable``, ``before_1990``,
      ``future``, ``late``); a page without a date takes the clock too, and is not flagged;
    * without a clock (a file's lines before its first date) a date can only be checked against
      1990, and a page without one has no time.

    A late page (it came after its window had passed: a re-crawl, a replay with new timestamps)
    takes the clock so that it is kept for a window from its arrival and copies of it arriving
    later still find it.
    """
    clock = None if clock_ms is None else clock_ms / 1000.0
    if date.problem is not None:
        return EventTime(clock, UNREADABLE)
    moment = date.seconds
    if moment is None:
        return EventTime(clock)
    if moment < EARLIEST_DATE:
        return EventTime(clock, PLACEHOLDER)
    if clock is None:
        return EventTime(moment)
    if moment > clock + max_future:
        return EventTime(clock, FUTURE)
    if window is not None and moment < clock - window:
        return EventTime(clock, LATE)
    return EventTime(moment)


class FileClock:
    """The clock of a file of pages: when each line was, as far as the file can tell.

    A file records no arrival times, only dates, so its clock follows the dates: it is the newest
    date seen so far, plus one millisecond per line (lines keep their order, also in the stream).
    A date more than ``max_future`` seconds after the clock is a *jump*: the clock moves past it
    only when :data:`VOTES` of the last eight dated lines, from more than one site, are past it
    too, and then to the median of those, each site's dates counted as one vote (and on to this
    line's date, if that is within ``max_future``). One page dated 2099, two side by side, or one
    site that dates every page 2099, never moves it; a gap in the file (a quiet weekend) moves it
    within three pages. Before the file has shown that many dates it has no clock (None).

    Lines dated before the clock are no votes against a jump: a crawl fetches old pages (archive
    items, recrawls, a story's copy weeks later) among new ones, and their dates say nothing of
    when the crawl is. Asked for most of the eight, the clock of a crawl where most pages were old
    stayed days behind the new ones: on an outside set built blind (a three-day crawl, most pages
    published weeks before it), it stood at the 13th when the crawl was at the 18th, the pages of
    those days took that clock as their event time, and their copies fetched two days later found
    them gone from the 72-hour window (recall 0.73; 0.89 with three votes).

    With ``now_ms`` the clock starts there and ignores the dates ("every page was received
    now", ``--now``).
    """

    RECENT = 8  # dated lines that vote on a jump
    VOTES = 3  # ... of which this many, from two sites or more, make one

    def __init__(self, *, max_future: float, now_ms: int | None = None) -> None:
        if max_future < 0:
            raise ValueError(f"max_future must be >= 0 seconds, got {max_future}")
        self.max_future_ms = int(max_future * 1000)
        self.ms: int | None = now_ms
        self.fixed = now_ms is not None
        self.recent: deque[tuple[int, str]] = deque(
            maxlen=self.RECENT
        )  # (date, site) of the last dated lines
        self.first_site: str | None = None
        self.several_sites = False  # a file of one site lets that site move the clock alone

    def tick(self, date: DateReading, site: str = "") -> int | None:
        """The clock reading of the next line, whose date is ``date`` (of a page of ``site``)."""
        if self.ms is not None:
            self.ms += 1
        moment = date.seconds
        if not self.fixed and moment is not None and date.problem is None and moment >= EARLIEST_DATE:
            self._observe(int(moment * 1000), site)
        return self.ms

    def stamp(self, date: DateReading, ordinal: int, site: str = "") -> int:
        """The record timestamp for the next line (``stream-lsh produce``): its clock reading, or,
        before the file's clock starts, ``ordinal`` (the line's number, a "no clock" timestamp
        that keeps the lines in order)."""
        clock = self.tick(date, site)
        if clock is not None:
            return clock
        if not 0 <= ordinal < _EARLIEST_CLOCK_MS:
            raise ValueError(f"a line ordinal must be in [0, {_EARLIEST_CLOCK_MS}), got {ordinal}")
        return ordinal

    def _observe(self, date_ms: int, site: str) -> None:
        self.recent.append((date_ms, site))
        if self.first_site is None:
            self.first_site = site
        self.several_sites = self.several_sites or site != self.first_site
        if self.ms is not None and date_ms <= self.ms + self.max_future_ms:
            self.ms = max(self.ms, date_ms)
            return
        ahead = [(d, s) for d, s in self.recent if self.ms is None or d > self.ms + self.max_future_ms]
        by_site: dict[str, list[int]] = {}
        for d, s in ahead:
            by_site.setdefault(s, []).append(d)
        if len(ahead) >= self.VOTES and len(by_site) >= (2 if self.several_sites else 1):
            target = _lower_median([_lower_median(dates) for dates in by_site.values()])  # a site, one vote
            self.ms = target if self.ms is None else max(self.ms, target)
            if date_ms <= self.ms + self.max_future_ms:
                self.ms = max(self.ms, date_ms)

    def state(self) -> dict[str, Any]:
        return {
            "ms": self.ms,
            "recent": [list(item) for item in self.recent],
            "first_site": self.first_site,
            "several_sites": self.several_sites,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue a saved clock (``--state``); a fixed clock (``--now``) keeps the later of the two."""
        saved = state["ms"]
        if self.fixed:
            if saved is not None and (self.ms is None or saved > self.ms):
                self.ms = saved
            return
        self.ms = saved
        self.recent = deque((tuple(item) for item in state["recent"]), maxlen=self.RECENT)
        self.first_site, self.several_sites = state["first_site"], state["several_sites"]


def _lower_median(values: list[int]) -> int:
    return sorted(values)[(len(values) - 1) // 2]
