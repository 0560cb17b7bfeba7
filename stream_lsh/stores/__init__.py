"""Stores that keep the engine's window outside memory.

:class:`DiskIndex` keeps the window of indexed pages in a RocksDB directory, for ``dedup
--state-dir``: an engine over it decides exactly as over the memory store. Of the window, only the
band buckets stay in memory, compactly (:mod:`.band_table`, ~0.7 KiB a page); the rest is read per
micro-batch.
"""

from .disk_index import DEFAULT_CACHE_BYTES, DiskIndex

__all__ = ["DEFAULT_CACHE_BYTES", "DiskIndex"]
