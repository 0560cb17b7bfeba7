"""The whole dataflow in one process, with a queue per stage partition.

Not how the product runs (that is :mod:`stream_lsh.stream`), but the same stage objects wired by
plain queues: the tests use it to check the protocol against batch under every delivery order they
care to try, which a real broker can only sample. Queues are FIFO per partition, as Kafka is; the
scheduler picks which partition runs next (in a fixed rotation, or at random from a seeded RNG).

With ``durable=True`` every stage partition also keeps its :class:`~.journal.Journal` rows in a
dict, as the stream keeps them in RocksDB, and :meth:`restart` rebuilds a partition from them: the
tests crash partitions at arbitrary points this way and check that nothing changes.
``tests/crashing_pipeline.py`` builds on it to deliver as Kafka does and kill the whole worker.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any

from ..core.clock import FileClock
from ..core.config import DedupConfig
from ..core.dates import DateReading
from ..core.prepare import Preparer
from ..core.record import InputLine, parse_record
from ..core.spread import AlertRules
from . import codec
from .ingest import Ingest, Message
from .journal import Journal
from .limits import RecordLimit
from .messages import Message as StageMessage
from .outbox import Outbox, Stage
from .routing import Layout
from .stages import stage_factories
from .waits import Wait

__all__ = ["LocalPipeline"]


class LocalPipeline:
    """All partitions of all stages, fed through :meth:`feed`, drained by :meth:`run`."""

    def __init__(
        self,
        config: DedupConfig,
        layout: Layout,
        *,
        max_page_bytes: int = 10_000_000,
        max_message_bytes: int | None = None,
        rng: random.Random | None = None,
        durable: bool = False,
        compact_bytes: int = 16 << 20,
        inputs: int | None = None,
        lateness: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        alerts: AlertRules | None = None,
    ) -> None:
        """``inputs``: the number of input partitions, to apply probes in (clock, id) order under
        watermarks (:mod:`.order`); None keeps arrival order. Fed values are stamped with the
        clock ``stream-lsh produce`` would give them, as lines of one file, in feed order.
        ``max_message_bytes``: the transport's record limit (:mod:`.limits`); None: unlimited.
        ``alerts``: the story-spread rules (None: no alerts)."""
        self.inputs = inputs
        preparer = Preparer(config)
        self.max_page_bytes = max_page_bytes
        self.limit = None if max_message_bytes is None else RecordLimit(max_message_bytes)
        self.ingest = Ingest(
            preparer,
            layout,
            max_page_bytes=max_page_bytes,
            watermarks=inputs is not None,
            lateness=lateness,
            limit=self.limit,
        )
        self._make = stage_factories(preparer, layout, inputs, int(lateness * 1000), clock, alerts)
        self.feeder_clock = FileClock(max_future=config.max_future)
        self.stages: dict[str, list[Any]] = {
            stage: [self._make[stage](p) for p in range(layout.partitions(stage))] for stage in Stage.ALL
        }
        self.compact_bytes = compact_bytes
        self.journals: dict[tuple[str, int], Journal] | None = None
        self.rows: dict[tuple[str, int], dict[bytes, bytes]] = {}
        if durable:
            self.journals = {
                (stage, p): self._journal(p) for stage in Stage.ALL for p in range(layout.partitions(stage))
            }
            self.rows = {key: {} for key in self.journals}
        self.queues: dict[tuple[str, int], deque[bytes]] = {
            (stage, p): deque() for stage, parts in self.stages.items() for p in range(len(parts))
        }
        self.rng = rng
        self.outputs = Outbox()
        self._offset = 0

    def feed(
        self,
        values: Iterable[bytes | None],
        *,
        topic: str = "pages",
        partition: int | Iterable[int] = 0,
        caught_up: Collection[int] | Mapping[int, int] = (),
        timestamps: Iterable[int] | None = None,
        ends: Mapping[int, int] | None = None,
    ) -> None:
        """One ingest batch; ``partition``: the input partition of every value, or of each;
        ``caught_up``: the input partitions whose last record is in the batch (as a mapping, to
        the offset their claims cover); ``timestamps``: the records' timestamps (default:
        :meth:`stamp`); ``ends``: end offsets of other workers' input partitions, as a worker
        asks them after its batch (:meth:`.ingest.Ingest.pages`)."""
        values = list(values)
        stamps = self.stamp(values) if timestamps is None else timestamps
        self._ingest(values, topic, partition, caught_up, stamps, ends)

    def stamp(self, values: Iterable[bytes | None]) -> list[int]:
        """Record timestamps for values fed in this order, as ``produce`` stamps a file's lines."""
        stamps: list[int] = []
        for value in values:
            line = InputLine(0, b"", parse_record(value.strip(), self.max_page_bytes)) if value else None
            date, site = (line.date, line.site) if line is not None else (DateReading(None), "")
            stamps.append(self.feeder_clock.stamp(date, self._offset + len(stamps) + 1, site))
        return stamps

    def _ingest(
        self,
        values: list[bytes | None],
        topic: str,
        partition: int | Iterable[int],
        caught_up: Collection[int] | Mapping[int, int],
        timestamps: Iterable[int],
        ends: Mapping[int, int] | None = None,
    ) -> None:
        partitions = [partition] * len(values) if isinstance(partition, int) else list(partition)
        messages = []
        for value, part, stamp in zip(values, partitions, timestamps, strict=True):
            messages.append(Message(topic, part, self._offset, None, value, stamp))
            self._offset += 1
        out = (
            self.ingest.queries(messages)
            if topic == "queries"
            else self.ingest.pages(messages, caught_up, ends)
        )
        self._deliver(out)

    def idle(self, partition: int) -> None:
        """An input partition is caught up and quiet (what the stream's timer would say)."""
        if self.inputs is not None:
            self._deliver(self.ingest.idle(partition))

    def changed_hands(self, partitions: Iterable[int], *, before: int | None = None) -> None:
        """Input partitions were given up or taken over (what a worker sends at a rebalance); with
        ``before``, a group generation, only claims made in an earlier one are withdrawn (what a
        worker sends for every input partition at an assignment)."""
        self._deliver(self.ingest.changed_hands(set(partitions), before=before))

    def finish(self) -> None:
        """The end of the input: every input partition idle."""
        for partition in range(self.inputs or 0):
            self.idle(partition)

    def _deliver(self, out: Outbox) -> None:
        for section in (out.first, out.internal):  # first: durable before the rest is sent
            for key, messages in _messages(section):
                if self.limit is None:
                    self._enqueue(key, codec.encode(messages))
                else:  # as the Faust app splits them
                    for record in codec.encode_within(messages, self.limit.batch_bytes):
                        self._enqueue(key, record)
        internal_free = Outbox(
            decisions=out.decisions,
            unique_pages=out.unique_pages,
            clusters=out.clusters,
            alerts=out.alerts,
            answers=out.answers,
            dead_letters=out.dead_letters,
            tally=out.tally,
        )
        self.outputs.extend(internal_free)

    def _enqueue(self, key: tuple[str, int], batch: bytes) -> None:
        """One Kafka message (a batch of stage messages, encoded) onto a stage partition's topic."""
        self.queues[key].append(batch)

    def step(self) -> bool:
        """Run one batch of one partition; False when every queue is empty."""
        ready = [key for key, queue in self.queues.items() if queue]
        if not ready:
            return False
        key = self.rng.choice(ready) if self.rng is not None else ready[0]
        self._handle(key, self.queues[key].popleft())
        return True

    def drain(self, stage: str) -> None:
        """Run every batch queued for ``stage`` now (not those its own outputs queue for it)."""
        for partition in range(len(self.stages[stage])):
            queue = self.queues[(stage, partition)]
            for _ in range(len(queue)):
                self._handle((stage, partition), queue.popleft())

    def _handle(self, key: tuple[str, int], batch: bytes) -> None:
        stage, partition = key
        self._deliver(self.stages[stage][partition].handle(codec.decode(stage, batch)))
        if self.journals is not None:
            journal, rows = self.journals[key], self.rows[key]
            self._apply(rows, journal.append([batch]))  # as the stream journals it: the bytes it received
            if journal.due():
                self._apply(rows, journal.compact(self.stages[stage][partition]))

    @staticmethod
    def _apply(rows: dict[bytes, bytes], writes: list[tuple[bytes, bytes | None]]) -> None:
        for row_key, value in writes:
            if value is None:
                rows.pop(row_key, None)
            else:
                rows[row_key] = value

    def _journal(self, partition: int) -> Journal:
        return Journal(partition, {"test": True}, compact_bytes=self.compact_bytes, chunk_bytes=4096)

    def restart(self, stage: str, partition: int) -> int:
        """Forget a partition's memory and rebuild it from its rows (``durable`` only); returns
        the segments replayed."""
        if self.journals is None:
            raise RuntimeError("restart needs durable=True")
        fresh = self._make[stage](partition)
        journal = self.journals[(stage, partition)] = self._journal(partition)
        replayed = journal.load(sorted(self.rows[(stage, partition)].items()), fresh)
        self.stages[stage][partition] = fresh
        return replayed

    def stalled(self, bound: float) -> list[Wait]:
        """Waits of every partition stuck for more than ``bound`` seconds (see :mod:`.waits`)."""
        return [
            wait
            for parts in self.stages.values()
            for stage in parts
            if hasattr(stage, "stalled")
            for wait in stage.stalled(bound)
        ]

    def run(self, max_steps: int = 10_000_000) -> None:
        for _ in range(max_steps):
            if not self.step():
                return
        raise RuntimeError(f"the pipeline did not settle in {max_steps} steps")


def _messages(
    section: dict[str, dict[int, list[StageMessage]]],
) -> Iterator[tuple[tuple[str, int], list[StageMessage]]]:
    """The Kafka messages of one outbox section: one per target stage partition."""
    for stage, partitions in section.items():
        for partition, messages in partitions.items():
            if messages:
                yield (stage, partition), list(messages)
