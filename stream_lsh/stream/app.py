"""The Faust app: one agent per stage, each moving the stage's outbox onto the next topics.

The stages themselves are the pure state machines of :mod:`stream_lsh.pipeline`; this module only
decodes micro-batches from Kafka, hands them to the stage object of their partition, and sends what
comes back. Every send of a batch is awaited before the agent takes the next one, so by the time
Faust commits an input offset, everything it caused is on the broker (at-least-once; the stages
make repeats harmless). Registrations (``Outbox.first``) are acknowledged before the probes that
follow them are sent.

Agents run with ``concurrency=1``: they own per-partition state, and faust-streaming #606 loses
messages when a stateful agent runs concurrently.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

import faust
import orjson

from ..core.dedup import Deduplicator
from ..pipeline.gather import Gather
from ..pipeline.ingest import Ingest, Message
from ..pipeline.outbox import Outbox, Stage
from ..pipeline.shard import Shard
from ..pipeline.signer import Signer
from ..settings import Settings, SettingsError
from .topics import TopicNames, layout_of

__all__ = ["StreamApp", "faust_broker_url"]


def faust_broker_url(bootstrap: str) -> str:
    """``host:port,host:port`` -> Faust's ``kafka://host:port;host:port``."""
    hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
    if not hosts:
        raise SettingsError("no broker given (STREAM_LSH_BROKER or --broker)")
    return "kafka://" + ";".join(hosts)


def _encode(records: list[dict[str, Any]]) -> bytes:
    return orjson.dumps(records)


class StreamApp:
    """A Faust app wired to the pipeline stages; ``app`` is what a worker runs."""

    def __init__(self, settings: Settings, bootstrap: str) -> None:
        if settings.verify != "signature":
            raise SettingsError("the stream verifies candidates by signature agreement (verify=signature); "
                                "verify=jaccard needs shingle sets that the band tables do not keep")
        self.settings = settings
        self.names = TopicNames.from_settings(settings)
        self.layout = layout_of(settings)
        self.engine = Deduplicator(settings.dedup_config())
        config = self.engine.config
        self.ingest = Ingest(self.engine, self.layout, max_page_bytes=settings.max_page_bytes)
        self.signers: dict[int, Signer] = {}
        self.shards: dict[int, Shard] = {}
        self.homes: dict[int, Gather] = {}
        self._make: dict[str, Callable[[int], Any]] = {
            Stage.SITES: lambda p: Signer(self.engine, self.layout, p),
            Stage.BANDS: lambda p: Shard(p, bucket_cap=config.bucket_cap, ttl=config.ttl),
            Stage.HOMES: lambda p: Gather(p, self.layout, threshold=config.threshold, ttl=config.ttl),
        }
        self._states = {Stage.SITES: self.signers, Stage.BANDS: self.shards, Stage.HOMES: self.homes}
        self.app = self._build_app(bootstrap)

    # -- the Faust app -------------------------------------------------------------------------
    def _build_app(self, bootstrap: str) -> faust.App:
        s = self.settings
        app = faust.App(
            s.app_id,
            broker=faust_broker_url(bootstrap),
            datadir=s.data_dir,
            store="memory://",
            web_enabled=s.web_port > 0,
            web_port=s.web_port or 6066,
            web_bind="127.0.0.1",
            web_tables_enabled=False,
            consumer_auto_offset_reset="earliest",
            # a first JoinGroup otherwise waits out the 60 s rebalance timeout on a fresh group
            broker_rebalance_timeout=4.0,
            broker_session_timeout=6.0,
            broker_heartbeat_interval=1.0,
            broker_commit_interval=1.0,
            stream_buffer_maxsize=max(2 * s.batch_size, 256),
            producer_max_request_size=max(2 * s.max_page_bytes, 1_048_576),
            consumer_max_fetch_size=max(2 * s.max_page_bytes, 1_048_576),
            topic_allow_declare=False,
        )
        raw = {"key_type": bytes, "value_type": bytes, "key_serializer": "raw", "value_serializer": "raw",
               "allow_empty": True}
        within = s.batch_wait_ms / 1000.0

        async def ingest_pages(stream: Any) -> None:
            async for events in stream.take_events(s.batch_size, within=within):
                await self._send(self.ingest.pages([_message(e) for e in events]))

        async def ingest_queries(stream: Any) -> None:
            async for events in stream.take_events(s.batch_size, within=within):
                await self._send(self.ingest.queries([_message(e) for e in events]))

        app.agent(app.topic(self.names.input, **raw), name="ingest-pages", concurrency=1)(ingest_pages)
        app.agent(app.topic(self.names.queries, **raw), name="ingest-queries", concurrency=1)(ingest_queries)
        for stage in Stage.ALL:
            app.agent(app.topic(self.names.internal(stage), **raw), name=f"stage-{stage}",
                      concurrency=1)(self._stage_agent(stage, within))
        return app

    def _stage_agent(self, stage: str, within: float) -> Callable[[Any], Awaitable[None]]:
        states, make = self._states[stage], self._make[stage]
        batch = self.settings.batch_size

        async def run(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                by_partition: dict[int, list[dict[str, Any]]] = {}
                for event in events:
                    by_partition.setdefault(event.message.partition, []).extend(orjson.loads(event.message.value))
                out = Outbox()
                for partition, records in by_partition.items():
                    state = states.get(partition)
                    if state is None:
                        state = states[partition] = make(partition)
                    out.extend(state.handle(records))
                await self._send(out)

        return run

    # -- sending an outbox -----------------------------------------------------------------------
    async def _send(self, out: Outbox) -> None:
        if out.is_empty():
            return
        producer = self.app.producer
        first = [await producer.send(self.names.internal(stage), None, _encode(records), partition, None, None)
                 for stage, parts in out.first.items() for partition, records in parts.items() if records]
        if first:
            await asyncio.gather(*first)
        pending: list[Awaitable[Any]] = []
        for stage, parts in out.internal.items():
            for partition, records in parts.items():
                if records:
                    pending.append(await producer.send(self.names.internal(stage), None, _encode(records),
                                                       partition, None, None))
        for topic, items in ((self.names.decisions, out.decisions), (self.names.answers, out.answers),
                             (self.names.clusters, out.clusters), (self.names.dead_letters, out.dead_letters)):
            for key, value in items:
                pending.append(await producer.send(topic, _key(key), None if value is None else orjson.dumps(value),
                                                   None, None, None))
        for key, raw in out.unique_pages:
            pending.append(await producer.send(self.names.unique, _key(key), raw, None, None, None))
        if pending:
            await asyncio.gather(*pending)


def _key(key: str | None) -> bytes | None:
    return None if key is None else key.encode("utf-8")


def _message(event: Any) -> Message:
    message = event.message
    return Message(message.topic, message.partition, message.offset, message.key, message.value)

