"""The decide partition's state: its window in a RocksDB directory, logged in a Faust table.

The window lives in a directory on the worker's disk (``<tabledir>/decide-window-<partition>``),
the engine's :class:`~stream_lsh.stores.DiskIndex` with the partition's other state beside it as
rows (:class:`~stream_lsh.pipeline.decide.Decider`). The stage's Faust table (and so its compacted
changelog) holds the log of that directory: a delta per micro-batch and a checkpoint copied a
slice at a time (:mod:`stream_lsh.pipeline.window_log`). Per micro-batch:

1. the Decider decides; the window's store keeps the changes in its overlay;
2. the outputs are sent and awaited (by the app, before :meth:`WindowStore.record`);
3. the changed rows go to the table as one delta, with the next checkpoint slice;
4. once the broker has the delta (:meth:`WindowStore.durable`), the directory is written, in one
   atomic write that also notes the delta's number and the input offset it covers.

So the directory is never ahead of the log. Opening a partition applies the deltas the directory
lacks; a directory that is gone, damaged (moved aside as ``...damaged-<time>``, as
:mod:`.store` does with Faust's), or older than the deltas kept, is built again from the log.
Nothing is serialised whole, so nothing pauses the event loop in proportion to the window.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from ..pipeline.decide import Decider
from ..pipeline.journal import Replayable
from ..pipeline.window_log import NOTE, Row, WindowLog
from ..stores.disk_index import read_state_of, write_rows
from .state import StageStore, acting_for
from .store import is_damage, move_aside

__all__ = ["WindowStore"]

log = logging.getLogger(__name__)


class WindowStore(StageStore):
    """The decide stage's partitions on this worker (see the module doc).

    Args:
        windows: the directory of a partition's window.
        make: builds a partition's Decider over the window in the directory given.
        Others: as :class:`~.state.StageStore`'s.
    """

    def __init__(self, *args: Any, windows: Callable[[int], Path], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.windows = windows
        self._unwritten: dict[int, list[Row]] = {}  # rows logged, for the directory once durable

    # -- opening ----------------------------------------------------------------------------------
    def _load(self, partition: int) -> tuple[Decider, WindowLog]:
        began = time.perf_counter()
        path = self.windows(partition)
        try:
            return self._open_at(partition, path, began)
        except Exception as error:  # rocksdict raises plain Exceptions carrying RocksDB's status
            if not is_damage(error):
                raise
            aside = move_aside(path)
            log.error(
                "the window of decide partition %d in %s is damaged (%s): moved it to %s, rebuilding it "
                "from its changelog",
                partition,
                path,
                str(error).strip().splitlines()[0],
                aside.name,
                extra={"stage": self.stage, "partition": partition},
            )
            return self._open_at(partition, path, began)

    def _open_at(self, partition: int, path: Path, began: float) -> tuple[Decider, WindowLog]:
        window_log = WindowLog(
            partition, self.guard, compact_bytes=self.compact_bytes, chunk_bytes=self.chunk_bytes
        )
        db = self._db(partition)
        note = read_state_of(path, NOTE)
        plan = window_log.load(
            db.get(window_log.head_key), self._rows(partition, window_log.prefix), note and note["delta"]
        )
        if plan.rebuild and path.exists():
            shutil.rmtree(path)
        write_rows(path, WindowLog.replay(plan.keys, db.get))
        decider = cast(Decider, self.make(partition))
        assert decider.disk is not None, "the decide stage keeps its window on disk"
        note = decider.disk.read_state(NOTE)
        window_log.covered = None if note is None else note["covered"]
        log.info(
            "decide partition %d: window opened in %.1f s (%d pages; %s, %d deltas applied)",
            partition,
            time.perf_counter() - began,
            len(decider.disk),
            "built from the log" if plan.rebuild and plan.keys else "from its directory",
            plan.deltas,
            extra={"stage": self.stage, "partition": partition},
        )
        return decider, window_log

    # -- a micro-batch ------------------------------------------------------------------------------
    def record(self, partition: int, stage: Replayable, event: Any, batches: list[bytes]) -> None:
        """Log the rows the micro-batch changed (its outputs were sent); the directory follows once
        the log is durable (see the module doc). A partition revoked meanwhile writes nothing: its
        next owner does the batch again."""
        opened = self._still_held(partition, stage)
        if opened is None:
            return
        decider, window_log = cast(Decider, opened[0]), cast(WindowLog, opened[1])
        assert decider.disk is not None
        offset = event.message.offset
        rows, logged = window_log.record(decider.take_rows(), offset, decider.disk.rows_from)
        self._unwritten.setdefault(partition, []).extend(rows)
        with acting_for(event):
            for key, value in logged:
                if value is None:
                    del self.table[key]
                else:
                    self.table[key] = value

    async def durable(self) -> None:
        """Wait for the broker to have the logged rows, then write them to the directories."""
        await super().durable()
        unwritten, self._unwritten = self._unwritten, {}
        for partition, rows in unwritten.items():
            opened = self.held.get(partition)
            if opened is not None:
                disk = cast(Decider, opened[0]).disk
                assert disk is not None
                disk.write_rows(rows)

    def forget(self) -> None:
        """Close every window (partitions were revoked): what was not made durable is dropped, and
        the directory stays as the log's last acknowledged delta left it."""
        for decider, _ in self.held.values():
            cast(Decider, decider).close()
        self._unwritten.clear()
        super().forget()
