"""The clock and event time: what each kind of date gives, and a file's own clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    "date, expected",
    [
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
    ],
)
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


def readings(clock: FileClock, dates: list[float | None], sites: list[str] | None = None) -> list[int | None]:
    sites = sites or [f"site{i % 3}" for i in range(len(dates))]
    return [clock.tick(at(date), site) for date, site in zip(dates, sites)]


def ms(seconds: float) -> int:
    return int(seconds * 1000)


def test_a_sorted_file_starts_its_clock_once_three_dates_of_two_sites_agree_then_follows_them():
    clock = FileClock(max_future=DAY)
    got = readings(clock, [NOW + 60 * i for i in range(3)] + [None, NOW + 300, NOW + 300])
    assert got[:2] == [None] * 2  # two dates could both be wrong
    assert got[2:] == [ms(NOW + 120), ms(NOW + 120) + 1, ms(NOW + 300), ms(NOW + 300) + 1]


def steady(clock: FileClock, lines: int = 10) -> None:
    readings(clock, [NOW + i for i in range(lines)])


def test_no_wrong_year_moves_the_clock():
    cases = {
        "one page dated 2099": ([NOW + 73 * 365 * DAY], ["a"]),
        "two of them side by side, from two sites": ([NOW + 73 * 365 * DAY] * 2, ["a", "b"]),
        "a site that dates every page 2099": (
            [NOW + 73 * 365 * DAY, NOW + 20, NOW + 73 * 365 * DAY, NOW + 21] * 6,
            ["bad", "a", "bad", "b"] * 6,
        ),
        "a run of them from one site": ([NOW + 73 * 365 * DAY] * 8, ["bad"] * 8),
    }
    for name, (dates, sites) in cases.items():
        clock = FileClock(max_future=DAY)
        steady(clock)
        readings(clock, dates, sites)
        assert clock.ms is not None and clock.ms < ms(NOW + DAY), name


def test_the_first_dates_of_a_file_can_be_wrong_too():
    for dates, sites in (
        ([NOW + 73 * 365 * DAY, NOW, NOW + 1, NOW + 2, NOW + 3, NOW + 4], None),
        (
            [NOW + 73 * 365 * DAY, NOW, NOW + 73 * 365 * DAY, NOW + 1, NOW + 73 * 365 * DAY],
            ["bad", "a", "bad", "a", "bad"],
        ),
    ):  # a site dating everything 2099 starts the file
        clock = FileClock(max_future=DAY)
        readings(clock, dates, sites)
        assert clock.ms is not None and clock.ms < ms(NOW + DAY), dates


def test_a_gap_in_the_file_moves_the_clock_within_a_few_pages():
    clock = FileClock(max_future=DAY)
    steady(clock)
    after = [NOW + 3 * DAY + 60 * i for i in range(4)]
    got = readings(clock, after)
    assert all(c < ms(NOW + DAY) for c in got[:2])  # the first ones after the gap could be typos
    assert got[2] == ms(NOW + 3 * DAY + 120) and got[3] == ms(NOW + 3 * DAY + 180)


def test_old_pages_among_new_ones_do_not_hold_the_clock_back():
    """A crawl fetches old pages among new ones: their dates are no votes against a jump."""
    clock = FileClock(max_future=DAY)
    steady(clock)
    old = [NOW - 30 * DAY + i for i in range(5)]
    new = [NOW + 5 * DAY + 60 * i for i in range(3)]
    got = readings(clock, [old[0], new[0], old[1], old[2], new[1], old[3], new[2], old[4]])
    assert got[-2] >= ms(NOW + 5 * DAY)  # three new dates of three sites among five old ones


def test_a_sparse_file_keeps_its_clock_moving():
    clock = FileClock(max_future=DAY)
    got = readings(clock, [NOW + i * 2 * DAY for i in range(12)])  # 22 days, a page every 2
    assert got[-1] is not None and got[-1] >= ms(NOW + 12 * DAY)  # a few pages behind, never stuck
    assert got[-1] - got[-5] >= ms(6 * DAY)  # and it keeps moving


def test_now_fixes_the_clock_whatever_the_dates():
    clock = FileClock(max_future=DAY, now_ms=NOW_MS)
    assert readings(clock, [NOW + 5 * DAY, None, NOW - DAY]) == [NOW_MS + 1, NOW_MS + 2, NOW_MS + 3]


def test_a_saved_clock_continues_with_its_votes():
    first = FileClock(max_future=DAY)
    steady(first)
    readings(first, [NOW + 3 * DAY + i for i in range(4)])  # four votes for a jump so far
    second = FileClock(max_future=DAY)
    second.load_state(first.state())
    assert second.tick(at(NOW + 3 * DAY + 5), "z") == ms(NOW + 3 * DAY + 5)


def test_before_its_clock_starts_a_file_stamps_line_numbers():
    clock = FileClock(max_future=DAY)
    assert [clock.stamp(at(NOW), line) for line in (1, 2)] == [1, 2]


@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.floats(min_value=0, max_value=4e9)), st.sampled_from("abc")),
        max_size=60,
    )
)
def test_a_files_clock_never_goes_back_and_ticks_every_line_once_started(lines):
    clock = FileClock(max_future=DAY)
    got = [clock.tick(at(date), site) for date, site in lines]
    started = [c for c in got if c is not None]
    assert started == got[len(got) - len(started) :]  # once it has started it stays started
    assert all(b > a for a, b in zip(started, started[1:]))


def test_an_input_record_is_clocked_by_its_header_else_by_its_timestamp():
    from stream_lsh.stream.topics import CLOCK_HEADER, clock_of_message

    assert clock_of_message(5, [(CLOCK_HEADER, b"1551434400000")]) == 1551434400000
    assert clock_of_message(5, ((b"other", b"1"), (CLOCK_HEADER, b"7"))) == 7
    assert clock_of_message(5, {CLOCK_HEADER: b"9"}) == 9
    assert clock_of_message(5, []) == 5 and clock_of_message(5, None) == 5
    assert clock_of_message(5, [(CLOCK_HEADER, b"soon")]) == 5  # unreadable: as without it
    assert clock_of_message(5, [(CLOCK_HEADER, b"")]) == 5
