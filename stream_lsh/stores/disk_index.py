"""The window of indexed pages in a RocksDB directory: batch's index when it must outgrow memory.

:class:`DiskIndex` keeps the tables :class:`~stream_lsh.core.index.LSHIndex` keeps in memory (the
buckets with their cap, the exact-content map with the openings, the cluster sizes, the expiry order
and every page's entry) under the same rules, so an engine decides alike over either store; the tests run
the same pages through both and compare every record. Layout: :mod:`.entry_codec`.

Memory stays bounded by the micro-batch, not the window:

* the buckets are in memory (:mod:`.band_table`, ~0.7 KiB a page): reading 43 of them a page from
  RocksDB cost more than everything else the decision does. The disk keeps what they are built
  from, each entry's band keys and the keys whose buckets the cap pushed it out of, built again
  when the directory is opened;
* :meth:`DiskIndex.prefetch` reads what else a micro-batch's pages touch (their ids and content
  hashes, then the candidates' entries) in two multi-gets;
* reads and writes in between go to an overlay of the rows read and changed;
* :meth:`DiskIndex.commit` writes the changed rows in one atomic ``WriteBatch`` and drops the
  overlay. RocksDB's block cache (a setting: ``cache_bytes``) and bloom filters keep the next
  micro-batch's reads off the disk where it can;
* the expiry order is read from the disk only when the window's horizon passes the earliest event
  time known to be in it, so a page that expires nothing costs one comparison.
"""

from __future__ import annotations

import os
from collections.abc import Container, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import orjson
from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch

from ..core.banding import Banding
from ..core.index import IndexEntry, WindowIndex
from ..core.scheme import Scheme
from ..core.window import check_window, first_keys, takes_key
from .disk_layout import LAYOUT, check_header, load_bands, migrate_buckets, read_meta, rows_of
from .entry_codec import (
    CLUSTER,
    CONTENT,
    EVICTED,
    EXPIRY,
    META,
    PAGE,
    PAGE_ID,
    decode_entry,
    encode_entry,
    expiry_key,
    expiry_time,
    number,
    numbers,
    pack_numbers,
)

__all__ = ["DEFAULT_CACHE_BYTES", "DiskIndex", "Row", "read_state_of", "write_rows"]

#: RocksDB's block cache of a disk window: enough for the hot buckets and the newest entries.
DEFAULT_CACHE_BYTES = 256 << 20
_COUNTERS = META + b"counters"
Row = tuple[bytes, "bytes | None"]  # a value of None deletes the key
_STATE = META + b"state:"


class _Clusters(Container[str]):
    """The cluster ids with an indexed page, as the engine asks: ``id in clusters``."""

    def __init__(self, index: DiskIndex) -> None:
        self._index = index

    def __contains__(self, cluster_id: object) -> bool:
        return isinstance(cluster_id, str) and self._index._cluster_size(cluster_id) > 0


class DiskIndex(WindowIndex):
    """The window on disk (see the module doc).

    Args:
        path: the directory (created if missing). A directory made under another scheme or
            banding is refused (:class:`~stream_lsh.errors.StateMismatchError`).
        scheme, banding: the engine's.
        bucket_cap: most ids kept per bucket (>= 1).
        ttl: seconds of event time a page stays indexed (None: forever).
        keep_shingles: keep each page's shingle set (``verify="jaccard"``).
        cache_bytes: RocksDB's block cache.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        scheme: Scheme,
        banding: Banding,
        *,
        bucket_cap: int = 64,
        ttl: float | None = None,
        keep_shingles: bool = False,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        super().__init__(scheme, banding)
        check_window(bucket_cap, ttl)
        self.path = Path(path)
        self.bucket_cap = bucket_cap
        self._ttl = ttl
        self._keep_shingles = keep_shingles
        self._db = _open(self.path, cache_bytes)
        layout = check_header(self._db, self.scheme, self.banding, f"the window in {self.path}")
        counters = self._read_meta(_COUNTERS) or {}
        self._count: int = counters.get("pages", 0)
        self._next_number: int = counters.get("next", 1)
        self._clock_ms: int | None = counters.get("clock")
        self._earliest: float | None = None  # no expiry key is before this time (None: read it)
        self._reset_overlay()
        #: while True, the engine's commits leave the micro-batch in the overlay (see commit)
        self.deferring = False
        if layout < LAYOUT:
            migrate_buckets(self._db)
        self._bands = load_bands(self._db)

    # -- opening and closing ----------------------------------------------------------------------
    def close(self) -> None:
        """Write what is pending and close the database."""
        self.commit()
        self._db.close()

    def read_state(self, name: str) -> Any:
        """Other state of the engine kept beside the window (None: never written)."""
        return self._read_meta(_STATE + name.encode())

    def read_states(self, prefix: str) -> Iterator[tuple[str, Any]]:
        """The state rows whose names start with ``prefix``: (the rest of the name, value), one at
        a time, in name order."""
        start = _STATE + prefix.encode()
        for key, value in rows_of(self._db, start):
            yield key[len(start) :].decode(), orjson.loads(value)

    def write_state(self, values: Iterable[tuple[str, Any]], *, dropping: str | None = None) -> None:
        """Keep other state of the engine beside the window, with what is pending, atomically.
        ``dropping``: first drop the rows whose names start with it."""
        changes = WriteBatch(raw_mode=True)
        if dropping is not None:
            start = _STATE + dropping.encode()
            changes.delete_range(start, start + b"\xff")
        for name, value in values:
            changes.put(_STATE + name.encode(), orjson.dumps(value))
        self.commit(changes)

    def write_parts(self, values: Iterable[tuple[str, Any]], *, chunk_bytes: int = 16 << 20) -> None:
        """Keep a large state in many rows, written a chunk at a time (not atomically: name the rows
        so that a later :meth:`write_state` makes them current). Each value is encoded as it comes,
        so the state is never in memory twice."""
        changes, size = WriteBatch(raw_mode=True), 0
        for name, value in values:
            raw = orjson.dumps(value)
            changes.put(_STATE + name.encode(), raw)
            size += len(raw)
            if size >= chunk_bytes:
                self._db.write(changes)
                changes, size = WriteBatch(raw_mode=True), 0
        self._db.write(changes)

    def _read_meta(self, key: bytes) -> Any:
        return read_meta(self._db, key)

    # -- the engine's questions ---------------------------------------------------------------------
    @property
    def ttl(self) -> float | None:
        return self._ttl

    @property
    def clock_ms(self) -> int | None:
        return self._clock_ms

    @property
    def clusters(self) -> Container[str]:
        return _Clusters(self)

    def __len__(self) -> int:
        return self._count

    def __contains__(self, page_id: object) -> bool:
        return isinstance(page_id, str) and self._number_of(page_id) is not None

    def __iter__(self) -> Iterator[IndexEntry]:
        self.commit()
        for _, value in rows_of(self._db, PAGE):
            yield decode_entry(value, keep_shingles=self._keep_shingles)

    def get(self, page_id: str) -> IndexEntry | None:
        page_number = self._number_of(page_id)
        return None if page_number is None else self._entry(page_number)

    def exact(self, content_hash: int) -> IndexEntry | None:
        page_number = self._content(content_hash)
        return None if page_number is None else self._entry(page_number)

    def query(self, band_keys: np.ndarray, scheme: str) -> list[IndexEntry]:
        self._check(scheme, "the probe")
        keys = band_keys.tolist()
        self._load_buckets(keys)
        buckets = self._buckets
        seen: dict[int, None] = {}
        for key in keys:
            bucket = buckets.get(key)
            if bucket:
                for page_number in bucket:
                    seen.setdefault(page_number)
        self._load_entries(list(seen))
        return [self._entries[page_number] for page_number in seen]  # type: ignore[misc]

    def insert(self, entry: IndexEntry) -> None:
        self._check_entry(entry)
        self.remove(entry.id)
        page_number = self._next_number
        self._next_number += 1
        cap, buckets = self.bucket_cap, self._buckets
        self._load_buckets(entry.keys)
        for key in entry.keys:
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [page_number]
                continue
            bucket.append(page_number)
            if len(bucket) > cap:
                pushed = bucket.pop(0)
                self._dropped.append((key, pushed))
                self._evicted(pushed).append(key)
        self._added.append((page_number, entry.band_keys))
        for key in first_keys(entry):
            owner = self._content(key)
            if takes_key(entry, None if owner is None else self._entry(owner)):
                self._set(self._contents, CONTENT + number(key), key, page_number)
        self._set(self._numbers, PAGE_ID + entry.id.encode(), entry.id, page_number)
        self._set(self._entries, PAGE + number(page_number), page_number, entry)
        self._cluster_add(entry.cluster_id, 1)
        if self._ttl is not None and entry.event_time is not None:
            self._writes[expiry_key(entry.event_time, page_number)] = b""
            if self._earliest is not None and entry.event_time < self._earliest:
                self._earliest = entry.event_time
        self._count += 1

    def remove(self, page_id: str) -> bool:
        page_number = self._number_of(page_id)
        if page_number is None:
            return False
        entry = self._entry(page_number)
        assert entry is not None, f"page {page_id!r} is numbered {page_number} but has no entry"
        self._unindex(page_number, entry)
        return True

    def advance(self, clock_ms: int | None) -> int:
        if clock_ms is None or (self._clock_ms is not None and clock_ms <= self._clock_ms):
            return 0
        self._clock_ms = clock_ms
        if self._ttl is None:
            return 0
        horizon = clock_ms / 1000.0 - self._ttl
        if self._earliest is not None and horizon <= self._earliest:
            return 0
        due = self._due(horizon)
        self._load_entries([page_number for _, page_number in due])
        leaving = [entry.band_keys for _, n in due if (entry := self._entries[n]) is not None]
        if leaving:
            self._load_buckets(np.concatenate(leaving).tolist())
        for _, page_number in due:
            entry = self._entries[page_number]
            assert isinstance(entry, IndexEntry)
            self._unindex(page_number, entry)
        return len(due)

    # -- batching -----------------------------------------------------------------------------------
    def prefetch(
        self, ids: Sequence[str], content_hashes: Sequence[int], band_keys: Sequence[np.ndarray]
    ) -> None:
        keys = np.concatenate(band_keys).tolist() if band_keys else []
        self._load_buckets(keys)
        self._read_many(self._numbers, PAGE_ID, [i for i in set(ids) if i not in self._numbers], _page_number)
        wanted = [h for h in set(content_hashes) if h not in self._contents]
        self._read_many(self._contents, CONTENT, wanted, _page_number)
        # the candidates of these pages' keys: the overlay may hold earlier parts of the micro-batch
        buckets = self._buckets
        candidates = {n for key in keys for n in buckets.get(key, ())}
        candidates.update(n for i in ids if (n := self._numbers[i]) is not None)
        candidates.update(n for h in content_hashes if (n := self._contents[h]) is not None)
        self._load_entries(list(candidates))
        # the clusters the pages may join, and the names they may found
        names = {e.cluster_id for n in candidates if (e := self._entries[n]) is not None}
        names.update(ids)
        self._read_many(self._clusters, CLUSTER, [c for c in names if c not in self._clusters], _size)

    def commit(self, changes: WriteBatch | None = None) -> None:
        """The micro-batch's writes, with ``changes`` given by the caller, in one atomic write.
        While :attr:`deferring`, the engine's commits leave the micro-batch in the overlay, for its
        owner to take with :meth:`take_rows` (the stream writes its changelog first)."""
        if self.deferring and changes is None:
            return
        self.write_rows(self.take_rows(), changes)

    def take_rows(self) -> list[Row]:
        """The rows the micro-batch changed (a value of None deletes its key), for the caller to
        write (:meth:`write_rows`); the overlay starts afresh, and the buckets in memory follow
        the micro-batch at once, so nothing may read the window before the rows are written."""
        rows: list[Row] = []
        for page_number, pushed in self._evictions.items():
            rows.append((EVICTED + number(page_number), pack_numbers(pushed) if pushed else None))
        for row, value in self._writes.items():
            rows.append((row, encode_entry(value) if isinstance(value, IndexEntry) else value))
        counters = {"pages": self._count, "next": self._next_number, "clock": self._clock_ms}
        rows.append((_COUNTERS, orjson.dumps(counters)))
        if self._added:
            pages, keys = zip(*self._added, strict=True)
            self._bands.add(np.concatenate(keys), np.repeat(pages, [k.size for k in keys]))
        if self._dropped:
            dropped = np.asarray(self._dropped, dtype=np.uint64)
            self._bands.discard(dropped[:, 0], dropped[:, 1])
        self._reset_overlay()
        return rows

    def write_rows(self, rows: Iterable[Row], changes: WriteBatch | None = None) -> None:
        """Write ``rows`` (and ``changes``) in one atomic write."""
        changes = changes if changes is not None else WriteBatch(raw_mode=True)
        _into(changes, rows)
        self._db.write(changes)

    @staticmethod
    def state_rows(values: Iterable[tuple[str, Any]]) -> list[Row]:
        """Rows of other state kept beside the window (:meth:`read_state`); None deletes one."""
        return [
            (_STATE + name.encode(), None if value is None else orjson.dumps(value)) for name, value in values
        ]

    def rows(self) -> Iterator[Row]:
        """Every row of the directory in key order, as written (a copy of it is the window)."""
        return cast("Iterator[Row]", rows_of(self._db, b""))

    def rows_from(self, start: bytes, limit_bytes: int) -> tuple[list[Row], bytes | None]:
        """Rows in key order from ``start``, about ``limit_bytes`` of them, and the key to go on
        from (None: these were the last)."""
        taken: list[Row] = []
        size = 0
        iterator = self._db.iter()
        iterator.seek(start)
        while iterator.valid():
            key = iterator.key()
            if size >= limit_bytes:
                return taken, key
            value = iterator.value()
            taken.append((key, value))
            size += len(key) + len(value)
            iterator.next()
        iterator.status()
        return taken, None

    # -- rows, through the overlay -------------------------------------------------------------------
    def _reset_overlay(self) -> None:
        self._buckets: dict[int, list[int]] = {}  # as the micro-batch leaves them (absent: empty)
        self._known: set[int] = set()  # the band keys whose buckets are in ``_buckets``
        self._added: list[tuple[int, np.ndarray]] = []  # pages indexed: (page number, band keys)
        self._dropped: list[tuple[int, int]] = []  # (band key, page number) pairs out of buckets
        self._evictions: dict[int, list[int]] = {}  # page number -> band keys the cap pushed it out of
        self._entries: dict[int, IndexEntry | None] = {}
        self._numbers: dict[str, int | None] = {}
        self._contents: dict[int, int | None] = {}
        self._clusters: dict[str, int] = {}
        self._writes: dict[bytes, Any] = {}  # key -> bytes, an entry, or None (delete)

    def _read_many(self, cache: dict[Any, Any], table: bytes, names: list[Any], decode: Any) -> None:
        if not names:
            return
        rows = self._get_many([table + _key_part(name) for name in names])
        for name, raw in zip(names, rows, strict=True):
            cache[name] = decode(raw)

    def _get_many(self, keys: list[Any]) -> list[bytes | None]:
        """One multi-get: the value of each key, None where it has none."""
        return cast("list[bytes | None]", self._db.get(keys))

    def _set(self, cache: dict[Any, Any], key: bytes, name: Any, value: Any) -> None:
        cache[name] = value
        if value is None:
            self._writes[key] = None
        elif isinstance(value, int):
            self._writes[key] = number(value)
        else:
            self._writes[key] = value

    def _row(self, cache: dict[Any, Any], table: bytes, name: Any, decode: Any) -> Any:
        """A row through the overlay: read once, then as the micro-batch left it."""
        if name not in cache:
            cache[name] = decode(self._db.get(table + _key_part(name)))
        return cache[name]

    def _load_buckets(self, keys: list[int]) -> None:
        """Bring the buckets of ``keys`` into the micro-batch, those not there yet in one probe of
        the table (after a prefetch, a page's are all there)."""
        known = self._known
        missing = [key for key in keys if key not in known]
        if missing:
            self._buckets.update(self._bands.buckets(np.array(missing, dtype=np.uint64)))
            known.update(missing)

    def _evicted(self, page_number: int) -> list[int]:
        """The band keys whose buckets the cap pushed this page out of (the micro-batch's list)."""
        if page_number not in self._evictions:
            self._evictions[page_number] = numbers(self._db.get(EVICTED + number(page_number)))
        return self._evictions[page_number]

    def _number_of(self, page_id: str) -> int | None:
        found: int | None = self._row(self._numbers, PAGE_ID, page_id, _page_number)
        return found

    def _content(self, content_hash: int) -> int | None:
        found: int | None = self._row(self._contents, CONTENT, content_hash, _page_number)
        return found

    def _entry(self, page_number: int) -> IndexEntry | None:
        self._load_entries([page_number])
        return self._entries[page_number]

    def _load_entries(self, page_numbers: list[int]) -> None:
        missing = [n for n in page_numbers if n not in self._entries]
        if not missing:
            return
        rows = self._get_many([PAGE + number(n) for n in missing])
        keep = self._keep_shingles
        for page_number, raw in zip(missing, rows, strict=True):
            self._entries[page_number] = None if raw is None else decode_entry(raw, keep_shingles=keep)

    def _cluster_size(self, cluster_id: str) -> int:
        size: int = self._row(self._clusters, CLUSTER, cluster_id, _size)
        return size

    def _cluster_add(self, cluster_id: str, change: int) -> None:
        size = self._cluster_size(cluster_id) + change
        self._clusters[cluster_id] = size
        self._writes[CLUSTER + cluster_id.encode()] = number(size) if size else None

    def _unindex(self, page_number: int, entry: IndexEntry) -> None:
        self._load_buckets(entry.keys)
        for key in entry.keys:
            bucket = self._buckets.get(key)
            if bucket and page_number in bucket:  # unless the cap pushed it out already
                bucket.remove(page_number)
                self._dropped.append((key, page_number))
        self._evictions[page_number] = []  # its row goes with it
        for key in first_keys(entry):
            if self._content(key) == page_number:
                self._set(self._contents, CONTENT + number(key), key, None)
        self._set(self._numbers, PAGE_ID + entry.id.encode(), entry.id, None)
        self._set(self._entries, PAGE + number(page_number), page_number, None)
        self._cluster_add(entry.cluster_id, -1)
        if entry.event_time is not None and self._ttl is not None:
            self._writes[expiry_key(entry.event_time, page_number)] = None
        self._count -= 1

    def _due(self, horizon: float) -> list[tuple[bytes, int]]:
        """Pages whose event time is before ``horizon``, in expiry order, from the disk and the
        overlay; sets the earliest event time left."""
        found: dict[bytes, int] = {}
        iterator = self._db.iter()
        iterator.seek(EXPIRY)
        earliest: float | None = None
        while iterator.valid():
            key = iterator.key()
            if key[:1] != EXPIRY:
                break
            if self._writes.get(key, b"") is not None:  # not deleted in the overlay
                stamp = expiry_time(key)
                if stamp >= horizon:
                    earliest = stamp
                    break
                found[key] = int.from_bytes(key[9:], "big")
            iterator.next()
        for key, value in self._writes.items():
            if value is None or key[:1] != EXPIRY:
                continue
            stamp = expiry_time(key)
            if stamp < horizon:
                found[key] = int.from_bytes(key[9:], "big")
            elif earliest is None or stamp < earliest:
                earliest = stamp
        self._earliest = earliest if earliest is not None else horizon
        return sorted(found.items())


def read_state_of(path: str | os.PathLike[str], name: str) -> Any:
    """A state row of a window directory that is not open (None: no such row, or no directory)."""
    if not Path(path).is_dir():
        return None
    db = _open(path, 8 << 20)
    try:
        return read_meta(db, _STATE + name.encode())
    finally:
        db.close()


def write_rows(path: str | os.PathLike[str], rows: Iterable[Row], *, batch_bytes: int = 16 << 20) -> None:
    """Write rows into a window directory that is not open (a copy being rebuilt), in atomic
    writes of about ``batch_bytes``; the directory is created if missing."""
    db = _open(path, 16 << 20)
    try:
        batch: list[Row] = []
        size = 0
        for row in rows:
            batch.append(row)
            size += len(row[0]) + len(row[1] or b"")
            if size >= batch_bytes:
                db.write(_into(WriteBatch(raw_mode=True), batch))
                batch, size = [], 0
        db.write(_into(WriteBatch(raw_mode=True), batch))
    finally:
        db.close()


def _into(changes: WriteBatch, rows: Iterable[Row]) -> WriteBatch:
    """``changes`` with ``rows`` put in it (a value of None deletes its key)."""
    for key, value in rows:
        if value is None:
            changes.delete(key)
        else:
            changes.put(key, value)
    return changes


def _open(path: str | os.PathLike[str], cache_bytes: int) -> Rdict:
    """The directory's database, its tables written with bloom filters.

    Reopening a database, rocksdict takes the default column family's options from the OPTIONS
    file it finds unless they are given, and the bloom filter does not survive that file (its
    policy is saved by name only). Every table written after a reopen then had none, so each read
    of a missing key (most reads: sentence openings the window does not hold) read a data block of
    every table: 130 µs a read at 300,000 pages, 40 times the cost with filters."""
    options = _options(cache_bytes)
    return Rdict(str(path), options, column_families={"default": options})


def _options(cache_bytes: int) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_write_buffer_size(32 << 20)
    table = BlockBasedOptions()
    table.set_bloom_filter(10, False)
    table.set_block_cache(Cache(cache_bytes))
    table.set_cache_index_and_filter_blocks(True)
    options.set_block_based_table_factory(table)
    return options


def _key_part(name: Any) -> bytes:
    return name.encode() if isinstance(name, str) else number(name)


def _size(raw: bytes | None) -> int:
    return 0 if raw is None else int.from_bytes(raw, "big")


def _page_number(raw: bytes | None) -> int | None:
    return None if raw is None else int.from_bytes(raw, "big")
