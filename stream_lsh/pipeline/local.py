"""The whole dataflow in one process, with a queue per stage partition.

Not how the product runs (that is :mod:`stream_lsh.stream`), but the same stage objects wired by
plain queues: the tests use it to check the protocol against batch under every delivery order they
care to try, which a real broker can only sample. Queues are FIFO per partition, as Kafka is; the
scheduler picks which partition runs next (in a fixed rotation, or at random from a seeded RNG).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any, Iterable

from ..core.dedup import Deduplicator
from .gather import Gather
from .ingest import Ingest, Message
from .outbox import Outbox, Stage
from .routing import Layout
from .shard import Shard
from .signer import Signer

__all__ = ["LocalPipeline"]


class LocalPipeline:
    """All partitions of all stages, fed through :meth:`feed`, drained by :meth:`run`."""

    def __init__(self, engine: Deduplicator, layout: Layout, *, max_page_bytes: int = 10_000_000,
                 rng: random.Random | None = None) -> None:
        config = engine.config
        self.ingest = Ingest(engine, layout, max_page_bytes=max_page_bytes)
        self.stages: dict[str, list[Any]] = {
            Stage.SITES: [Signer(engine, layout, p) for p in range(layout.sites)],
            Stage.BANDS: [Shard(p, bucket_cap=config.bucket_cap, ttl=config.ttl) for p in range(layout.bands)],
            Stage.HOMES: [Gather(p, layout, threshold=config.threshold, ttl=config.ttl) for p in range(layout.homes)],
        }
        self.queues: dict[tuple[str, int], deque[list[dict[str, Any]]]] = {
            (stage, p): deque() for stage, parts in self.stages.items() for p in range(len(parts))
        }
        self.rng = rng
        self.outputs = Outbox()
        self._offset = 0

    def feed(self, values: Iterable[bytes | None], *, topic: str = "pages") -> None:
        messages = []
        for value in values:
            messages.append(Message(topic, 0, self._offset, None, value))
            self._offset += 1
        out = self.ingest.queries(messages) if topic == "queries" else self.ingest.pages(messages)
        self._deliver(out)

    def _deliver(self, out: Outbox) -> None:
        for section in (out.first, out.internal):  # first: durable before the rest is sent
            for stage, partitions in section.items():
                for partition, records in partitions.items():
                    if records:
                        self.queues[(stage, partition)].append(list(records))
        internal_free = Outbox(decisions=out.decisions, unique_pages=out.unique_pages, clusters=out.clusters,
                               answers=out.answers, dead_letters=out.dead_letters)
        self.outputs.extend(internal_free)

    def step(self) -> bool:
        """Run one batch of one partition; False when every queue is empty."""
        ready = [key for key, queue in self.queues.items() if queue]
        if not ready:
            return False
        key = self.rng.choice(ready) if self.rng is not None else ready[0]
        batch = self.queues[key].popleft()
        stage, partition = key
        self._deliver(self.stages[stage][partition].handle(batch))
        return True

    def drain(self, stage: str) -> None:
        """Run every batch queued for ``stage`` now (not those its own outputs queue for it)."""
        for partition in range(len(self.stages[stage])):
            queue = self.queues[(stage, partition)]
            for _ in range(len(queue)):
                self._deliver(self.stages[stage][partition].handle(queue.popleft()))

    def run(self, max_steps: int = 10_000_000) -> None:
        for _ in range(max_steps):
            if not self.step():
                return
        raise RuntimeError(f"the pipeline did not settle in {max_steps} steps")
