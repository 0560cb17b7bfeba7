"""The band buckets of a window on disk, kept in memory in ~0.7 KiB per page.

A page has one key per band (43 with the defaults), and deciding a page reads the bucket of every
one of them. Read from RocksDB, that is 43 point reads a page, and each costs a few microseconds in
Python even when RocksDB's bloom filter answers it: more than the whole budget of a decide step
that should carry thousands of pages a second. Written back, every changed bucket is a row
rewritten. So the disk window keeps its buckets here instead, and RocksDB keeps only what they are
built from: each page's band keys (in its entry) and which of them the bucket cap pushed out.

:class:`BandTable` is a multimap from band key to page numbers, one *(key, page number)* pair per
slot of two numpy arrays (8 + 4 bytes), with open addressing and linear probing: a key's pairs lie
in the run of slots that starts at its home slot and ends at the first empty one. Every operation
takes a whole micro-batch of keys and probes them together, one vectorised step per slot of the
longest run, so Python's per-key cost is paid once per batch, not once per key.

* A bucket's order is its page numbers' order. The disk window numbers pages as it indexes them
  and never reuses a number, so that is the order of insertion the memory window keeps.
* A removed pair leaves a tombstone (its run must not end there). When live pairs and tombstones
  fill :data:`MAX_LOAD` of the slots, the table is rebuilt from its live pairs alone, sized for
  :data:`REBUILT_LOAD`. A table may have any number of slots (a key's home slot is its hash scaled
  to the size, not masked), so it holds 43 pairs a page at 12 bytes a slot and a load of 0.6-0.8:
  0.6-0.85 KiB a page.
* A rebuild places the pairs in one pass per chunk of home slots (see :meth:`BandTable._fill`),
  so it needs about twice the table's memory while it runs, and time in proportion to the pairs
  (seconds at a million pages: it happens once per third more pages, or per third of the window
  replaced).
* Page numbers are 32-bit: four billion indexed pages before a store must be rebuilt.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_LOAD", "REBUILT_LOAD", "BandTable"]

#: Live pairs and tombstones may fill this share of the slots before the table is rebuilt.
MAX_LOAD = 0.8
#: A rebuilt table holds its live pairs at this load.
REBUILT_LOAD = 0.6
_MIN_SLOTS = 16
_CHUNKS = 8  # a rebuild sorts the pairs of one eighth of the home slots at a time
_EMPTY = np.uint32(0)  # page numbers start at 1
_GONE = np.uint32(0xFFFFFFFF)  # a removed pair
_LARGEST_PAGE = 0xFFFFFFFE
_FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # multiplicative hashing spreads structured keys
_32 = np.uint64(32)


class BandTable:
    """Band key -> page numbers, in memory (see the module doc).

    Args:
        capacity: slots to start with; the table grows as needed.
    """

    def __init__(self, capacity: int = 1 << 12) -> None:
        self._allocate(max(_MIN_SLOTS, int(capacity)))

    def _allocate(self, slots: int) -> None:
        self._keys = np.zeros(slots, np.uint64)
        self._pages = np.zeros(slots, np.uint32)
        self._size = np.uint64(slots)
        self._live = 0
        self._used = 0  # live pairs and tombstones

    def __len__(self) -> int:
        """Live (key, page number) pairs."""
        return self._live

    @property
    def slots(self) -> int:
        return int(self._pages.size)

    @property
    def nbytes(self) -> int:
        """Memory the table's arrays take."""
        return int(self._keys.nbytes + self._pages.nbytes)

    @classmethod
    def of_pairs(cls, keys: np.ndarray, pages: np.ndarray) -> BandTable:
        """A table holding these (key, page number) pairs at :data:`REBUILT_LOAD`, built in one
        pass (opening a window directory)."""
        keys, pages_in = _checked(keys, pages)
        table = cls(_MIN_SLOTS)
        table._fill(keys, pages_in, _slots_for(keys.size))
        return table

    # -- questions ---------------------------------------------------------------------------------
    def buckets(self, keys: np.ndarray) -> dict[int, list[int]]:
        """The bucket of each key that has one: key -> its page numbers, oldest first."""
        keys = np.unique(np.asarray(keys, dtype=np.uint64))
        found_at, found_pages = self._find(keys)
        if not found_at.size:
            return {}
        order = np.lexsort((found_pages, found_at))
        found_at, found_pages = found_at[order], found_pages[order]
        starts = np.flatnonzero(np.r_[True, found_at[1:] != found_at[:-1]])
        bounds = np.r_[starts, found_at.size].tolist()
        which = keys[found_at[starts]].tolist()
        pages = found_pages.tolist()
        return {key: pages[bounds[i] : bounds[i + 1]] for i, key in enumerate(which)}

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every live pair, as (keys, page numbers), by page number then key."""
        keys, pages = self._live_pairs()
        order = np.lexsort((keys, pages))
        return keys[order], pages[order]

    # -- changes ------------------------------------------------------------------------------------
    def add(self, keys: np.ndarray, pages: np.ndarray) -> None:
        """Add (key, page number) pairs; each pair must not be in the table already."""
        keys, pages_in = _checked(keys, pages)
        if keys.size:
            self._make_room(keys.size)
            self._place(keys, pages_in)

    def discard(self, keys: np.ndarray, pages: np.ndarray) -> None:
        """Remove (key, page number) pairs, each given once; a pair not in the table is an error."""
        keys = np.asarray(keys, dtype=np.uint64)
        wanted = np.asarray(pages, dtype=np.int64).astype(np.uint32)
        todo = np.arange(keys.size)
        slot = self._home(keys)
        while todo.size:
            held = self._pages[slot]
            hit = (held == wanted[todo]) & (self._keys[slot] == keys[todo])
            self._pages[slot[hit]] = _GONE
            self._live -= int(np.count_nonzero(hit))
            if np.any(held[~hit] == _EMPTY):
                missing = todo[~hit][held[~hit] == _EMPTY][0]
                raise KeyError(f"no pair ({int(keys[missing])}, {int(wanted[missing])}) in the band table")
            todo, slot = todo[~hit], self._next(slot[~hit])

    # -- probing ------------------------------------------------------------------------------------
    def _home(self, keys: np.ndarray) -> np.ndarray:
        """A key's home slot: the top 32 bits of its hash, scaled to the table's size."""
        home: np.ndarray = (((keys * _FIBONACCI) >> _32) * self._size >> _32).astype(np.int64)
        return home

    def _next(self, slot: np.ndarray) -> np.ndarray:
        slot = slot + 1
        slot[slot == self.slots] = 0
        return slot

    def _find(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into keys, page number) of every live pair whose key is one of ``keys``."""
        todo = np.arange(keys.size)
        slot = self._home(keys)
        found_at: list[np.ndarray] = []
        found_pages: list[np.ndarray] = []
        while todo.size:
            held = self._pages[slot]
            hit = (self._keys[slot] == keys[todo]) & (held != _EMPTY) & (held != _GONE)
            if hit.any():
                found_at.append(todo[hit])
                found_pages.append(held[hit])
            going = held != _EMPTY
            todo, slot = todo[going], self._next(slot[going])
        if not found_at:
            return np.zeros(0, np.int64), np.zeros(0, np.uint32)
        return np.concatenate(found_at), np.concatenate(found_pages)

    def _place(self, keys: np.ndarray, pages: np.ndarray) -> None:
        todo = np.arange(keys.size)
        slot = self._home(keys)
        while todo.size:
            held = self._pages[slot]
            free = np.flatnonzero((held == _EMPTY) | (held == _GONE))
            if free.size:
                taken, first = np.unique(slot[free], return_index=True)  # one pair per free slot
                winners = free[first]
                self._used += int(np.count_nonzero(self._pages[taken] == _EMPTY))
                self._keys[taken] = keys[todo[winners]]
                self._pages[taken] = pages[todo[winners]]
                self._live += taken.size
                left = np.ones(todo.size, bool)
                left[winners] = False
                todo, slot = todo[left], slot[left]
            slot = self._next(slot)

    # -- growing ------------------------------------------------------------------------------------
    def _live_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        live = (self._pages != _EMPTY) & (self._pages != _GONE)
        return self._keys[live], self._pages[live]

    def _make_room(self, incoming: int) -> None:
        if self._used + incoming > MAX_LOAD * self.slots:
            keys, pages = self._live_pairs()
            self._fill(keys, pages, _slots_for(self._live + incoming))

    def _fill(self, keys: np.ndarray, pages: np.ndarray, slots: int) -> None:
        """Make the table ``slots`` empty slots holding just these pairs.

        Into an empty table, linear probing puts pairs taken in the order of their home slots at
        ``max(home, previous position + 1)``: a running maximum, one vectorised pass instead of a
        probe per pair. It runs over one chunk of home slots at a time, the last position carried
        from chunk to chunk, so that the sorting's temporaries are an eighth of the pairs'. The
        few pairs pushed past the last slot wrap round, probed as usual."""
        self._allocate(slots)
        home = self._home(keys).astype(np.int32 if slots < 2**31 else np.int64)
        bounds = [slots * chunk // _CHUNKS for chunk in range(_CHUNKS + 1)]
        last = -1  # the position of the last pair placed
        overflow: list[np.ndarray] = [np.zeros(0, np.int64)]
        for chunk in range(_CHUNKS):
            mine = np.flatnonzero((home >= bounds[chunk]) & (home < bounds[chunk + 1]))
            if not mine.size:
                continue
            mine = mine[np.argsort(home[mine], kind="stable")]
            rank = np.arange(mine.size)
            at = np.maximum(np.maximum.accumulate(home[mine] - rank), last + 1) + rank  # int64
            inside = at < slots
            self._keys[at[inside]] = keys[mine[inside]]
            self._pages[at[inside]] = pages[mine[inside]]
            overflow.append(mine[~inside])
            last = int(at[-1])
            del mine, rank, at, inside
        self._live = self._used = int(keys.size) - sum(part.size for part in overflow)
        rest = np.concatenate(overflow)
        if rest.size:
            self._place(keys[rest], pages[rest])


def _checked(keys: np.ndarray, pages: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.asarray(keys, dtype=np.uint64)
    pages_in = np.asarray(pages, dtype=np.int64)
    if keys.shape != pages_in.shape:
        raise ValueError(f"{keys.size} keys but {pages_in.size} page numbers")
    if pages_in.size and (pages_in.min() < 1 or pages_in.max() > _LARGEST_PAGE):
        raise ValueError(f"page numbers must be in [1, {_LARGEST_PAGE}]")
    return keys, pages_in.astype(np.uint32)


def _slots_for(pairs: int) -> int:
    return max(_MIN_SLOTS, int(pairs / REBUILT_LOAD) + 1)
