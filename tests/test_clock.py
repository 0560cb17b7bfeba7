"""The clock and event time: what each kind of date gives, and a file's own clock."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from stream_lsh.core.clock import FileClock, clock_of_record, event_time
from stream_lsh.core.dates import DateReading, read_date

HOUR, DAY = 3600.0, 86400.0
NOW = read_date("2026-11-24T10:00:00Z").seconds
NOW_MS = int(NOW * 1000)


def at(seconds: float | None) -> DateReading:
    return DateReading(seconds)


def times(date: DateReading, clock_ms: int | None = NOW_MS, window: float | None = 3 * DAY):
    result = event_time(date, clock_ms, window=window, max_future=DAY)
    return result.seconds, result.date_ignored


@pytest.mark.parametrize("date, expected", [
    (at(NOW - HOUR), (NOW - HOUR, None)),  # published an hour before it was read
    (at(NOW + 5 * HOUR), (NOW + 5 * HOUR, None)),  # an embargo or a time-zone slip: within a day
    (at(NOW - 2 * DAY), (NOW - 2 * DAY, None)),  # late, but inside the window
    (at(NOW - 4 * DAY), (NOW, "late")),  # arrived after its window: kept from its arrival
    (at(NOW + 2 * DAY), (NOW, "future")),
    (read_date("2099-01-01"), (NOW, "future")),
    (read_date("1970-01-01T00:00:00Z"), (NOW, "before_1990")),
    (read_date("0001-01-01"), (NOW, "before_1990")),
    (read_date("not a date"), (NOW, "unreadable")),
    (DateReading(None), (NOW, None)),  # no date: the clock, not flagged
])
def test_event_time_of_each_kind_of_date(date, expected):
    assert times(date) == expected


def test_without_a_window_nothing_is_late():
    assert times(at(NOW - 400 * DAY), window=None) == (NOW - 400 * DAY, None)


def test_without_a_clock_only_1990_can_be_checked():
    assert times(at(NOW + 400 * DAY), clock_ms=None) == (NOW + 400 * DAY, None)
    assert times(read_date("0001-01-01"), clock_ms=None) == (None, "before_1990")
    assert times(DateReading(None), clock_ms=None) == (None, None)


def test_record_timestamps_before_1990_mean_no_clock():
    assert clock_of_record(NOW_MS) == NOW_MS
    assert clock_of_record(17) is None and clock_of_record(-1) is None and clock_of_record(None) is None


def readings(clock: FileClock, dates: list[float | None]) -> list[int | None]:
    return [clock.tick(at(date)) for date in dates]


def test_a_sorted_file_reads_its_dates_one_millisecond_apart_at_least():
    clock = FileClock(max_future=DAY)
    got = readings(clock, [None, NOW, NOW + 60, None, NOW + 60, NOW + 120])
    assert got == [None, None, NOW_MS + 60_000, NOW_MS + 60_001, NOW_MS + 60_002, NOW_MS + 120_000]


def test_one_wrong_year_never_moves_the_clock_even_on_the_first_line():
    for dates in ([NOW + 73 * 365 * DAY, NOW, NOW + 1, NOW + 2], [NOW, NOW + 1, NOW + 73 * 365 * DAY, NOW + 2]):
        clock = FileClock(max_future=DAY)
        got = readings(clock, dates)
        assert max(c for c in got if c is not None) < NOW_MS + 10_000


def test_a_gap_in_the_file_moves_the_clock_at_its_second_page():
    clock = FileClock(max_future=DAY)
    got = readings(clock, [NOW, NOW + 60, NOW + 3 * DAY, NOW + 3 * DAY + 60, NOW + 3 * DAY + 120])
    assert got[2] == NOW_MS + 60_001  # the first page after the gap could be a typo
    assert got[3] == NOW_MS + int((3 * DAY + 60) * 1000) and got[4] == NOW_MS + int((3 * DAY + 120) * 1000)


def test_a_sparse_file_keeps_its_clock_moving():
    clock = FileClock(max_future=DAY)
    got = readings(clock, [NOW + i * 2 * DAY for i in range(6)])
    assert got[-1] == NOW_MS + int(8 * DAY * 1000)  # one page behind, never stuck


def test_now_fixes_the_clock_whatever_the_dates():
    clock = FileClock(max_future=DAY, now_ms=NOW_MS)
    assert readings(clock, [NOW + 5 * DAY, None, NOW - DAY]) == [NOW_MS + 1, NOW_MS + 2, NOW_MS + 3]


def test_a_saved_clock_continues():
    first = FileClock(max_future=DAY)
    readings(first, [NOW, NOW + 1, NOW + 3 * DAY])  # ends with an unconfirmed jump
    second = FileClock(max_future=DAY)
    second.load_state(first.state())
    assert second.tick(at(NOW + 3 * DAY + 1)) == NOW_MS + int((3 * DAY + 1) * 1000)


@given(st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=4e9)), max_size=60))
def test_a_files_clock_never_goes_back_and_ticks_every_line_once_started(dates):
    clock = FileClock(max_future=DAY)
    got = readings(clock, dates)
    started = [c for c in got if c is not None]
    assert started == got[len(got) - len(started):]  # once it has started it stays started
    assert all(b > a for a, b in zip(started, started[1:]))
