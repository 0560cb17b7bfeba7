"""The worker's RocksDB stores, rebuilt from their changelog when the disk damaged them.

Each stage partition's journal lives in a RocksDB database on the worker's disk, and every row of
it is also in the table's changelog topic (:mod:`.state`). So a database that a disk fault, a
filesystem repair or a copy cut short has damaged holds nothing the changelog does not: it is a
cache. Faust's store gives up on such a database with RocksDB's ``Corruption`` error, every time
the worker starts, so the worker never decides another page until someone deletes the directory
by hand. Kafka Streams wipes a corrupt store and restores it from its changelog instead; this
store does the same:

* a database that RocksDB refuses to open as corrupt, or whose rows cannot all be read back (a
  data block whose checksum fails is only found when it is read), is **moved aside**, beside
  itself as ``<name>.db.damaged-<UTC time>``, kept for a post-mortem, never deleted;
* one ERROR line says which store, what RocksDB said, and where the damaged copy went;
* a fresh, empty database takes its place. It has no persisted changelog offset, so Faust's
  recovery reads the partition's changelog from its start, as after a lost disk.

Reading every row at open costs time in proportion to the journal, which snapshots keep small
(``STREAM_LSH_SNAPSHOT_MB`` per partition); the stage reads those rows right after anyway.

Only damage is handled so. Any other error (a lock another process holds, a full disk, a
permission) is Faust's to report, as before: moving a healthy store aside would throw away state
that is fine.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from faust.stores import STORES
from faust.stores import rocksdb as faust_rocksdb

__all__ = ["STORE_URL", "RebuildingStore", "is_damage", "move_aside"]

log = logging.getLogger(__name__)

#: What a Faust app is given as ``store`` to keep its tables in :class:`RebuildingStore`.
STORE_URL = "rocksdb-rebuilding://"


def is_damage(error: BaseException) -> bool:
    """Whether RocksDB's error says the files are damaged (its ``Corruption`` status), as opposed
    to the database being busy, the disk full or the path unreadable."""
    return str(error).lstrip().startswith("Corruption")


def move_aside(path: Path, now: float | None = None) -> Path:
    """Rename a damaged database directory to ``<path>.damaged-<UTC time>`` beside it (a number is
    added if that name is taken) and return the new path."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    count = 1
    while target.exists():
        count += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{count}")
    os.replace(path, target)
    return target


def _read_every_row(db: Any) -> int:
    """Read every key and value once, so that a damaged data block fails now (RocksDB checks each
    block's checksum as it reads it), not when the stage loads its state. The iterator's status is
    checked at the end: an iterator that meets a damaged block just stops, as if the rows ended.

    The iterator is dropped before an error leaves: alive (held by the traceback), it would keep
    the database open, and RocksDB would refuse to open the path again in this process."""
    rows = 0
    cursor = db.iter()
    try:
        cursor.seek_to_first()
        while cursor.valid():
            cursor.key()
            cursor.value()
            rows += 1
            cursor.next()
        cursor.status()  # raises the error that stopped it, if any
    finally:
        del cursor
    return rows


class RebuildingStore(faust_rocksdb.Store):
    """Faust's RocksDB store, except that a damaged partition database is moved aside and opened
    again empty, to be restored from the changelog (see the module doc)."""

    def _open_for_partition(self, partition: int) -> Any:
        try:
            return self._open_checked(partition)
        except Exception as error:  # rocksdict raises plain Exceptions carrying RocksDB's status
            if not is_damage(error):
                raise
            path = Path(self.partition_path(partition))
            aside = move_aside(path)
            reason = str(error).strip().splitlines()[0]
            log.error(
                "the RocksDB store %s is damaged (%s): moved it to %s, rebuilding it from its changelog",
                path,
                reason,
                aside.name,
            )
            return super()._open_for_partition(partition)

    def _open_checked(self, partition: int) -> Any:
        db = super()._open_for_partition(partition)
        try:
            _read_every_row(db)
        except Exception:
            db.close()
            raise
        return db


# Faust finds a store class by the scheme of its URL, in this registry (its documented extension
# point; a setuptools entry point would need the package installed, not only on the path).
STORES.aliases[STORE_URL.split(":")[0]] = f"{__name__}:{RebuildingStore.__name__}"
