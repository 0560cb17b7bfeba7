"""Batch's LSH index: the band window over whole signatures, plus what batch keeps of each page (its
decision, its cluster) and the guard against signatures of another scheme.

:class:`WindowIndex` is what the engine (:class:`~.dedup.Deduplicator`) asks of an index; it has
two stores. :class:`LSHIndex` keeps everything in memory (:mod:`.window`); the disk store,
:class:`stream_lsh.stores.DiskIndex`, keeps it in RocksDB so that the window can outgrow memory.
Both keep the same tables by the same rules, so an engine decides alike over either.

Memory per indexed page (num_perm=128, b=43 bands, measured by ``benchmarks/bench_batch.py``):
about 6.7 KiB without the boilerplate learner: the signature (512 bytes of uint32) and band keys,
the entry and its decision, and one list slot plus, for a new key, one dict entry in the table.
``verify="jaccard"`` adds the shingle set (8 bytes per shingle).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import StateMismatchError
from .banding import Banding
from .decision import Decision
from .names import NO_NAMES, NameSketch
from .scheme import Scheme
from .window import BandWindow

__all__ = ["IndexEntry", "LSHIndex", "WindowIndex"]


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
    decision: Decision | None = None  # the decision given when the page was indexed (replayed on redelivery)
    opening: int = 0  # its opening key (.opening); 0: none
    headline: int = 0  # its headline key (.headline); 0: none
    site_headline: int = 0  # its headline key at its site (.headline.site_headline_key); 0: none
    site: int = 0  # its site's key (.page.site_key); 0: no site, or indexed before sites were kept
    names: NameSketch = NO_NAMES  # the names its article gives (.names); none before they were kept
    keys: list[int] = field(init=False, repr=False)  # the band keys as Python ints, for the window

    def __post_init__(self) -> None:
        self.keys = self.band_keys.tolist()


class WindowIndex(ABC):
    """What the engine asks of the window of indexed pages, whichever store holds it.

    A store may defer its writes: the engine tells it which pages a micro-batch will touch
    (:meth:`prefetch`, so that a disk store reads them in one round trip) and when the micro-batch
    is whole (:meth:`commit`, so that a disk store writes it in one atomic batch). In between,
    reads see the micro-batch's own writes. The memory store needs neither.
    """

    def __init__(self, scheme: Scheme, banding: Banding) -> None:
        if banding.num_perm != scheme.num_perm:
            raise ValueError(f"banding is for {banding.num_perm} values, scheme has {scheme.num_perm}")
        self.evicted = 0  # ids the bucket cap has pushed out of their buckets (a sign of hot buckets)
        self.scheme = scheme
        self.banding = banding

    @property
    @abstractmethod
    def ttl(self) -> float | None:
        """Seconds of event time a page stays indexed (None: forever)."""

    @property
    @abstractmethod
    def clock_ms(self) -> int | None:
        """The newest clock seen: it moves the window."""

    @property
    @abstractmethod
    def clusters(self) -> Container[str]:
        """The ids of the clusters with an indexed page (a founder's name must not be one)."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[IndexEntry]:
        """The entries in the order they were indexed."""

    @abstractmethod
    def get(self, page_id: str) -> IndexEntry | None: ...

    @abstractmethod
    def exact(self, content_hash: int) -> IndexEntry | None:
        """The earliest indexed page with this content hash, if any (MMDS sec. 3.9.1)."""

    def opening(self, key: int) -> IndexEntry | None:
        """The earliest indexed page whose article opens as ``key`` says (:mod:`.opening`), or
        whose headline key it is (:mod:`.headline`). Both keys live in the exact-content map beside
        content hashes, each tagged so that it never equals another kind, so every store finds
        them as it finds exact copies."""
        return self.exact(key)

    @abstractmethod
    def query(self, band_keys: np.ndarray, scheme: str) -> list[IndexEntry]:
        """Entries sharing at least one band with these keys, in the order met, each once.

        ``scheme`` is the fingerprint the keys were made under; another scheme is refused.
        """

    @abstractmethod
    def insert(self, entry: IndexEntry) -> None:
        """Index a page; re-inserting an id replaces its previous entry. Another scheme is refused."""

    @abstractmethod
    def remove(self, page_id: str) -> bool:
        """Unindex a page; False if it was not indexed."""

    @abstractmethod
    def advance(self, clock_ms: int | None) -> int:
        """Move the clock (milliseconds, only forward); pages older than the window leave.

        Returns how many left."""

    def prefetch(  # noqa: B027 - a hook: the memory store has nothing to read ahead
        self, ids: Sequence[str], content_hashes: Sequence[int], band_keys: Sequence[np.ndarray]
    ) -> None:
        """The pages of a micro-batch are about to be decided: a store may read what they touch."""

    def commit(self) -> None:  # noqa: B027 - a hook: the memory store writes as it goes
        """A micro-batch is decided: a store that defers its writes makes them, atomically."""

    def _check(self, scheme: str, what: str) -> None:
        if scheme != self.scheme.fingerprint:
            raise StateMismatchError(
                f"{what} was signed under scheme {scheme}, but this index holds scheme "
                f"{self.scheme.fingerprint}: "
                "its band keys would be compared with keys of different hash functions"
            )

    def _check_entry(self, entry: IndexEntry) -> None:
        self._check(entry.scheme, f"page {entry.id!r}")
        if entry.signature.shape != (self.scheme.num_perm,):
            raise ValueError(
                f"signature has shape {entry.signature.shape}, expected ({self.scheme.num_perm},)"
            )


class LSHIndex(WindowIndex):
    """The window in memory: band tables plus per-page entries.

    Args:
        scheme: signatures offered must come from this scheme.
        banding: how signatures are cut into bands.
        bucket_cap: most ids kept per bucket (>= 1).
        ttl: seconds of event time a page stays indexed (None: forever).
    """

    def __init__(
        self, scheme: Scheme, banding: Banding, *, bucket_cap: int = 64, ttl: float | None = None
    ) -> None:
        super().__init__(scheme, banding)
        self.window: BandWindow[IndexEntry] = BandWindow(bucket_cap=bucket_cap, ttl=ttl)
        self.cluster_sizes: dict[str, int] = {}  # indexed pages per cluster id

    @property
    def bucket_cap(self) -> int:
        return self.window.bucket_cap

    @property
    def ttl(self) -> float | None:
        return self.window.ttl

    def __len__(self) -> int:
        return len(self.window)

    def __contains__(self, page_id: object) -> bool:
        return page_id in self.window

    def __iter__(self) -> Iterator[IndexEntry]:
        return iter(self.window)

    def get(self, page_id: str) -> IndexEntry | None:
        return self.window.get(page_id)

    def exact(self, content_hash: int) -> IndexEntry | None:
        page_id = self.window.exact(content_hash)
        return None if page_id is None else self.window.get(page_id)

    @property
    def clusters(self) -> Container[str]:
        return self.cluster_sizes

    def query(self, band_keys: np.ndarray, scheme: str) -> list[IndexEntry]:
        self._check(scheme, "the probe")
        entries = self.window.entries
        return [entries[page_id] for page_id in self.window.lookup(enumerate(band_keys.tolist()))]

    def insert(self, entry: IndexEntry) -> None:
        self._check_entry(entry)
        self.remove(entry.id)
        self.evicted += self.window.insert(entry.id, entry)
        self.cluster_sizes[entry.cluster_id] = self.cluster_sizes.get(entry.cluster_id, 0) + 1

    def remove(self, page_id: str) -> bool:
        entry = self.window.remove(page_id)
        if entry is not None:
            self._left(entry)
        return entry is not None

    def _left(self, entry: IndexEntry) -> None:
        remaining = self.cluster_sizes[entry.cluster_id] - 1
        if remaining:
            self.cluster_sizes[entry.cluster_id] = remaining
        else:
            del self.cluster_sizes[entry.cluster_id]

    def advance(self, clock_ms: int | None) -> int:
        left = self.window.advance(clock_ms)
        for entry in left:
            self._left(entry)
        return len(left)

    def expire(self, clock: float) -> int:
        """Remove pages whose event time is older than ``clock - ttl`` (seconds); returns how many."""
        if self.ttl is None:
            return 0
        left = self.window.evict_older_than(clock - self.ttl)
        for entry in left:
            self._left(entry)
        return len(left)

    @property
    def clock_ms(self) -> int | None:
        return self.window.clock_ms

    def bucket_count(self) -> int:
        return len(self.window.buckets)

    def export_tables(self) -> dict[str, Any]:
        """Buckets and the exact-content map as they are (JSON-friendly), for saved state. The expiry
        order is not saved: it is rebuilt from the entries under the loading engine's window."""
        tables = self.window.tables()
        return {"buckets": tables["buckets"], "by_content": tables["by_content"]}

    def restore(self, entries: list[IndexEntry], tables: dict[str, Any], clock_ms: int | None) -> None:
        """Load entries (in the order they were indexed) and tables exported with them."""
        if len(self.window):
            raise ValueError("restore needs an empty index")
        self.window.load({entry.id: entry for entry in entries}, {**tables, "clock": clock_ms})
        for entry in entries:
            self.cluster_sizes[entry.cluster_id] = self.cluster_sizes.get(entry.cluster_id, 0) + 1
