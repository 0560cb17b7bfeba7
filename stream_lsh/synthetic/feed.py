"""Messy dates: the corpus as a feed delivers it (arrival order, and date fields as real feeds write them)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from itertools import accumulate
from typing import Any

from .render import _moment
from .world import _SECOND

# --- Messy dates (messy_dates=True) -------------------------------------------------------------

#: A page is received this many seconds after publication (uniform, inclusive): the crawl delay.
CRAWL_DELAY_SECONDS = (0, 30 * 60)
#: Share of pages that are re-crawls, received 1 to 3 days after publication (uniform, inclusive).
LATE_SHARE = 0.04
LATE_DELAY_SECONDS = (24 * 3600, 3 * 24 * 3600)
#: How a page's date field is written, by share of pages (they sum to 1). Feeds mix formats, and
#: some of their dates are wrong; each form is read as the comment says (checked by the tests).
DATE_FORM_SHARES: Mapping[str, float] = {
    "iso-utc": 0.40,  # 2026-03-01T10:00:00Z
    "iso-offset": 0.10,  # the same instant in a local zone: 2026-03-01T15:30:00+05:30
    "iso-no-offset": 0.05,  # UTC wall time without a zone, read as UTC: 2026-03-01T10:00:00
    "rfc-2822": 0.10,  # RSS pubDate, the same instant: Sun, 01 Mar 2026 10:00:00 GMT (or +0530)
    "epoch-seconds": 0.05,  # the same instant as a JSON integer
    "epoch-milliseconds": 0.04,  # the same instant as a JSON integer
    "date-only": 0.06,  # 2026-03-01: midnight UTC, so a whole day's pages share one time
    "hours-ahead": 0.04,  # ISO UTC, 2-6 h after publication: an embargo or a time-zone bug
    "missing": 0.07,  # no date field at all: the page is undated
    "unreadable": 0.04,  # junk in the field ("yesterday", "n/a"): unreadable, the date is ignored
    "wrong-year": 0.05,  # 2099 (ignored as future), or 1970 / 0001 placeholders (before 1990)
}
#: Local zones of "iso-offset" dates and of RFC 2822 dates not in GMT, in minutes east of UTC
#: (+05:30, -04:00, +01:00).
LOCAL_OFFSET_MINUTES = (330, -240, 60)
#: Share of RFC 2822 dates written in GMT, as most RSS feeds do; the rest carry a numeric offset.
RFC2822_GMT_SHARE = 0.5
#: "hours-ahead" dates are this many seconds after publication (uniform, inclusive).
AHEAD_SECONDS = (2 * 3600, 6 * 3600)
#: What "unreadable" writes: strings that are no date. Never blank: a blank date reads as missing.
UNREADABLE_DATES = ("yesterday", "n/a", "32/13/2026", "0000-00-00 00:00:00", "Invalid Date", "TBD")
#: What "wrong-year" writes, with equal chance: the publication time in this year (a CMS bug), or
#: one of the placeholder dates.
WRONG_YEAR = 2099
PLACEHOLDER_DATES = ("1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z")


# --- Messy dates: the corpus as a feed delivers it ----------------------------------------------


def _local_zone(rng: random.Random) -> timezone:
    return timezone(timedelta(minutes=rng.choice(LOCAL_OFFSET_MINUTES)))


def _iso_utc(rng: random.Random, moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_offset(rng: random.Random, moment: datetime) -> str:
    """The same instant as a local wall time with its offset, as sites outside UTC write it."""
    return moment.astimezone(_local_zone(rng)).isoformat()


def _iso_no_offset(rng: random.Random, moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _rfc_2822(rng: random.Random, moment: datetime) -> str:
    """An RSS ``pubDate``: in GMT, or the site's local time with a numeric offset."""
    if rng.random() < RFC2822_GMT_SHARE:
        return format_datetime(moment, usegmt=True)
    return format_datetime(moment.astimezone(_local_zone(rng)))


def _epoch_seconds(rng: random.Random, moment: datetime) -> int:
    return int(moment.timestamp())


def _epoch_milliseconds(rng: random.Random, moment: datetime) -> int:
    return int(moment.timestamp()) * 1000


def _date_only(rng: random.Random, moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def _hours_ahead(rng: random.Random, moment: datetime) -> str:
    """A few hours ahead of publication: within the clock's tolerance (24 h), so it is believed."""
    return _iso_utc(rng, moment + rng.randint(*AHEAD_SECONDS) * _SECOND)


def _missing(rng: random.Random, moment: datetime) -> None:
    return None


def _unreadable(rng: random.Random, moment: datetime) -> str:
    return rng.choice(UNREADABLE_DATES)


def _wrong_year(rng: random.Random, moment: datetime) -> str:
    """WRONG_YEAR, or a placeholder date, with equal chance. (EPOCH's window never holds 29 Feb.)"""
    pick = rng.randrange(1 + len(PLACEHOLDER_DATES))
    if pick == 0:
        return _iso_utc(rng, moment.replace(year=WRONG_YEAR))
    return PLACEHOLDER_DATES[pick - 1]


#: Date form -> the date field's value for a page published at a moment (None: the field is left out).
_DATE_WRITERS: Mapping[str, Callable[[random.Random, datetime], str | int | None]] = {
    "iso-utc": _iso_utc,
    "iso-offset": _iso_offset,
    "iso-no-offset": _iso_no_offset,
    "rfc-2822": _rfc_2822,
    "epoch-seconds": _epoch_seconds,
    "epoch-milliseconds": _epoch_milliseconds,
    "date-only": _date_only,
    "hours-ahead": _hours_ahead,
    "missing": _missing,
    "unreadable": _unreadable,
    "wrong-year": _wrong_year,
}
_DATE_FORMS = tuple(DATE_FORM_SHARES)
_DATE_FORM_CUM = tuple(accumulate(DATE_FORM_SHARES.values()))


@dataclass(frozen=True)
class _Delivery:
    """How a feed delivers one page: when it arrives, and its date field as written."""

    received: int  # seconds after EPOCH
    form: str  # a key of DATE_FORM_SHARES
    value: str | int | None  # None: the page comes without a date field


def _messy_rng(seed: int) -> random.Random:
    """A generator of its own for the messy choices, so the clean corpus's draws stay untouched.

    A string seed is hashed with SHA-512 (not ``hash()``), so it is the same in every process.
    """
    return random.Random(f"stream-lsh messy dates {seed}")


def _delivery(rng: random.Random, published: int) -> _Delivery:
    """Arrival after a crawl delay (days, for a re-crawl) and a date form drawn by its share."""
    if rng.random() < LATE_SHARE:
        delay = rng.randint(*LATE_DELAY_SECONDS)
    else:
        delay = rng.randint(*CRAWL_DELAY_SECONDS)
    form = rng.choices(_DATE_FORMS, cum_weights=_DATE_FORM_CUM)[0]
    value = _DATE_WRITERS[form](rng, _moment(published))
    return _Delivery(received=published + delay, form=form, value=value)


def _write_date(record: dict[str, Any], value: str | int | None) -> None:
    """Replace the page's date (``published_at``, or ``date_publish`` in news-please shape) in place."""
    name = "date_publish" if "date_publish" in record else "published_at"
    if value is None:
        del record[name]
    else:
        record[name] = value


def _as_delivered(
    records: list[dict[str, Any]],
    published: Sequence[int],
    seed: int,
) -> tuple[list[dict[str, Any]], list[_Delivery]]:
    """The records with messy dates, in arrival order (ties: publication order), and each
    record's delivery in publication order. A feed dump is in arrival order, not date order."""
    rng = _messy_rng(seed)
    deliveries = [_delivery(rng, when) for when in published]
    for record, delivery in zip(records, deliveries, strict=True):
        _write_date(record, delivery.value)
    order = sorted(range(len(records)), key=lambda i: (deliveries[i].received, i))
    return [records[i] for i in order], deliveries
