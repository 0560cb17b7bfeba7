"""Band tables over a window of event time: the one store of indexed pages, batch's and the stream's.

The engine's window in memory (:class:`.index.LSHIndex`, every band key of every page) keeps:

* **buckets** (MMDS sec. 3.4.1): band key -> ids of the pages that hashed there, oldest first. Band
  keys mix in their band number (:meth:`.banding.Banding.band_keys`), so all bands share one
  table. A bucket keeps its ``bucket_cap`` newest ids: a bucket that many unrelated pages fall
  into (a frequent band of boilerplate) would otherwise make every query pay for all of them,
  while the newest members of a real cluster are enough to find it.
* **the exact-content map** (sec. 3.9.1): content hash -> the earliest indexed page with it; and
  opening key -> the earliest indexed page whose article opens so (:mod:`.opening`); headline key
  -> the earliest indexed page with that headline (:mod:`.headline`);
* **the window**: the clock (:mod:`.clock`, never the wall clock) only moves forward; when it
  passes a page's event time plus ``ttl``, the page leaves. A page without event time (a file's
  lines before its clock starts) never expires; a page re-inserted with another time is expired
  by its newest one.

Buckets and the map are kept as they are, not rebuilt from the entries, because the cap and
removals make them history-dependent: a page pushed out of a full bucket stays out.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["BandWindow", "Indexed", "check_window", "first_keys", "takes_key"]


def check_window(bucket_cap: int, ttl: float | None) -> None:
    """Refuse a bucket cap or a window that no store of the window can keep."""
    if not isinstance(bucket_cap, int) or bucket_cap < 1:
        raise ValueError(f"bucket_cap must be an integer >= 1, got {bucket_cap!r}")
    if ttl is not None and ttl <= 0:
        raise ValueError(f"ttl must be positive seconds or None, got {ttl}")


class Indexed(Protocol):
    """What the window needs of an entry: its keys here, its content hash, opening and headline
    keys, and its event time."""

    @property
    def keys(self) -> list[int]: ...

    @property
    def content_hash(self) -> int | None: ...

    @property
    def opening(self) -> int: ...

    @property
    def headline(self) -> int: ...

    @property
    def site_headline(self) -> int: ...

    @property
    def event_time(self) -> float | None: ...


E = TypeVar("E", bound=Indexed)


def takes_key(entry: Indexed, owner: Indexed | None) -> bool:
    """Whether an entry becomes the page that one of its first keys names, over ``owner``, the
    page it names now: the first page with the key does, and so does a page with band keys over a
    keyed page's (.keyed). A keyed page founds a cluster only when nothing could take it; a story
    that came after it and joined another cluster by its text is the better original for the cards
    that follow (one keyed card would otherwise split them from their story's cluster)."""
    return owner is None or (bool(entry.keys) and not owner.keys)


def first_keys(entry: Indexed) -> list[int]:
    """The keys under which the exact-content map remembers the earliest page: its content hash,
    and its opening and headline keys (the latter also at its site) if it has them. An entry with
    no band keys is a keyed page's (.keyed), found by its opening and headline only."""
    keys = [] if entry.content_hash is None or not entry.keys else [entry.content_hash]
    if entry.opening:
        keys.append(entry.opening)
    if entry.headline:
        keys.append(entry.headline)
    if entry.site_headline:
        keys.append(entry.site_headline)
    return keys


class BandWindow(Generic[E]):
    """Buckets, the exact-content map and the expiry of indexed entries (see the module doc).

    Args:
        bucket_cap: most ids kept per bucket (>= 1).
        ttl: seconds of event time a page stays (None: forever).
    """

    def __init__(self, *, bucket_cap: int, ttl: float | None) -> None:
        check_window(bucket_cap, ttl)
        self.bucket_cap = bucket_cap
        self.ttl = ttl
        self.entries: dict[str, E] = {}
        self.buckets: dict[int, list[str]] = {}
        self.by_content: dict[int, str] = {}
        self.clock_ms: int | None = None  # the newest clock seen: it moves the window
        self._expiry: list[tuple[float, int, str]] = []  # (event time, sequence, id); stale items are skipped
        self._sequence = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, page_id: object) -> bool:
        return page_id in self.entries

    def __iter__(self) -> Iterator[E]:
        return iter(self.entries.values())

    def get(self, page_id: str) -> E | None:
        return self.entries.get(page_id)

    def exact(self, content_hash: int | None) -> str | None:
        """The earliest indexed page with this content hash, if any."""
        return None if content_hash is None else self.by_content.get(content_hash)

    def lookup(self, keys: Iterable[tuple[int, int]]) -> dict[str, tuple[int, int]]:
        """Pages sharing a bucket with ``(band, key)`` pairs: id -> where it was met first, ``(band,
        position in that bucket)``, in the order met, each once. The order is what breaks ties
        between equally similar candidates, in batch and across band partitions alike."""
        seen: dict[str, tuple[int, int]] = {}
        buckets = self.buckets
        for band, key in keys:
            bucket = buckets.get(key)
            if bucket:
                for position, page_id in enumerate(bucket):
                    if page_id not in seen:
                        seen[page_id] = (band, position)
        return seen

    def insert(self, page_id: str, entry: E) -> int:
        """Index a page (an id already indexed is removed first); returns how many ids the bucket
        cap pushed out of their buckets to make room (a sign of hot buckets)."""
        if page_id in self.entries:
            self.remove(page_id)
        cap, buckets = self.bucket_cap, self.buckets
        evicted = 0
        for key in entry.keys:
            bucket = buckets.get(key)
            if bucket is None:
                buckets[key] = [page_id]
                continue
            bucket.append(page_id)
            if len(bucket) > cap:
                del bucket[0]
                evicted += 1
        for key in first_keys(entry):
            owner = self.by_content.get(key)
            if takes_key(entry, None if owner is None else self.entries.get(owner)):
                self.by_content[key] = page_id
        self.entries[page_id] = entry
        self._schedule(page_id, entry)
        return evicted

    def remove(self, page_id: str) -> E | None:
        """Unindex a page; returns its entry, None if it was not indexed."""
        entry = self.entries.pop(page_id, None)
        if entry is None:
            return None
        for key in entry.keys:
            bucket = self.buckets.get(key)
            if bucket is None:
                continue
            if page_id in bucket:  # unless the cap pushed it out already
                bucket.remove(page_id)
            if not bucket:
                del self.buckets[key]
        for key in first_keys(entry):
            if self.by_content.get(key) == page_id:
                del self.by_content[key]
        return entry

    def advance(self, clock_ms: int | None) -> list[E]:
        """Move the clock forward (never back); returns the entries that left the window."""
        if clock_ms is None or (self.clock_ms is not None and clock_ms <= self.clock_ms):
            return []
        self.clock_ms = clock_ms
        return [] if self.ttl is None else self.evict_older_than(clock_ms / 1000.0 - self.ttl)

    def evict_older_than(self, horizon: float) -> list[E]:
        """Remove the entries whose event time is before ``horizon`` (seconds); returns them."""
        left = []
        while self._expiry and self._expiry[0][0] < horizon:
            stamp, _, page_id = heapq.heappop(self._expiry)
            entry = self.entries.get(page_id)
            if entry is not None and entry.event_time == stamp:  # not re-inserted since with another time
                self.remove(page_id)
                left.append(entry)
        return left

    def _schedule(self, page_id: str, entry: E) -> None:
        if self.ttl is not None and entry.event_time is not None:
            self._sequence += 1
            heapq.heappush(self._expiry, (entry.event_time, self._sequence, page_id))

    # -- durable form ---------------------------------------------------------------------------
    def tables(self) -> dict[str, Any]:
        """Everything but the entries, as JSON-friendly data: the owner saves its entries its own way."""
        return {
            "buckets": [[key, ids] for key, ids in self.buckets.items()],
            "by_content": [[content_hash, page_id] for content_hash, page_id in self.by_content.items()],
            "clock": self.clock_ms,
            "expiry": [list(item) for item in self._expiry],
            "sequence": self._sequence,
        }

    def load(self, entries: dict[str, E], tables: dict[str, Any]) -> None:
        """Replace the state with entries (in the order they were indexed) and :meth:`tables`
        saved with them. Tables saved without the expiry heap get it rebuilt from the entries, under
        this window's ``ttl`` (batch's state files: they may be loaded with another window)."""
        self.entries = entries
        self.buckets = {int(key): list(ids) for key, ids in tables["buckets"]}
        self.by_content = {int(content_hash): page_id for content_hash, page_id in tables["by_content"]}
        self.clock_ms = tables["clock"]
        if "expiry" in tables:
            self._expiry = [(stamp, sequence, page_id) for stamp, sequence, page_id in tables["expiry"]]
            self._sequence = tables["sequence"]
        else:
            self._expiry, self._sequence = [], 0
            for page_id, entry in entries.items():
                self._schedule(page_id, entry)
