"""The durable form of one stage partition: a snapshot plus the batches handled since it.

Why not one table row per bucket or per page: one Faust table write costs ~200 µs here (mostly
its changelog message), so per-key rows would cap the stream at a few thousand pages/s. A stage
partition is instead a deterministic state machine, and its state is *the snapshot, replayed with
every batch handled after it*. One row per handled batch makes it durable (a *segment*: the
records exactly as the stage received them); once the segments outweigh the snapshot, a new
snapshot is written in chunks and everything older is tombstoned, so the rows (and the compacted
changelog behind them) stay proportional to the live state, which the TTL bounds. The cost is a
few rows per batch, not per page.

Restoring a partition (after a restart, a rebalance, or on a worker that lost its disk and got the
rows back from the changelog) loads the snapshot and hands every later segment to ``handle`` again
(decoded by :mod:`.codec`, as the live stage decoded it),
dropping its outputs: they were sent before the segment was written. This relies on two properties
of every stage, which the tests check: ``handle`` is deterministic given the state and the records,
and handling a batch in two parts leaves the same state as handling it at once.

Every row of a partition starts with the partition number, so rows of different partitions never
share a key (Faust's RocksDB store deletes a key from every partition database that has it). The
head row carries the *guard*: what the state was built with (signature scheme, banding, partition
layout). State is never loaded under another guard: :class:`StateMismatchError` says what differs.

The head row also names the *format* the snapshot was written in; a format this version does not
read is refused with :class:`StateMismatchError`, never guessed.

Pure: rows in, rows out. :mod:`stream_lsh.stream.state` puts them in a RocksDB-backed Faust table.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from ..core.scheme import Scheme, same_scheme
from ..errors import IncompleteStateError, StateMismatchError
from . import codec

__all__ = [
    "Journal",
    "Replayable",
    "Row",
    "StateMismatchError",
    "guard_accepts",
    "mismatch",
    "partition_prefix",
]

# 6: boilerplate learnt per site, site partitions hold pages for their release point (5 shared
# flags between site partitions, which 6 does not replay); 5: one decide partition in place of band
# partitions and homes
FORMAT = 6
READS = (6,)  # formats a journal loads
Row = tuple[bytes, "bytes | None"]  # a value of None deletes the key (a changelog tombstone)

_HEAD, _SEGMENT, _CHUNK = b"h", b"j", b"s"


def guard_accepts(stored: dict[str, Any], running: dict[str, Any]) -> bool:
    """Whether state stored under one guard may be loaded under another: the same guard, or one
    whose scheme differs only in lacking a later part of the names rule
    (:func:`..core.scheme.same_scheme`). A stream upgraded to the wording of names so reads the
    window and the journals of the version before, whose pages are never worded apart, as batch
    reads a state file saved by it."""
    if stored == running:
        return True
    differing = {key for key in set(stored) | set(running) if stored.get(key) != running.get(key)}
    if not differing <= {"scheme", "scheme_params"}:
        return False
    try:
        mine, theirs = Scheme.from_dict(running["scheme_params"]), Scheme.from_dict(stored["scheme_params"])
    except (KeyError, TypeError):  # a guard without its scheme's parameters
        return False
    return same_scheme(mine, theirs)


def mismatch(stored: dict[str, Any], running: dict[str, Any]) -> str:
    """What to tell a user whose stored state was built under another guard."""
    diffs = []
    for key in sorted(set(stored) | set(running)):
        mine, theirs = running.get(key), stored.get(key)
        if mine == theirs:
            continue
        if isinstance(mine, dict) and isinstance(theirs, dict):  # name the parameters, not the whole dict
            diffs += [
                f"{key}.{k}: stored {theirs.get(k)!r}, running {mine.get(k)!r}"
                for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)
            ]
        else:
            diffs.append(f"{key}: stored {theirs!r}, running {mine!r}")
    return (
        f"the stored state was built with other parameters ({'; '.join(diffs)}). It cannot be probed with "
        "these: run with the parameters it was built with, or start from empty state (a new app id, or "
        "delete the app's internal topics and data directories)."
    )


class Replayable(Protocol):
    """A stage partition's state machine (Signer, Decider). ``replay`` is ``handle`` for a batch
    whose outputs were sent before (a journal's segment, handled again to rebuild the state): it
    must leave the state ``handle`` leaves, and may skip work that only makes outputs."""

    @property
    def stage(self) -> str: ...
    def handle(self, messages: Sequence[Any]) -> Any: ...
    def replay(self, messages: Sequence[Any]) -> None: ...
    def snapshot(self) -> dict[str, Any]: ...
    def restore(self, state: dict[str, Any]) -> None: ...


def partition_prefix(partition: int) -> bytes:
    """What every row key of a stage partition starts with, in every stage's table."""
    return struct.pack(">I", partition)


@dataclass
class Journal:
    """Bookkeeping of one stage partition's rows.

    Args:
        partition: the stage partition; every key starts with it.
        guard: JSON-friendly description of what the state depends on; stored in the head row
            and compared on load.
        compact_bytes: segments may total at least this much before a snapshot replaces them
            (more when the snapshot itself is larger: the rows never exceed about twice the
            live state plus this).
        chunk_bytes: largest row value written for segments and snapshot chunks (a Kafka
            message each; real brokers refuse messages over ``message.max.bytes``).
    """

    partition: int
    guard: dict[str, Any]
    compact_bytes: int = 16 << 20
    chunk_bytes: int = 512 << 10
    next_segment: int = 0
    generation: int = 0
    chunks: int = 0
    upto: int = -1  # the last segment the snapshot includes
    segment_bytes: int = 0  # bytes of segments after the snapshot
    snapshot_bytes: int = 0
    stale: list[bytes] = field(default_factory=list)  # rows to delete with the next write
    format: int = FORMAT  # the format of the snapshot in charge (an older one until compaction)
    covered: int | None = None  # the last offset of the stage's input the journaled state covers
    _head_written: bool = False

    def __post_init__(self) -> None:
        if self.partition < 0 or self.compact_bytes < 1 or self.chunk_bytes < 1:
            raise ValueError("partition must be >= 0, compact_bytes and chunk_bytes positive")
        self._prefix = partition_prefix(self.partition)

    # -- keys -------------------------------------------------------------------------------
    @property
    def prefix(self) -> bytes:
        """Every row of this partition starts with it (rows sort by kind, then number)."""
        return self._prefix

    def _head_key(self) -> bytes:
        return self._prefix + _HEAD

    def _segment_key(self, number: int) -> bytes:
        return self._prefix + _SEGMENT + struct.pack(">Q", number)

    def _chunk_key(self, generation: int, number: int) -> bytes:
        return self._prefix + _CHUNK + struct.pack(">QI", generation, number)

    def _head(self) -> Row:
        self._head_written = True
        return self._head_key(), orjson.dumps(
            {
                "format": self.format,
                "guard": self.guard,
                "generation": self.generation,
                "chunks": self.chunks,
                "upto": self.upto,
                "covered": self.covered,
            }
        )

    # -- loading ------------------------------------------------------------------------------
    def load(self, rows: Iterable[Row], stage: Replayable) -> int:
        """Rebuild ``stage`` (fresh) from this partition's rows; returns the segments replayed."""
        head: dict[str, Any] | None = None
        segments: dict[int, bytes] = {}
        chunks: dict[tuple[int, int], bytes] = {}
        for key, value in rows:
            if not key.startswith(self._prefix) or value is None:
                continue
            kind, rest = key[4:5], key[5:]
            if kind == _HEAD:
                head = orjson.loads(value)
            elif kind == _SEGMENT:
                segments[struct.unpack(">Q", rest)[0]] = value
            elif kind == _CHUNK:
                chunks[struct.unpack(">QI", rest)] = value
        if head is None:
            if segments or chunks:
                raise IncompleteStateError(f"partition {self.partition} has state rows but no head row")
            return 0
        self._check(head)
        self.format = head["format"]
        self.generation, self.chunks, self.upto = head["generation"], head["chunks"], head["upto"]
        self.covered = head.get("covered")  # absent from heads written before journals kept it
        self._head_written = True
        # a segment is written only once the one before it is on the broker, so a gap is rows lost
        kept = [n for n in segments if n > self.upto]
        missing = sorted(set(range(self.upto + 1, max(kept, default=self.upto) + 1)) - set(kept))
        if missing:
            raise IncompleteStateError(
                f"partition {self.partition} lacks {len(missing)} segment(s) before its last one "
                f"({', '.join(map(str, missing[:10]))})"
            )
        if self.generation:
            parts = [chunks.get((self.generation, i)) for i in range(self.chunks)]
            if any(part is None for part in parts):
                raise IncompleteStateError(
                    f"partition {self.partition}: snapshot {self.generation} has "
                    f"{sum(p is not None for p in parts)} of its {self.chunks} chunks"
                )
            blob = b"".join(parts)  # type: ignore[arg-type]
            self.snapshot_bytes = len(blob)
            stage.restore(codec.load_state(blob))
        self.stale = [self._chunk_key(g, i) for g, i in chunks if g != self.generation]
        replayed = 0
        for number in sorted(segments):
            if number <= self.upto:
                self.stale.append(self._segment_key(number))
                continue
            value = segments[number]
            self.segment_bytes += len(value)
            batches, covered = codec.decode_segment(stage.stage, value)
            for messages in batches:
                stage.replay(messages)
            if covered is not None:
                self.covered = covered
            replayed += 1
        self.next_segment = max([self.upto + 1, *(n + 1 for n in segments)])
        return replayed

    def _check(self, head: dict[str, Any]) -> None:
        written = head.get("format")
        if isinstance(written, int) and written < min(READS):
            raise StateMismatchError(
                f"partition {self.partition}: state format {written}, written by an earlier stream-lsh "
                "whose internal stages this version replaced (band partitions and homes became one "
                "decide partition), so it cannot be loaded. Start from empty state (a new app id, or "
                "delete the app's internal topics and data directories) and feed the window's input "
                'again (docs/operating.md, "Upgrading").'
            )
        if written not in READS:
            raise StateMismatchError(
                f"partition {self.partition}: state format {head.get('format')!r}; this version of "
                f"stream-lsh reads formats {', '.join(map(str, READS))}. State written by a newer "
                "version cannot be read by an older one: run the version that wrote it, or start "
                "from empty state (a new app id)."
            )
        theirs = head.get("guard", {})
        if not guard_accepts(theirs, self.guard):
            raise StateMismatchError(f"partition {self.partition}: {mismatch(theirs, self.guard)}")

    # -- writing ------------------------------------------------------------------------------
    def append(self, batches: Sequence[bytes], covered: int | None = None) -> list[Row]:
        """Rows that make handled batches durable: ``batches`` are the bytes the stage handled
        (each made by :func:`.codec.encode`), in order; ``covered``, the offset of the last input
        record among them (the stage's input is one partition of its topic)."""
        rows: list[Row] = [(key, None) for key in self.stale]
        self.stale = []
        if not self._head_written:
            rows.append(self._head())
        values = codec.segments(batches, self.chunk_bytes, upto=covered)
        rows.extend(self._segment(value) for value in values)
        if covered is not None:
            self.covered = covered
        return rows

    def handled(self, offset: int) -> bool:
        """Whether the input record at ``offset`` is in the journaled state already.

        The input offset is committed after the journal rows, every second or so: records up to a
        row's offset come again after a restart or a rebalance. Handled again, they are not all
        harmless repeats: a signer would sign a page again with a learner that has since learnt
        from it and the pages after it, and its home would decide that signature afresh (tests/
        test_chaos.py's graceful round on real prose: pages decided once, then otherwise). So a
        stage handles each input record once: this is the rule, for every stage."""
        return self.covered is not None and offset <= self.covered

    def _segment(self, value: bytes) -> Row:
        self.segment_bytes += len(value)
        key = self._segment_key(self.next_segment)
        self.next_segment += 1
        return key, value

    def due(self) -> bool:
        """Whether the segments now outweigh what a snapshot would replace them with."""
        return self.segment_bytes >= max(self.compact_bytes, self.snapshot_bytes)

    def compact(self, stage: Replayable) -> list[Row]:
        """Rows that replace every segment so far with a snapshot of ``stage``."""
        blob = codec.dump_state(stage.snapshot())
        self.format = FORMAT
        old = [self._chunk_key(self.generation, i) for i in range(self.chunks)] if self.generation else []
        old += [self._segment_key(n) for n in range(self.upto + 1, self.next_segment)]
        self.generation += 1
        self.chunks = max(1, -(-len(blob) // self.chunk_bytes))
        rows: list[Row] = [
            (self._chunk_key(self.generation, i), blob[i * self.chunk_bytes : (i + 1) * self.chunk_bytes])
            for i in range(self.chunks)
        ]
        self.upto = self.next_segment - 1
        rows.append(self._head())  # the switch: a crash before it leaves the old snapshot in charge
        rows.extend((key, None) for key in old)
        self.snapshot_bytes, self.segment_bytes = len(blob), 0
        return rows
