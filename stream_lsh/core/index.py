"""An in-process LSH index over band keys, with eviction by event time.

Per band a dict maps a band key to the ids of the pages that hashed there (MMDS sec. 3.4.1: "the
buckets"). ``query`` returns candidates, ``insert`` and ``remove`` keep buckets and entries in
step, ``expire`` evicts pages older than the window. A bucket holds at most ``bucket_cap`` ids,
dropping its oldest: a bucket that many unrelated pages fall into (a frequent band of boilerplate)
would otherwise make every query pay for all of them, while the newest members of a real cluster
are enough to find it.

Memory per indexed page (num_perm=128, b=36 bands, measured by ``benchmarks/bench_batch.py``):
about 5.8 KiB: the signature (512 bytes of uint32) and band keys, the entry and its decision, and one
list slot plus, for a new key, one dict entry in each band. ``verify="jaccard"`` adds the shingle set
(8 bytes per shingle).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from .banding import Banding
from ..errors import StateMismatchError
from .scheme import Scheme

__all__ = ["IndexEntry", "LSHIndex"]


@dataclass
class IndexEntry:
    """One indexed page."""

    id: str
    signature: np.ndarray
    band_keys: np.ndarray
    cluster_id: str
    event_time: float | None  # None: no time (a file's lines before its clock starts): never expires
    content_hash: int
    scheme: str  # fingerprint of the scheme the signature was made under
    body_hash: int = 0
    shingles: np.ndarray | None = None
    decision: Any = None  # the Decision given when the page was indexed (replayed on redelivery)
    _keys: list[int] = field(default_factory=list, repr=False)


class LSHIndex:
    """Band tables plus per-page entries.

    Args:
        scheme: signatures offered must come from this scheme.
        banding: how signatures are cut into bands.
        bucket_cap: most ids kept per bucket (>= 1).
        ttl: seconds of event time a page stays indexed (None: forever).
    """

    def __init__(self, scheme: Scheme, banding: Banding, *, bucket_cap: int = 64, ttl: float | None = None) -> None:
        if banding.num_perm != scheme.num_perm:
            raise ValueError(f"banding is for {banding.num_perm} values, scheme has {scheme.num_perm}")
        if bucket_cap < 1:
            raise ValueError(f"bucket_cap must be >= 1, got {bucket_cap}")
        if ttl is not None and ttl <= 0:
            raise ValueError(f"ttl must be positive seconds or None, got {ttl}")
        self.scheme = scheme
        self.banding = banding
        self.bucket_cap = bucket_cap
        self.ttl = ttl
        self._tables: list[dict[int, list[str]]] = [{} for _ in range(banding.bands)]
        self._entries: dict[str, IndexEntry] = {}
        self._by_content: dict[int, str] = {}
        self._expiry: list[tuple[float, int, str]] = []
        self._sequence = 0
        self.cluster_sizes: dict[str, int] = {}  # indexed pages per cluster id

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, page_id: object) -> bool:
        return page_id in self._entries

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self._entries.values())

    def get(self, page_id: str) -> IndexEntry | None:
        return self._entries.get(page_id)

    def exact(self, content_hash: int) -> IndexEntry | None:
        """The earliest indexed page with this content hash, if any (MMDS sec. 3.9.1)."""
        page_id = self._by_content.get(content_hash)
        return self._entries.get(page_id) if page_id is not None else None

    def _check(self, scheme: str, what: str) -> None:
        if scheme != self.scheme.fingerprint:
            raise StateMismatchError(
                f"{what} was signed under scheme {scheme}, but this index holds scheme {self.scheme.fingerprint}: "
                "its band keys would be compared with keys of different hash functions"
            )

    def query(self, band_keys: np.ndarray, scheme: str) -> list[IndexEntry]:
        """Entries sharing at least one band with these keys, in first-seen order, each once.

        ``scheme`` is the fingerprint the keys were made under; another scheme is refused.
        """
        self._check(scheme, "the probe")
        seen: dict[str, None] = {}
        for table, key in zip(self._tables, band_keys.tolist()):
            bucket = table.get(key)
            if bucket:
                seen.update(dict.fromkeys(bucket))
        return [self._entries[page_id] for page_id in seen]

    def insert(self, entry: IndexEntry) -> None:
        """Index a page; re-inserting an id replaces its previous entry. Another scheme is refused."""
        self._check(entry.scheme, f"page {entry.id!r}")
        if entry.signature.shape != (self.scheme.num_perm,):
            raise ValueError(f"signature has shape {entry.signature.shape}, expected ({self.scheme.num_perm},)")
        if entry.id in self._entries:
            self.remove(entry.id)
        entry._keys = entry.band_keys.tolist()
        for table, key in zip(self._tables, entry._keys):
            bucket = table.setdefault(key, [])
            bucket.append(entry.id)
            if len(bucket) > self.bucket_cap:
                del bucket[0]
        self._entries[entry.id] = entry
        self._by_content.setdefault(entry.content_hash, entry.id)
        self.cluster_sizes[entry.cluster_id] = self.cluster_sizes.get(entry.cluster_id, 0) + 1
        self._schedule(entry)

    def _schedule(self, entry: IndexEntry) -> None:
        if self.ttl is not None and entry.event_time is not None:
            self._sequence += 1
            heapq.heappush(self._expiry, (entry.event_time, self._sequence, entry.id))

    def remove(self, page_id: str) -> bool:
        """Unindex a page; False if it was not indexed."""
        entry = self._entries.pop(page_id, None)
        if entry is None:
            return False
        for table, key in zip(self._tables, entry._keys):
            bucket = table.get(key)
            if bucket is None:
                continue
            try:
                bucket.remove(page_id)
            except ValueError:  # already pushed out by the bucket cap
                pass
            if not bucket:
                del table[key]
        if self._by_content.get(entry.content_hash) == page_id:
            del self._by_content[entry.content_hash]
        remaining = self.cluster_sizes[entry.cluster_id] - 1
        if remaining:
            self.cluster_sizes[entry.cluster_id] = remaining
        else:
            del self.cluster_sizes[entry.cluster_id]
        return True

    def expire(self, clock: float) -> int:
        """Remove pages whose event time is older than ``clock - ttl``; returns how many."""
        if self.ttl is None:
            return 0
        horizon = clock - self.ttl
        removed = 0
        while self._expiry and self._expiry[0][0] < horizon:
            event_time, _, page_id = heapq.heappop(self._expiry)
            entry = self._entries.get(page_id)
            if entry is not None and entry.event_time == event_time and self.remove(page_id):
                removed += 1
        return removed

    def bucket_count(self) -> int:
        return sum(len(table) for table in self._tables)

    def export_tables(self) -> dict[str, Any]:
        """Buckets and the exact-content map as they are (JSON-friendly), for saved state.

        They are saved rather than rebuilt from the entries because the bucket cap and removals
        make them history-dependent: a page pushed out of a full bucket must stay out.
        """
        return {
            "buckets": [[[key, list(ids)] for key, ids in table.items()] for table in self._tables],
            "by_content": [[content, page_id] for content, page_id in self._by_content.items()],
        }

    def restore(self, entries: list[IndexEntry], tables: dict[str, Any]) -> None:
        """Load entries and tables exported from an index of the same scheme and banding."""
        if self._entries:
            raise ValueError("restore needs an empty index")
        for entry in entries:
            entry._keys = entry.band_keys.tolist()
            self._entries[entry.id] = entry
            self.cluster_sizes[entry.cluster_id] = self.cluster_sizes.get(entry.cluster_id, 0) + 1
            self._schedule(entry)
        self._tables = [{int(key): list(ids) for key, ids in table} for table in tables["buckets"]]
        self._by_content = {int(content): page_id for content, page_id in tables["by_content"]}
