"""Opening a window directory: its header, its layout, and the buckets built again from its rows.

A directory says which scheme and banding made it (another is refused, as state of another scheme
always is) and which layout of rows it has:

* layout 2 keeps no buckets on disk. They are built when the directory is opened, from every
  entry's band keys in page-number order, less the keys whose buckets the cap pushed the page out
  of (table ``e``): the buckets exactly as they were, since a bucket is its pages in the order they
  were numbered, and a page pushed out stays out;
* layout 1 kept each bucket as a row of table ``b``. Such a directory is migrated once, in one
  atomic write: the pushed-out keys are found by comparing the entries with the buckets, and
  table ``b`` is dropped.

A layout newer than this version knows is refused, not guessed at.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
from rocksdict import Rdict, WriteBatch

from ..core.banding import Banding
from ..core.scheme import Scheme, check_compatible
from ..errors import StateMismatchError
from .band_table import BandTable
from .entry_codec import BUCKET, EVICTED, META, PAGE, band_keys_of, number, numbers, pack_numbers

__all__ = [
    "HEADER",
    "LAYOUT",
    "check_header",
    "load_bands",
    "migrate_buckets",
    "number_in",
    "read_meta",
    "rows_of",
]

#: The layout of rows this version writes (see the module doc).
LAYOUT = 2
HEADER = META + b"header"


def read_meta(db: Rdict, key: bytes) -> Any:
    """A row of table ``m`` (JSON), or None."""
    raw = db.get(key)
    return None if raw is None else orjson.loads(raw)


def number_in(key: bytes) -> int:
    """The number after a key's table byte (a page number, a band key)."""
    return int.from_bytes(key[1:9], "big")


def rows_of(db: Rdict, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
    """Every row whose key starts with ``prefix`` (a table's byte, or more), in key order; a
    damaged block raises, never ends the rows early."""
    iterator = db.iter()
    iterator.seek(prefix)
    while iterator.valid() and iterator.key().startswith(prefix):
        yield iterator.key(), iterator.value()
        iterator.next()
    iterator.status()


def check_header(db: Rdict, scheme: Scheme, banding: Banding, what: str) -> int:
    """Write the header of a new directory, or refuse one of another scheme, banding or a newer
    layout; returns the directory's layout."""
    header = read_meta(db, HEADER)
    if header is None:
        mine = {"scheme": scheme.to_dict(), "banding": [banding.bands, banding.rows], "layout": LAYOUT}
        db.put(HEADER, orjson.dumps(mine))
        return LAYOUT
    check_compatible(scheme, Scheme.from_dict(header["scheme"]), what=what)
    banding.check_saved(header["banding"], what)
    layout: int = header.get("layout", 1)
    if layout > LAYOUT:
        raise StateMismatchError(
            f"{what} has layout {layout}, written by a newer version of stream-lsh "
            f"(this one reads layouts up to {LAYOUT})"
        )
    return layout


def load_bands(db: Rdict) -> BandTable:
    """The buckets of a layout-2 directory (see the module doc)."""
    pushed_out = {number_in(key): set(numbers(value)) for key, value in rows_of(db, EVICTED)}
    pages: list[int] = []
    chunks: list[bytes] = []
    counts: list[int] = []
    for key, value in rows_of(db, PAGE):
        band_keys = band_keys_of(value)
        pages.append(number_in(key))
        chunks.append(band_keys)
        counts.append(len(band_keys) >> 3)
    keys = np.frombuffer(b"".join(chunks), dtype="<u8").astype(np.uint64)
    page_numbers = np.repeat(np.asarray(pages, dtype=np.int64), counts)
    kept = np.ones(keys.size, bool)
    if pushed_out:
        starts = np.cumsum([0, *counts]).tolist()
        for index, page_number in enumerate(pages):
            pushed = pushed_out.get(page_number)
            if pushed:
                at = starts[index]
                for offset, key in enumerate(keys[at : at + counts[index]].tolist()):
                    kept[at + offset] = key not in pushed
    return BandTable.of_pairs(keys[kept], page_numbers[kept])


def migrate_buckets(db: Rdict) -> None:
    """Turn a layout-1 directory into layout 2, in one atomic write (see the module doc)."""
    in_buckets = {(number_in(key), n) for key, value in rows_of(db, BUCKET) for n in numbers(value)}
    changes = WriteBatch(raw_mode=True)
    for key, value in rows_of(db, PAGE):
        page_number = number_in(key)
        band_keys = np.frombuffer(band_keys_of(value), dtype="<u8").tolist()
        pushed = [k for k in band_keys if (k, page_number) not in in_buckets]
        if pushed:
            changes.put(EVICTED + number(page_number), pack_numbers(pushed))
    changes.delete_range(BUCKET, BUCKET + b"\xff")
    changes.put(HEADER, orjson.dumps({**read_meta(db, HEADER), "layout": LAYOUT}))
    db.write(changes)
