"""Stage state in RocksDB-backed Faust tables: one table per stage, one journal per partition.

The rows are those of :class:`~stream_lsh.pipeline.journal.Journal` (a snapshot and the batches
handled since). Faust gives them what a stream processor needs and this module does not rebuild:
a RocksDB database per partition on the worker's disk, a compacted changelog topic per table, and
recovery of a partition's rows from that changelog when the worker gets the partition without them
(first start, lost disk, rebalance to another worker). The in-memory stage objects are a cache
of those rows: built lazily from them the first time a partition's records arrive after an
assignment, dropped when partitions are revoked.

Faust binds a table write to the partition of the event being processed (``current_event()``).
A micro-batch holds events of several partitions, so each partition's rows are written with the
context set to one of *its* events.

Faust sends a table's changelog rows in the background and only logs a failed one; its flush
before an offset commit can also return before the last rows reach the producer. A row that never
reached the changelog would be lost with the worker's disk while the input it records was
committed. So the rows of a batch are awaited (:meth:`StageStore.durable`) before the batch is
acknowledged, and a failed row fails the batch.

A worker's rows can lack some that the changelog has: a disk fault, a copy of the directory cut
short, records a standby copy missed. The loads notice (:class:`IncompleteStateError`: no head row,
a snapshot short of chunks, a gap before the last batch's rows), and :meth:`StageStore.open` then
restores the partition's rows from the changelog, read from its start by a consumer of its own, as
Kafka Streams restores a store it cannot trust; faust's recovery would only read it at the next
rebalance.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import faust
import rocksdict
from faust.streams import _current_event
from faust.types import TP

from ..errors import IncompleteStateError
from ..pipeline.journal import Journal, Replayable, Row, partition_prefix
from .recovery import read_changelog
from .topics import state_table

__all__ = ["ROCKSDB_OPTIONS", "JournalTable", "StageStore"]

log = logging.getLogger(__name__)

#: Per partition database. Faust's defaults (64 MB write buffers, 2 GB block cache per database)
#: are sized for one big table; a worker here opens one database per stage partition it owns.
ROCKSDB_OPTIONS = {
    "write_buffer_size": 8 << 20,
    "max_write_buffer_number": 2,
    "block_cache_size": 16 << 20,
    "block_cache_compressed_size": 0,
}


class JournalTable(faust.Table):  # type: ignore[type-arg]  # faust.Table is generic only to type checkers
    """A Faust table that keeps the futures of the changelog rows it sends, until awaited."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unsent: list[asyncio.Future[Any]] = []

    def send_changelog(self, *args: Any, **kwargs: Any) -> Any:
        future = super().send_changelog(*args, **kwargs)
        self.unsent.append(future)
        return future


@contextmanager
def acting_for(event: Any) -> Iterator[None]:
    """Table writes inside go to ``event``'s partition (its database and changelog partition)."""
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)


class StageStore:
    """The partitions of one stage that this worker holds: state machines backed by table rows.

    Args:
        app: the Faust app the table belongs to.
        stage: stage name; the table is ``<stage>-state`` (changelog ``<app>-<stage>-state-changelog``).
        partitions: partition count of the stage topic (the table is co-partitioned with it).
        make: builds an empty state machine for a partition.
        guard: what the state depends on; stored with it and checked on load.
        compact_bytes, chunk_bytes: see :class:`Journal`.
        row_timeout_s: a journal row not acknowledged by the broker within this long fails its
            batch (the worker exits and the input is redelivered) rather than stalling the stage
            for ever; the worker's send timeout, so that a broker outage shorter than that is
            ridden out by the rows as by every other send.
        on_snapshot: told how long each snapshot took, in seconds (a metric).
    """

    def __init__(
        self,
        app: faust.App,
        stage: str,
        partitions: int,
        make: Callable[[int], Replayable],
        guard: dict[str, Any],
        *,
        compact_bytes: int,
        chunk_bytes: int,
        row_timeout_s: float,
        on_snapshot: Callable[[float], None] = lambda seconds: None,
    ) -> None:
        self.stage = stage
        self.on_snapshot = on_snapshot
        self.row_timeout_s = row_timeout_s
        self.make = make
        self.guard = guard
        self.compact_bytes, self.chunk_bytes = compact_bytes, chunk_bytes
        self.table: JournalTable = app.tables.add(  # type: ignore[assignment]  # add() returns what it is given
            JournalTable(
                app,
                name=state_table(stage),
                partitions=partitions,
                key_type=bytes,
                value_type=bytes,  # raw bytes
                options=ROCKSDB_OPTIONS,
                beacon=app.tables.beacon,
                help=f"durable state of the {stage} stage (snapshots and journal segments)",
            )
        )
        # the partitions held in memory: each one's state machine and its durable form's bookkeeping
        self.held: dict[int, tuple[Replayable, Any]] = {}
        self._forgotten = 0  # revocations so far (each drops every partition held)

    def state(self, partition: int) -> Replayable:
        """The state machine of ``partition``, which :meth:`open` built."""
        return self.held[partition][0]

    async def open(self, partitions: Iterable[int]) -> set[int]:
        """Build the state machines of ``partitions`` that are not held yet from their rows, and
        return those held now. A copy of the rows that lacks some (:class:`IncompleteStateError`)
        is restored from the changelog first; if the changelog lacks them too, the error stands
        and the worker stops (exit 78). A revocation during a restore drops every partition held
        (:meth:`forget`), so none is returned, and the batch's records come again to their next
        owner."""
        partitions = list(partitions)
        for partition in partitions:
            if partition in self.held:
                continue
            try:
                self.held[partition] = self._load(partition)
            except IncompleteStateError as error:
                forgotten = self._forgotten
                await self._restore_logged(partition, error)
                if self._forgotten != forgotten:
                    break
                try:
                    self.held[partition] = self._load(partition)
                except IncompleteStateError as again:
                    raise IncompleteStateError(
                        f"{again}, and its changelog lacks the rows too: the state of {self.stage} "
                        f"partition {partition} is lost (were the changelog's records deleted?)"
                    ) from error
        return {partition for partition in partitions if partition in self.held}

    async def _restore_logged(self, partition: int, error: IncompleteStateError) -> None:
        log.error(
            "%s partition %d: this worker's copy of its rows is incomplete (%s); restoring it from the "
            "changelog",
            self.stage,
            partition,
            error,
            extra={"stage": self.stage, "partition": partition},
        )
        began = time.perf_counter()
        records = await self._restore(partition)
        log.info(
            "%s partition %d: %d changelog records restored in %.1f s",
            self.stage,
            partition,
            records,
            time.perf_counter() - began,
            extra={"stage": self.stage, "partition": partition},
        )

    async def _restore(self, partition: int) -> int:
        """Replace this worker's rows of ``partition`` with the changelog's, read from its start as
        faust's recovery reads it; returns the records read. The stored offset goes first and comes
        back last, so a crash meanwhile leaves rows that faust's next recovery reads from the
        changelog's start again."""
        table = self.table
        tp = TP(table.changelog_topic.get_topic_name(), partition)
        db = self._db(partition)
        offset_key = table.data.offset_key  # type: ignore[attr-defined]
        stale = rocksdict.WriteBatch(raw_mode=True)
        stale.delete(offset_key)
        for key, _ in self._rows(partition, partition_prefix(partition)):
            stale.delete(key)
        db.write(stale)
        records, last = 0, None
        async for batch in read_changelog(table.app, tp, stalled_s=self.row_timeout_s):
            rows = rocksdict.WriteBatch(raw_mode=True)
            for key, value, _ in batch:
                if value is None:
                    rows.delete(key)
                else:
                    rows.put(key, value)
            db.write(rows)
            records, last = records + len(batch), batch[-1][2]
        if last is not None:
            table.data.set_persisted_offset(tp, last)
        return records

    def _load(self, partition: int) -> tuple[Replayable, Any]:
        stage = self.make(partition)
        journal = Journal(
            partition, self.guard, compact_bytes=self.compact_bytes, chunk_bytes=self.chunk_bytes
        )
        replayed = journal.load(
            self._rows(partition, journal.prefix), stage
        )  # StateMismatchError stops the worker
        log.info(
            "%s partition %d: state loaded (snapshot %d, %d segments replayed)",
            self.stage,
            partition,
            journal.generation,
            replayed,
            extra={"stage": self.stage, "partition": partition},
        )
        return stage, journal

    def _db(self, partition: int) -> Any:
        """The partition's RocksDB (rocksdict, raw mode): a faust internal (tests/test_internals.py)."""
        return self.table.data._db_for_partition(partition)  # type: ignore[attr-defined]

    def _rows(self, partition: int, prefix: bytes) -> Iterator[Row]:
        db = self._db(partition)
        for key, value in db.items(from_key=prefix):
            if not key.startswith(prefix):
                break
            yield key, value

    def unhandled(self, partition: int, events: list[Any]) -> list[Any]:
        """The events of ``partition`` (which :meth:`open` built) its journaled state does not hold
        yet (:meth:`Journal.handled`: records read again after a restart or a rebalance are not
        handled twice)."""
        journal = self.held[partition][1]
        return [event for event in events if not journal.handled(event.message.offset)]

    def record(self, partition: int, stage: Replayable, event: Any, batches: list[bytes]) -> None:
        """Make the batches ``stage`` (the state machine of ``partition``) just handled durable,
        after their outputs were sent; ``event`` is the last of them (its offset is what the rows
        cover). If the partition was revoked meanwhile (a rebalance while the sends were awaited),
        nothing is written: the input was not committed, and the partition's next owner handles it
        again from the rows as they were."""
        held = self._still_held(partition, stage)
        if held is None:
            return
        journal = held[1]
        rows = journal.append(batches, event.message.offset)
        if journal.due():
            began = time.perf_counter()
            rows += journal.compact(stage)
            self.on_snapshot(time.perf_counter() - began)
        with acting_for(event):
            for key, value in rows:
                if value is None:
                    del self.table[key]  # a RocksDB delete and a changelog tombstone
                else:
                    self.table[key] = value

    def _still_held(self, partition: int, stage: Replayable) -> tuple[Replayable, Any] | None:
        """The partition's state machine and bookkeeping, unless it was revoked since ``stage``
        handled a batch (logged: its next owner redoes the batch)."""
        held = self.held.get(partition)
        if held is not None and held[0] is stage:
            return held
        log.info(
            "%s partition %d was revoked during a batch; its next owner redoes the batch",
            self.stage,
            partition,
            extra={"stage": self.stage, "partition": partition},
        )
        return None

    async def durable(self) -> None:
        """Wait until the broker has every changelog row written so far; raise if one failed.

        A row can fail two ways: the broker refuses it (its future gets the error), or the send
        fails before it reaches the client (Faust's producer buffer then crashes and the future is
        never resolved): the buffer is watched for that."""
        unsent, self.table.unsent = self.table.unsent, []
        if not unsent:
            return
        rows = asyncio.gather(*unsent)
        buffer = self.table.app.producer.buffer
        deadline = asyncio.get_running_loop().time() + self.row_timeout_s
        try:
            while not rows.done():
                await asyncio.wait([rows], timeout=0.2)
                if buffer.crashed:
                    raise RuntimeError(f"the changelog producer failed: {buffer.crash_reason!r}")
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(
                        f"{self.stage}: journal rows not acknowledged within {self.row_timeout_s:g} s "
                        "(STREAM_LSH_SEND_TIMEOUT_S)"
                    )
            rows.result()
        finally:
            if not rows.done():
                rows.cancel()

    def loaded(self) -> list[Replayable]:
        """The state machines of the partitions this worker holds in memory now."""
        return [stage for stage, _ in self.held.values()]

    def partitions(self) -> list[tuple[int, Replayable, Any]]:
        """The partitions held in memory now, each with its state machine and its journal."""
        return [(partition, stage, journal) for partition, (stage, journal) in sorted(self.held.items())]

    def forget(self) -> None:
        """Drop every in-memory state machine (partitions were revoked; RocksDB keeps the rows)."""
        self.held.clear()
        self._forgotten += 1
