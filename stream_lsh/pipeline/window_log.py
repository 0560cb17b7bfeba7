"""The durable form of the decide partition: the rows of its window's directory, as a log.

The decide partition keeps its window in a RocksDB directory on the worker's disk (the engine's
:class:`~stream_lsh.stores.DiskIndex`, with the spread, the deliveries and the held pages beside it
as rows). That directory *is* the partition's state: nothing is serialised whole, so nothing
pauses the event loop for a time that grows with the window. What a worker that lost its disk, or
one that takes the partition over, needs is a copy of those rows elsewhere; this module keeps it,
as rows of the stage's Faust table (so in its compacted changelog topic):

* a **delta** per micro-batch: every row the batch changed, in one table row (split in parts when
  larger than a Kafka message may be), numbered in order. It carries the offset of the last input
  record the batch covers;
* a **checkpoint**, copied a slice at a time: each micro-batch copies the next slice of the
  directory's rows, in key order, into a *chunk*. No slice is taken at once with the others, so a
  checkpoint is no picture of one moment; but it began at a delta, and every delta from that one on
  is kept. Every row it holds was taken after that delta, so the chunks, then every delta from
  there in order, leave each row as the last write to it left it: the directory as it is;
* a **head** naming the last finished checkpoint: where it began and how many chunks it has. Once
  a checkpoint is finished, the chunks of the one before and the deltas before it began are
  tombstoned, so the rows (and the compacted changelog) stay proportional to the window, which
  the TTL bounds. A new one begins once the deltas a restore would replay outweigh the last.

The order of writes makes the directory never ahead of the log: a micro-batch's outputs are sent,
then its delta goes to the table, and only once the broker has acknowledged it is the directory
written (in one atomic write that also notes the delta's number). A worker that opens the
directory again then applies the deltas it lacks; one whose directory is gone, damaged, or too old
(the deltas it lacks were tombstoned) builds it again from the checkpoint and the deltas after it.

Rows of different partitions never share a key (every key starts with the partition number), and
the head carries the guard (the scheme, the banding, the partition layout), as
:class:`~stream_lsh.pipeline.journal.Journal`'s does: another guard, or another format, is refused
with :class:`StateMismatchError`. Rows a copy lacks (no head, a checkpoint short of chunks, a
delta missing before the last one) raise :class:`~stream_lsh.errors.IncompleteStateError`, and the
store restores the rows from the changelog. Only the last delta may be cut short: a crash while
it was sent, whose batch comes again.

Pure: rows in, rows out. :mod:`stream_lsh.stream.window_store` keeps them in the Faust table and
writes the directory.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import IncompleteStateError, StateMismatchError
from ..stores.disk_index import DiskIndex
from .journal import Row, guard_accepts, mismatch, partition_prefix

__all__ = ["FORMAT", "NOTE", "Plan", "Row", "WindowLog", "decode_rows", "encode_rows"]

#: 7: the decide partition's window on disk, kept as a log of deltas and checkpoints
#: (6, :class:`~stream_lsh.pipeline.journal.Journal`'s, kept the window whole in snapshots)
FORMAT = 7

#: The directory's note (a state row beside the window) of the delta it ends with and the input
#: offset that delta covers: written with every delta, read when the directory is opened.
NOTE = "log"

_HEAD, _DELTA, _CHUNK = b"h", b"d", b"c"
_PART = struct.Struct(">IIq")  # part, parts, covered input offset (-1: none)
_LENGTH = struct.Struct(">I")
_ABSENT = 0xFFFFFFFF  # the length of a deleted row's value


def encode_rows(rows: Iterable[Row]) -> bytes:
    """Rows as one value: each key and value with its length (a deleted row has none)."""
    parts: list[bytes] = []
    pack = _LENGTH.pack
    for key, value in rows:
        parts.append(pack(len(key)))
        parts.append(key)
        if value is None:
            parts.append(pack(_ABSENT))
        else:
            parts.append(pack(len(value)))
            parts.append(value)
    return b"".join(parts)


def decode_rows(blob: bytes | memoryview) -> Iterator[Row]:
    """The rows :func:`encode_rows` made, in order."""
    view = memoryview(blob)
    at, end = 0, len(view)
    unpack = _LENGTH.unpack_from
    while at < end:
        (size,) = unpack(view, at)
        key = bytes(view[at + 4 : at + 4 + size])
        at += 4 + size
        (size,) = unpack(view, at)
        at += 4
        if size == _ABSENT:
            yield key, None
        else:
            yield key, bytes(view[at : at + size])
            at += size


@dataclass(frozen=True)
class Plan:
    """How to bring a directory to the log's state: the table rows to apply, in order.

    ``rebuild``: the directory must be emptied first (gone, or too old for the deltas kept)."""

    rebuild: bool
    keys: list[bytes]
    deltas: int


@dataclass
class _Delta:
    parts: int
    seen: set[int] = field(default_factory=set)
    size: int = 0


@dataclass
class WindowLog:
    """Bookkeeping of the decide partition's log (see the module doc).

    Args:
        partition: the stage partition; every key starts with it.
        guard: what the state depends on; stored in the head and compared on load.
        compact_bytes: deltas may total at least this much before a checkpoint begins (more when
            the last checkpoint is larger).
        chunk_bytes: largest row value written (a Kafka message each).
    """

    partition: int
    guard: dict[str, Any]
    compact_bytes: int = 16 << 20
    chunk_bytes: int = 512 << 10
    next_delta: int = 0
    covered: int | None = None  # the last input offset the logged state covers
    checkpoint: dict[str, int] | None = None  # the last finished: generation, start, chunks, bytes
    delta_bytes: int = 0  # bytes of the deltas a restore replays (from the checkpoint's start)
    stale: list[bytes] = field(default_factory=list)  # rows to delete with the next write
    _building: dict[str, Any] | None = None  # the checkpoint being copied
    _next_generation: int = 1
    _deltas: dict[int, int] = field(default_factory=dict)  # kept delta -> its parts
    _last_delta: int = 0  # bytes of the last delta appended
    _head_written: bool = False

    def __post_init__(self) -> None:
        if self.partition < 0 or self.compact_bytes < 1 or self.chunk_bytes < 64:
            raise ValueError("partition must be >= 0, compact_bytes positive, chunk_bytes >= 64")
        self._prefix = partition_prefix(self.partition)

    # -- keys -------------------------------------------------------------------------------------
    @property
    def prefix(self) -> bytes:
        """Every row of this partition starts with it."""
        return self._prefix

    @property
    def head_key(self) -> bytes:
        return self._prefix + _HEAD

    def _delta_key(self, number: int, part: int) -> bytes:
        return self._prefix + _DELTA + struct.pack(">QI", number, part)

    def _chunk_key(self, generation: int, number: int) -> bytes:
        return self._prefix + _CHUNK + struct.pack(">QI", generation, number)

    @property
    def snapshot_bytes(self) -> int:
        """The last checkpoint's size (the metrics' name for what a restore starts from)."""
        return 0 if self.checkpoint is None else self.checkpoint["bytes"]

    @property
    def segment_bytes(self) -> int:
        """The deltas a restore replays after it."""
        return self.delta_bytes

    # -- loading ----------------------------------------------------------------------------------
    def load(self, head: bytes | None, rows: Iterable[Row], applied: int | None) -> Plan:
        """Read this partition's table rows (``head``: the head's value; ``rows``: every row of
        the partition, for their keys and the deltas' headers) and say how a directory whose rows
        end with delta ``applied`` (None: no directory) is brought to the log's state."""
        if head is not None:
            self._check(orjson.loads(head))
        deltas: dict[int, _Delta] = {}
        generations: dict[int, int] = {}
        for key, value in rows:
            if not key.startswith(self._prefix) or value is None:
                continue
            kind = key[4:5]
            if kind == _DELTA:
                number, part = struct.unpack(">QI", key[5:])
                delta = deltas.get(number)
                if delta is None:
                    delta = deltas[number] = _Delta(_PART.unpack_from(value)[1])
                delta.seen.add(part)
                delta.size += len(value)
            elif kind == _CHUNK:
                generation, number = struct.unpack(">QI", key[5:])
                generations[generation] = generations.get(generation, 0) + 1
        if head is None and (deltas or generations):
            raise IncompleteStateError(f"decide partition {self.partition} has log rows but no head row")
        start = 0 if self.checkpoint is None else self.checkpoint["start"]
        if (
            self.checkpoint is not None
            and generations.get(self.checkpoint["generation"]) != self.checkpoint["chunks"]
        ):
            raise IncompleteStateError(
                f"decide partition {self.partition}: checkpoint {self.checkpoint['generation']} has "
                f"{generations.get(self.checkpoint['generation'], 0)} of its "
                f"{self.checkpoint['chunks']} chunks"
            )
        complete: list[int] = []
        last = max(deltas, default=None)
        for number in sorted(deltas):
            delta = deltas[number]
            expected = complete[-1] + 1 if complete else start
            if number < start:
                self.stale += [self._delta_key(number, part) for part in sorted(delta.seen)]
            elif number == expected and delta.seen == set(range(delta.parts)):
                complete.append(number)
            elif number == expected and number == last:
                # cut short by a crash: its input was not committed, so its batch comes again
                self.stale += [self._delta_key(number, part) for part in sorted(delta.seen)]
            else:  # a delta is logged only once the one before it is on the broker: rows were lost
                lacks = f"deltas {expected}-{number - 1}" if number > expected else f"parts of delta {number}"
                raise IncompleteStateError(
                    f"decide partition {self.partition} lacks {lacks} before its last one ({last})"
                )
        self._deltas = {number: deltas[number].parts for number in complete}
        self.delta_bytes = sum(deltas[number].size for number in complete)
        self.next_delta = complete[-1] + 1 if complete else start
        kept = None if self.checkpoint is None else self.checkpoint["generation"]
        for generation, count in generations.items():
            if generation != kept:
                self.stale += [self._chunk_key(generation, n) for n in range(count)]
        self._next_generation = max([0, *generations, *(g for g in [kept] if g is not None)]) + 1
        self._head_written = head is not None
        if applied is not None and start <= applied + 1 <= self.next_delta:
            wanted = range(applied + 1, self.next_delta)
            return Plan(False, self._delta_keys(wanted), len(wanted))
        keys: list[bytes] = []
        if self.checkpoint is not None:
            keys = [
                self._chunk_key(self.checkpoint["generation"], n) for n in range(self.checkpoint["chunks"])
            ]
        return Plan(True, keys + self._delta_keys(complete), len(complete))

    def _delta_keys(self, numbers: Iterable[int]) -> list[bytes]:
        return [self._delta_key(number, part) for number in numbers for part in range(self._deltas[number])]

    def _check(self, head: dict[str, Any]) -> None:
        written = head.get("format")
        if written != FORMAT:
            older = isinstance(written, int) and written < FORMAT
            raise StateMismatchError(
                f"decide partition {self.partition}: state format {written!r}, "
                + (
                    "written by an earlier stream-lsh that kept the window in memory and snapshots; "
                    "this version keeps it on disk and cannot load it. Start from empty state (a new "
                    "app id, or delete the app's internal topics and data directories) and feed the "
                    'window\'s input again (docs/operating.md, "Upgrading").'
                    if older
                    else f"this version of stream-lsh reads format {FORMAT}: run the version that wrote "
                    "it, or start from empty state (a new app id)."
                )
            )
        theirs = head.get("guard", {})
        if not guard_accepts(theirs, self.guard):
            raise StateMismatchError(f"decide partition {self.partition}: {mismatch(theirs, self.guard)}")
        self.checkpoint = head.get("checkpoint")

    @staticmethod
    def replay(keys: Iterable[bytes], get: Callable[[bytes], bytes | None]) -> Iterator[Row]:
        """The directory rows a plan's table rows hold, in order (``get``: a table row's value).
        A delta or a checkpoint slice larger than a message is in consecutive parts."""
        pieces: list[bytes] = []
        for key in keys:
            value = get(key)
            if value is None:
                raise StateMismatchError(f"the log's row {key!r} went missing while the window was opened")
            part, parts, _ = _PART.unpack_from(value)
            pieces.append(value[_PART.size :])
            if part == parts - 1:
                yield from decode_rows(b"".join(pieces) if len(pieces) > 1 else pieces[0])
                pieces = []

    # -- writing ----------------------------------------------------------------------------------
    def append(self, rows: list[Row], covered: int | None) -> list[Row]:
        """Table rows that log one micro-batch's directory rows as delta :attr:`next_delta` (the
        caller's rows note that number and ``covered`` in the directory, so that the directory
        says which delta it ends with, however it got there)."""
        out: list[Row] = [(key, None) for key in self.stale]
        self.stale = []
        if not self._head_written:
            out.append(self._head())
        number = self.next_delta
        self.next_delta += 1
        parts = self._pieces(encode_rows(rows), -1 if covered is None else covered)
        size = 0
        for part, value in enumerate(parts):
            out.append((self._delta_key(number, part), value))
            size += len(value)
        self.delta_bytes += size
        self._last_delta = size
        if self._building is not None:
            self._building["deltas"] += size
        self._deltas[number] = len(parts)
        if covered is not None:
            self.covered = covered
        return out

    def record(
        self,
        rows: list[Row],
        covered: int | None,
        read: Callable[[bytes, int], tuple[list[Row], bytes | None]],
    ) -> tuple[list[Row], list[Row]]:
        """One micro-batch: the directory's ``rows`` with this delta's note (:data:`NOTE`), to write
        once the table rows are durable, and the table rows that log them: the delta, then the next
        checkpoint slice (twice the delta's size, at least :attr:`chunk_bytes`; ``read`` as
        :meth:`copy_step`'s)."""
        rows = rows + DiskIndex.state_rows([(NOTE, {"delta": self.next_delta, "covered": covered})])
        logged = self.append(rows, covered)
        delta = sum(len(value or b"") for _, value in logged)
        return rows, logged + self.copy_step(read, budget=max(self.chunk_bytes, 2 * delta))

    def _pieces(self, blob: bytes, covered: int) -> list[bytes]:
        """A blob in values of at most ``chunk_bytes``, each with its place among them."""
        room = self.chunk_bytes - _PART.size
        pieces = [blob[i : i + room] for i in range(0, len(blob), room)] or [b""]
        return [_PART.pack(part, len(pieces), covered) + piece for part, piece in enumerate(pieces)]

    def copy_step(
        self, read: Callable[[bytes, int], tuple[list[Row], bytes | None]], budget: int
    ) -> list[Row]:
        """The next slice of a checkpoint, if one is due or under way: ``read(start, bytes)`` gives
        the directory's rows from a key on and where to go on from (as written before this batch's
        delta: every delta from the checkpoint's start on is kept). ``budget``: bytes to copy."""
        if self._building is None:
            if self.delta_bytes < max(self.compact_bytes, self.snapshot_bytes):
                return []
            # its first slice is read now, before this batch's rows are written: from the delta
            # just appended on, every delta is replayed after the chunks
            self._building = {
                "generation": self._next_generation,
                "start": self.next_delta - 1,
                "cursor": b"",
                "chunks": 0,
                "bytes": 0,
                "deltas": self._last_delta,
            }
            self._next_generation += 1
        building = self._building
        out: list[Row] = []
        room = self.chunk_bytes - _PART.size
        while budget > 0:
            taken, cursor = read(building["cursor"], min(room, budget))
            pieces = self._pieces(encode_rows(taken), -1)
            for piece in pieces:
                out.append((self._chunk_key(building["generation"], building["chunks"]), piece))
                building["chunks"] += 1
                building["bytes"] += len(piece)
                budget -= len(piece)
            if cursor is None:
                return out + self._finish(building)
            building["cursor"] = cursor
        return out

    def _finish(self, building: dict[str, Any]) -> list[Row]:
        """The checkpoint is whole: the head names it; older chunks and deltas go."""
        previous, start = self.checkpoint, building["start"]
        self.checkpoint = {k: building[k] for k in ("generation", "start", "chunks", "bytes")}
        self._building = None
        out = [self._head()]
        if previous is not None:
            out += [(self._chunk_key(previous["generation"], n), None) for n in range(previous["chunks"])]
        for number in [n for n in self._deltas if n < start]:
            out += [(self._delta_key(number, part), None) for part in range(self._deltas.pop(number))]
        self.delta_bytes = building["deltas"]
        return out

    def _head(self) -> Row:
        self._head_written = True
        return self.head_key, orjson.dumps(
            {"format": FORMAT, "guard": self.guard, "checkpoint": self.checkpoint}
        )

    def handled(self, offset: int) -> bool:
        """Whether the input record at ``offset`` is in the logged state already: records read again
        after a restart or a rebalance are not handled twice (the rule of
        :meth:`~stream_lsh.pipeline.journal.Journal.handled`, for every stage)."""
        return self.covered is not None and offset <= self.covered
