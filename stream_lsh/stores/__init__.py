"""Stores that keep the engine's window outside memory.

:class:`DiskIndex` keeps the window of indexed pages in a RocksDB directory, for ``dedup
--state-dir``: an engine over it decides exactly as over the memory store, in memory bounded by
the micro-batch instead of the window.
"""

from .disk_index import DEFAULT_CACHE_BYTES, DiskIndex

__all__ = ["DEFAULT_CACHE_BYTES", "DiskIndex"]
