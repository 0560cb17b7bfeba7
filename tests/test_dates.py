"""Dates as real feeds write them: ISO 8601 in its variants, RSS's RFC 2822, epoch numbers."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core.dates import read_date

NOON = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc).timestamp()  # 1795514400


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-24T10:00:00Z",
        "2026-11-24T10:00:00z",
        "2026-11-24T10:00:00+00:00",
        "2026-11-24T15:30:00+05:30",
        "2026-11-24T06:00:00-04:00",
        "2026-11-24T10:00:00",  # no offset: UTC
        "2026-11-24 10:00:00",  # news-please
        "  2026-11-24T10:00:00Z\n",
        "Tue, 24 Nov 2026 10:00:00 GMT",  # RSS pubDate
        "Tue, 24 Nov 2026 10:00:00 +0000",
        "24 Nov 2026 05:00:00 EST",
        "Tue, 24 Nov 2026 10:00:00 -0000",  # RFC 2822's "zone unknown": UTC
        1795514400,
        1795514400.0,
        "1795514400",
        1795514400000,  # milliseconds
        "1795514400000",
        1795514400000000,  # microseconds
    ],
)
def test_one_instant_in_every_format(value):
    reading = read_date(value)
    assert reading.problem is None and reading.seconds == NOON


def test_a_date_without_a_time_is_midnight_utc():
    assert read_date("2026-11-24").seconds == NOON - 10 * 3600


def test_fractions_beyond_microseconds_are_cut():
    assert read_date("2026-11-24T10:00:00.123456789Z").seconds == pytest.approx(NOON + 0.123456)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing(value):
    reading = read_date(value)
    assert reading.seconds is None and reading.problem is None


@pytest.mark.parametrize(
    "value",
    [
        "yesterday",
        "n/a",
        "32/13/2026",
        "2026-13-01",
        "Mon, 31 Feb 2026 10:00:00 GMT",
        "1" * 400,
        True,
        False,
        [2026, 11, 24],
        {"$date": NOON},
        float("nan"),
        float("inf"),
        "10000-01-01",
    ],
)
def test_unreadable(value):
    reading = read_date(value)
    assert reading.seconds is None and reading.problem == "unreadable"


def test_wrong_years_still_read_plausibility_is_the_clocks_business():
    assert read_date("2099-01-01T00:00:00Z").seconds > NOON
    assert read_date("0001-01-01T00:00:00Z").seconds < 0
    assert read_date("1970-01-01T00:00:00Z").seconds == 0.0


moments = st.datetimes(
    min_value=datetime(1990, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc)
).map(lambda m: m.replace(microsecond=0))
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


@given(moments, offsets)
def test_iso_and_rfc2822_round_trip_at_any_offset(moment, offset):
    local = moment.astimezone(offset)
    assert read_date(local.isoformat()).seconds == moment.timestamp()
    assert read_date(format_datetime(local)).seconds == moment.timestamp()


@given(moments)
def test_epoch_seconds_and_milliseconds_round_trip(moment):
    seconds = int(moment.timestamp())
    assert (
        read_date(seconds).seconds
        == read_date(seconds * 1000).seconds
        == read_date(str(seconds)).seconds
        == seconds
    )
