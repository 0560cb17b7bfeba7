"""Bytes of the disk window: its keys, and one indexed page as one value.

Keys start with one byte naming their table, then a part that sorts as the table needs:

======  ===============================  ==============================================
table   key after the byte               value
======  ===============================  ==============================================
``p``   page number (8 bytes)            the page's entry (:func:`encode_entry`)
``e``   page number                      the band keys whose buckets the cap pushed it out
                                         of (8 bytes each), when there are any
``i``   page id (UTF-8)                  its page number
``c``   content hash (8 bytes)           the page number of the earliest page with it
``k``   cluster id (UTF-8)               how many indexed pages it has (8 bytes)
``x``   event time, then page number     nothing: the expiry order (16 bytes of key)
``m``   a name                           JSON: the header and the engine's other state
======  ===============================  ==============================================

A page number is given at each insertion and never reused, so the buckets and the expiry order
name one version of a page. Event times are encoded so that their bytes sort as the numbers do
(negative times too), which lets the expiry order be read from the start of its table.

The buckets themselves are kept in memory (:mod:`.band_table`) and built from the entries and
table ``e``. Layout 1 kept them in table ``b`` (band key -> page numbers, 8 bytes each), which is
read once to migrate such a directory.
"""

from __future__ import annotations

import struct

import numpy as np
import orjson

from ..core.decision import Decision
from ..core.index import IndexEntry
from ..core.names import sketch_from

__all__ = [
    "BUCKET",
    "CLUSTER",
    "CONTENT",
    "EVICTED",
    "EXPIRY",
    "META",
    "PAGE",
    "PAGE_ID",
    "band_keys_of",
    "decode_entry",
    "encode_entry",
    "expiry_key",
    "expiry_time",
    "number",
    "numbers",
    "pack_numbers",
]

BUCKET, PAGE, PAGE_ID, CONTENT, CLUSTER, EXPIRY, META = (b"b", b"p", b"i", b"c", b"k", b"x", b"m")
EVICTED = b"e"

_U64 = struct.Struct(">Q")
_HEAD = struct.Struct("<I")  # bytes of the entry's JSON part
_SIGN = 1 << 63
_ALL = (1 << 64) - 1


def number(value: int) -> bytes:
    """An unsigned 64-bit number as 8 bytes that sort as the numbers do."""
    return _U64.pack(value)


def numbers(raw: bytes | None) -> list[int]:
    """Numbers packed by :func:`pack_numbers` (empty: no row)."""
    return [] if not raw else list(struct.unpack(f">{len(raw) >> 3}Q", raw))


def pack_numbers(page_numbers: list[int]) -> bytes:
    """Numbers (page numbers, band keys) as 8 bytes each, big-endian."""
    return struct.pack(f">{len(page_numbers)}Q", *page_numbers)


def expiry_key(event_time: float, page_number: int) -> bytes:
    """The key of a page in the expiry order: by event time, then by when it was indexed."""
    (bits,) = _U64.unpack(struct.pack(">d", event_time))
    bits = bits ^ _ALL if bits & _SIGN else bits | _SIGN
    return EXPIRY + _U64.pack(bits) + _U64.pack(page_number)


def expiry_time(key: bytes) -> float:
    """The event time of an expiry key."""
    (bits,) = _U64.unpack_from(key, 1)
    bits = bits ^ _SIGN if bits & _SIGN else bits ^ _ALL
    return float(struct.unpack(">d", _U64.pack(bits))[0])


def encode_entry(entry: IndexEntry) -> bytes:
    """One indexed page: its fields as JSON, then its signature, band keys, names, slots and
    shingles as arrays."""
    head = orjson.dumps(
        [
            entry.id,
            entry.cluster_id,
            entry.event_time,
            entry.content_hash,
            entry.body_hash,
            entry.scheme,
            None if entry.decision is None else entry.decision.to_dict(),
            entry.signature.size,
            entry.band_keys.size,
            entry.opening,
            entry.headline,
            entry.site_headline,
            entry.site,
            entry.names.count,
            entry.names.hashes.size,
            entry.names.slots.size,
        ]
    )
    shingles = b"" if entry.shingles is None else entry.shingles.astype("<u8").tobytes()
    return b"".join(
        (
            _HEAD.pack(len(head)),
            head,
            entry.signature.astype("<u4").tobytes(),
            entry.band_keys.astype("<u8").tobytes(),
            entry.names.hashes.astype("<u4").tobytes(),
            entry.names.slots.astype("<u4").tobytes(),
            shingles,
        )
    )


def band_keys_of(raw: bytes) -> bytes:
    """The band keys of an encoded entry, as they are stored (little-endian uint64), without
    making the rest into objects."""
    (size,) = _HEAD.unpack_from(raw)
    start = _HEAD.size + size
    width, bands = orjson.loads(raw[_HEAD.size : start])[7:9]
    return raw[start + 4 * width : start + 4 * width + 8 * bands]


def decode_entry(raw: bytes, *, keep_shingles: bool) -> IndexEntry:
    """The entry :func:`encode_entry` wrote."""
    (size,) = _HEAD.unpack_from(raw)
    start = _HEAD.size + size
    fields = orjson.loads(raw[_HEAD.size : start])
    page_id, cluster_id, event_time, content_hash, body_hash, scheme, decision, width, bands = fields[:9]
    opening = fields[9] if len(fields) > 9 else 0  # entries written before openings were kept have none
    headline = fields[10] if len(fields) > 10 else 0  # ... and before headlines
    site_headline = fields[11] if len(fields) > 11 else 0  # ... and before headlines at their site
    site = fields[12] if len(fields) > 12 else 0  # ... and before sites
    name_count, name_size = fields[13:15] if len(fields) > 14 else (0, 0)  # ... and before names
    slot_size = fields[15] if len(fields) > 15 else 0  # ... and before their wording
    keys_at = start + 4 * width
    names_at = keys_at + 8 * bands
    slots_at = names_at + 4 * name_size
    shingles_at = slots_at + 4 * slot_size
    signature = np.frombuffer(raw, dtype="<u4", count=width, offset=start).astype(np.uint32)
    band_keys = np.frombuffer(raw, dtype="<u8", count=bands, offset=keys_at).astype(np.uint64)
    shingles = None
    if keep_shingles and len(raw) > shingles_at:
        shingles = np.frombuffer(raw, dtype="<u8", offset=shingles_at).astype(np.uint64)
    elif keep_shingles:
        shingles = np.zeros(0, np.uint64)
    return IndexEntry(
        id=page_id,
        signature=signature,
        band_keys=band_keys,
        cluster_id=cluster_id,
        event_time=event_time,
        content_hash=content_hash,
        scheme=scheme,
        body_hash=body_hash,
        shingles=shingles,
        decision=None if decision is None else Decision.from_dict(decision),
        opening=opening,
        headline=headline,
        site_headline=site_headline,
        site=site,
        names=sketch_from(
            np.frombuffer(raw, dtype="<u4", count=name_size, offset=names_at),
            name_count,
            np.frombuffer(raw, dtype="<u4", count=slot_size, offset=slots_at),
        ),
    )
