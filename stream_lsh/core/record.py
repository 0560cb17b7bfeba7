"""One input record, from raw bytes to a page, a retraction, or the reason it was rejected.

Shared by the batch runner and the stream, so that a line of a file and a Kafka message are judged
by the same rules. Nothing here echoes the record body: reasons are safe to log and to put on a
dead-letter topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from .dates import DateReading
from .page import Page, PageError, page_from_dict

__all__ = [
    "DEFAULT_MAX_PAGE_BYTES",
    "Delete",
    "InputLine",
    "Rejected",
    "parse_line",
    "parse_query",
    "parse_record",
    "read_lines",
    "record_id",
    "split_lines",
]

DEFAULT_MAX_PAGE_BYTES = 10_000_000  # larger records are rejected unless configured otherwise
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark some tools put at the start of a file


@dataclass(frozen=True)
class Rejected:
    """Why one input record was not processed."""

    code: str
    reason: str
    page_id: str | None = None


@dataclass(frozen=True)
class Delete:
    """A retraction, ``{"id": X, "op": "delete"}``: take page X out of the index."""

    id: str


def unframe(raw: bytes) -> bytes:
    """The JSON of a record in Confluent Schema Registry's wire format (a zero byte, the schema id
    in 4 bytes, then the JSON), and any other record as it is. Producers that serialise through a
    schema registry frame every value so; JSON never starts with a zero byte, so nothing else is
    taken for a frame. (Its newer form keeps the schema id in a header and the value plain.)"""
    if len(raw) >= 5 and raw[0] == 0:
        return raw[5:]
    return raw


def parse_line(raw: bytes, max_bytes: int) -> tuple[dict[str, Any], None] | tuple[None, Rejected]:
    """Decode one JSON object (unframed, see :func:`unframe`); on failure, say why (without
    echoing the page body)."""
    raw = unframe(raw)
    if len(raw) > max_bytes:
        return None, Rejected("too_large", f"record of {len(raw):,} bytes exceeds the limit of {max_bytes:,}")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        code = "invalid_utf8" if "utf-8" in str(error).lower() else "invalid_json"
        return None, Rejected(code, f"not valid JSON: {error}")
    if not isinstance(value, dict):
        return None, Rejected("not_an_object", f"a page must be a JSON object, got {type(value).__name__}")
    return value, None


def record_id(record: dict[str, Any]) -> str | None:
    """The record's ``id`` as a string, if it has a usable one (for reasons and dead letters)."""
    value = record.get("id")
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def parse_record(raw: bytes, max_bytes: int) -> Page | Delete | Rejected:
    """A page, a retraction, or why the record is rejected."""
    record, rejected = parse_line(raw, max_bytes)
    if record is None:
        assert rejected is not None
        return rejected
    if record.get("op") == "delete":
        page_id = record_id(record)
        return Delete(page_id) if page_id is not None else Rejected("bad_id", "a delete needs an 'id'")
    return _page(record)


def parse_query(raw: bytes, max_bytes: int) -> Page | Rejected:
    """A query-only probe: a page whose id is its ``correlation_id`` (or its ``id``)."""
    record, rejected = parse_line(raw, max_bytes)
    if record is None:
        assert rejected is not None
        return rejected
    correlation = record_id({"id": record.get("correlation_id", record.get("id"))})
    if not correlation:
        return Rejected("bad_id", "a query needs a 'correlation_id' (or an 'id')")
    return _page({**record, "id": correlation})


def _page(record: dict[str, Any]) -> Page | Rejected:
    try:
        return page_from_dict(record)
    except PageError as error:
        return Rejected(error.code, str(error), record_id(record))


@dataclass(frozen=True)
class InputLine:
    """One non-blank line of a file of pages: its number, its bytes (stripped) and what it is."""

    number: int
    raw: bytes
    parsed: Page | Delete | Rejected

    @property
    def date(self) -> DateReading:
        """The line's date, for a file's clock."""
        return _date_of(self.parsed)

    @property
    def site(self) -> str:
        """The line's site, for a file's clock ('' if it is not a page or names none)."""
        return self.parsed.site if isinstance(self.parsed, Page) else ""


def _date_of(parsed: Page | Delete | Rejected) -> DateReading:
    """What a record says about its date: only pages have one."""
    return parsed.date if isinstance(parsed, Page) else DateReading(None)


def split_lines(data: bytes) -> list[bytes]:
    """A file's bytes cut into lines as iterating the open file cuts them: at LF alone. A CR before
    it is stripped by :func:`read_lines`; a bare CR stays inside its line, as it does for ``dedup``
    reading the file (``bytes.splitlines`` would also cut at CR, VT, FF and more, and a file with
    stray CRs would be more records to the stream than lines to batch)."""
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def read_lines(lines: Iterable[bytes], max_bytes: int) -> Iterator[InputLine]:
    """The records of a file, as batch reads them and ``produce`` sends them: blank lines are
    skipped, a byte order mark at the start and CRLF line ends are accepted. Both must see the
    same lines, or the file's clock (one tick per line) would differ between them."""
    for number, raw in enumerate(lines, start=1):
        stripped = raw.strip()
        if number == 1 and stripped.startswith(_BOM):
            stripped = stripped[len(_BOM) :].strip()
        if stripped:
            yield InputLine(number, stripped, parse_record(stripped, max_bytes))
