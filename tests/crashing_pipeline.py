"""A model of one worker on Kafka, killed with kill -9 at any point: :class:`CrashingPipeline`.

Test-only (the in-process crash tests of ``test_journal.py``): it finds protocol bugs fast, under
delivery orders and crash points a real broker can only sample. The proof with real processes
and real signals is ``test_chaos.py`` and ``test_restart.py``.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.spread import AlertRules
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.journal import Row
from stream_lsh.pipeline.local import LocalPipeline, _messages
from stream_lsh.pipeline.outbox import Outbox, Stage
from stream_lsh.pipeline.routing import Layout

__all__ = ["CrashingPipeline"]


class CrashingPipeline(LocalPipeline):
    """:class:`LocalPipeline` delivering as one worker on Kafka does, so that :meth:`crash` can model
    a kill -9 of that worker (:meth:`LocalPipeline.restart` models a clean restart of one partition).

    * Every stage partition's input is a log, and a consumer position in it. The agents take what
      has arrived, so a micro-batch is one to ``max_batch`` messages, handled as one batch and
      journaled as the list of its messages (replay hands them to the stage one by one).
    * A batch's journal rows are written after its sends and become durable later, in order (they
      are changelog messages of one partition): a crash keeps a prefix of them, cutting a segment,
      a snapshot's chunks, its head or its tombstones anywhere.
    * An offset is committed only with the rows of every batch before it (a commit flushes the
      producer first), so a partition's committed <= journaled <= handled, all three apart at times.
    * :meth:`crash` stops every stage at once: each keeps the durable prefix of its rows and resumes
      at its committed offset, so it gets again what it handled since, journaled or not, grouped
      into other micro-batches; a batch whose sends were under way has sent only some of them (the
      registrations, awaited first, before any probe); the input is redelivered from its own
      committed offset (ingest keeps no state).

    Every random choice comes from ``rng``: a seed replays a run.
    """

    def __init__(
        self,
        config: DedupConfig,
        layout: Layout,
        *,
        rng: random.Random,
        compact_bytes: int = 16 << 20,
        max_batch: int = 4,
        flush_rate: float = 0.3,
        commit_rate: float = 0.1,
        alerts: AlertRules | None = None,
    ) -> None:
        super().__init__(config, layout, rng=rng, durable=True, compact_bytes=compact_bytes, alerts=alerts)
        self.random = rng
        self.max_batch, self.flush_rate, self.commit_rate = max_batch, flush_rate, commit_rate
        self.logs: dict[tuple[str, int], list[bytes]] = {key: [] for key in self.queues}
        self.committed = {key: 0 for key in self.queues}
        self.unflushed: dict[tuple[str, int], list[Row]] = {key: [] for key in self.queues}
        self.fed: list[tuple[str, bytes | None, int]] = []  # topic, value, record timestamp
        self.fed_committed = 0
        self.crashes = 0
        self.redelivered = 0  # messages handed to a restarted worker that its predecessor had taken

    # -- delivery -------------------------------------------------------------------------------
    def feed(self, values: Iterable[bytes | None], *, topic: str = "pages") -> None:
        values = list(values)
        stamps = self.stamp(values)
        self.fed.extend((topic, value, stamp) for value, stamp in zip(values, stamps))
        self._ingest(values, topic, 0, (), stamps)

    def _enqueue(self, key: tuple[str, int], batch: bytes) -> None:
        self.logs[key].append(batch)
        super()._enqueue(key, batch)

    def _deliver_partly(self, out: Outbox) -> None:
        """Sends cut short by a crash: any of the registrations; the rest only if all of them went."""
        chance = self.random.random
        first = [message for message in _messages(out.first) if chance() < 0.5]
        for key, messages in first:
            self._enqueue(key, codec.encode(messages))
        if len(first) < sum(1 for _ in _messages(out.first)):
            return
        for key, messages in _messages(out.internal):
            if chance() < 0.5:
                self._enqueue(key, codec.encode(messages))
        mine_theirs = (
            (self.outputs.decisions, out.decisions),
            (self.outputs.unique_pages, out.unique_pages),
            (self.outputs.clusters, out.clusters),
            (self.outputs.answers, out.answers),
        )
        for mine, theirs in mine_theirs:
            mine.extend(record for record in theirs if chance() < 0.5)  # type: ignore[attr-defined]

    # -- running ----------------------------------------------------------------------------------
    def step(self) -> bool:
        """Run one micro-batch of one partition, then maybe flush journal rows and commit offsets."""
        ready = [key for key, queue in self.queues.items() if queue]
        if not ready:
            return False
        self._run_batch(self.random.choice(ready))
        if self.random.random() < self.flush_rate:
            key = self.random.choice(list(self.unflushed))
            self._flush(key, self.random.randint(0, len(self.unflushed[key])))
        if self.random.random() < self.commit_rate:
            self._commit()
        return True

    def _run_batch(self, key: tuple[str, int], *, cut_short: bool = False) -> None:
        queue = self.queues[key]
        messages = [queue.popleft() for _ in range(self.random.randint(1, min(len(queue), self.max_batch)))]
        stage, partition = key
        state = self.stages[stage][partition]
        out = state.handle([m for batch in messages for m in codec.decode(stage, batch)])
        if cut_short:
            self._deliver_partly(out)
            return  # the journal is written after the sends: never, this time
        self._deliver(out)
        journal = self.journals[key]  # type: ignore[index]
        rows = journal.append(messages)
        if journal.due():
            rows += journal.compact(state)
        self.unflushed[key].extend(rows)

    def _flush(self, key: tuple[str, int], count: int) -> None:
        """The first ``count`` unflushed rows of a partition reach the changelog (in order)."""
        self._apply(self.rows[key], self.unflushed[key][:count])
        del self.unflushed[key][:count]

    def _commit(self) -> None:
        """Faust's commit: flush every row written so far, then commit every handled offset."""
        for key, queue in self.queues.items():
            self._flush(key, len(self.unflushed[key]))
            self.committed[key] = len(self.logs[key]) - len(queue)
        self.fed_committed = len(self.fed)

    def crash(self) -> None:
        """kill -9 of the worker, and a new one on the changelogs alone (see the class docstring)."""
        self.crashes += 1
        for stage in Stage.ALL:  # each stage's agent may be sending a batch
            busy = [(stage, p) for p in range(len(self.stages[stage])) if self.queues[(stage, p)]]
            if busy and self.random.random() < 0.5:
                self._run_batch(self.random.choice(busy), cut_short=True)
        for key, queue in self.queues.items():
            self.redelivered += len(self.logs[key]) - len(queue) - self.committed[key]
            self._flush(key, self.random.randint(0, len(self.unflushed[key])))
            self.unflushed[key].clear()
            self.restart(*key)
            self.queues[key] = deque(self.logs[key][self.committed[key] :])
        for topic, value, stamp in self.fed[self.fed_committed :]:
            self._ingest([value], topic, 0, (), [stamp])
