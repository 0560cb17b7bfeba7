"""One input record, from raw bytes to a page, a retraction, or the reason it was rejected.

Shared by the batch runner and the stream, so that a line of a file and a Kafka message are judged
by the same rules. Nothing here echoes the record body: reasons are safe to log and to put on a
dead-letter topic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .page import Page, PageError, page_from_dict

__all__ = ["Delete", "Rejected", "parse_line", "parse_query", "parse_record", "record_id"]


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


def parse_line(raw: bytes, max_bytes: int) -> tuple[dict[str, Any], None] | tuple[None, Rejected]:
    """Decode one JSON object; on failure, say why (without echoing the page body)."""
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
