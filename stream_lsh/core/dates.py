"""Reading a page's date the way real feeds write it.

Feeds send ISO 8601 (with or without a time, with or without an offset), RSS's RFC 2822
(``Tue, 24 Nov 2026 10:00:00 GMT``), Unix epoch numbers (seconds, milliseconds or microseconds,
as JSON numbers or digit strings), and things that are not dates at all. A date that cannot be
read is *unreadable*: the page is still deduplicated, without a date (see
:mod:`stream_lsh.core.clock` for what event time it gets), never rejected because of its date.

Whether a date that reads fine is also *plausible* (not 2099, not 0001) is the clock's business,
not this module's.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["DateReading", "read_date"]

#: Epoch numbers: at or above these magnitudes a number counts as milliseconds, then microseconds
#: (1e11 seconds is the year 5138; 1e11 milliseconds is 1973).
_MILLISECONDS_FROM = 1e11
_MICROSECONDS_FROM = 1e14
_EPOCH_DIGITS = re.compile(r"-?\d+(?:\.\d+)?")
_MAX_TEXT = 100  # longer strings are not dates; never echo more than this in a reason


@dataclass(frozen=True)
class DateReading:
    """What a ``published_at`` value says: POSIX seconds (UTC), or why there are none.

    ``problem`` is None for a readable date or a missing one (``seconds`` None), else
    ``"unreadable"``.
    """

    seconds: float | None
    problem: str | None = None


MISSING = DateReading(None)
UNREADABLE = DateReading(None, "unreadable")


def read_date(value: Any) -> DateReading:
    """A ``published_at`` value of any JSON type -> :class:`DateReading`.

    * ISO 8601: ``2026-11-24T10:00:00Z``, ``...+05:30``, ``2026-11-24 10:00:00`` (no offset: UTC),
      ``2026-11-24`` (midnight UTC);
    * RFC 2822: ``Tue, 24 Nov 2026 10:00:00 GMT`` (an unknown zone name, or ``-0000``: UTC);
    * epoch numbers, as numbers or digit strings: seconds, or milliseconds from 1e11, or
      microseconds from 1e14;
    * missing: None, or a blank string;
    * anything else (another string, a boolean, an object, NaN): unreadable.
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return UNREADABLE
    if isinstance(value, (int, float)):
        return _epoch(float(value))
    if not isinstance(value, str):
        return UNREADABLE
    text = value.strip()
    if not text:
        return MISSING
    if len(text) > _MAX_TEXT:
        return UNREADABLE
    if _EPOCH_DIGITS.fullmatch(text):
        return _epoch(float(text))
    moment = _iso(text) or _rfc2822(text)
    if moment is None:
        return UNREADABLE
    try:
        return DateReading(moment.timestamp())
    except (OverflowError, ValueError, OSError):  # a year datetime can hold but POSIX time cannot
        return UNREADABLE


def _epoch(number: float) -> DateReading:
    if not math.isfinite(number):
        return UNREADABLE
    magnitude = abs(number)
    if magnitude >= _MICROSECONDS_FROM:
        number /= 1e6
    elif magnitude >= _MILLISECONDS_FROM:
        number /= 1e3
    return DateReading(number)


def _iso(text: str) -> datetime | None:
    if text[-1] in "Zz":
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _rfc2822(text: str) -> datetime | None:
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
