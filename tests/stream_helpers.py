"""Helpers of the stream tests: the batch reference, settings for a test app, reading decisions."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import os
import time
import uuid
from collections import Counter
from collections.abc import Iterable

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from stream_lsh.batch import DecisionRecords, RejectSink, SpreadAlerts, run_batch
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.page import page_from_dict
from stream_lsh.core.spread import AlertRules, SpreadTracker
from stream_lsh.settings import Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.client import FileFeeder, feed_lines, read_topic
from stream_lsh.stream.runner import Progress, Workers
from stream_lsh.stream.topics import TopicNames, topic_specs


def stream_settings(broker, tmp_path, **overrides) -> Settings:
    app = f"t{uuid.uuid4().hex[:8]}"
    values = dict(
        broker=broker.bootstrap,
        app_id=app,
        input_topic=f"{app}-pages",
        queries_topic=f"{app}-queries",
        decisions_topic=f"{app}-decisions",
        clusters_topic=f"{app}-clusters",
        alerts_topic=f"{app}-alerts",
        unique_topic=f"{app}-unique",
        answers_topic=f"{app}-answers",
        dead_letters_topic=f"{app}-dead",
        data_dir=str(tmp_path / "data"),
        input_partitions=4,
        site_partitions=3,
        log_level=os.environ.get("STREAM_LSH_TEST_LOG_LEVEL", "warning"),
    )  # info: to see why a test failed
    values.update(overrides)
    return Settings.load(environ={}, **values)


def batch_reference(
    pages: list[dict], *, boilerplate: bool = True, ttl_hours: float | None = None
) -> list[dict]:
    config = DedupConfig(boilerplate=boilerplate)
    if ttl_hours is not None:
        config = dataclasses.replace(config, ttl=ttl_hours * 3600)
    engine = Deduplicator(config)
    return [engine.process(page_from_dict(page)).to_dict() for page in pages]


def batch_alerts(pages: list[dict], config: DedupConfig, rules: AlertRules) -> dict[str, dict]:
    """What ``stream-lsh dedup --alerts`` writes for the pages, by key."""
    alerts = DecisionRecords()
    run_batch(
        [orjson.dumps(page) for page in pages],
        Deduplicator(config),
        out=DecisionRecords(),
        rejects=RejectSink(io.BytesIO),
        alerts=SpreadAlerts(SpreadTracker(rules), alerts),
    )
    return {record["key"]: record for record in alerts.records}


async def read_alerts(bootstrap: str, topic: str, keys: Iterable[str]) -> dict[str, set[bytes]]:
    """Every record of an alerts topic by key (JSON with sorted keys, so one record sent twice is
    one entry), read until all ``keys`` are there (2 minutes at most), then 3 s more for others."""
    sent: dict[str, set[bytes]] = {}
    wanted = set(keys)

    async def read(until_complete: bool) -> None:
        async for key, value, _, _ in read_topic(bootstrap, topic, idle_ms=200):
            assert key is not None and value is not None
            record = orjson.dumps(orjson.loads(value), option=orjson.OPT_SORT_KEYS)
            sent.setdefault(key.decode(), set()).add(record)
            if until_complete and sent.keys() >= wanted:
                return

    await asyncio.wait_for(read(until_complete=True), timeout=120)
    with contextlib.suppress(asyncio.TimeoutError):  # and nothing else comes meanwhile
        await asyncio.wait_for(read(until_complete=False), timeout=3)
    return sent


class DecisionReader:
    """Reads a decisions (or answers: ``field="correlation_id"``) topic from the start, without a
    group, as records arrive."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, field: str = "id") -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, fetch_max_wait_ms=50, auto_offset_reset="earliest"
        )
        self.topic, self.partitions, self.field = topic, partitions, field
        self.records: list[dict] = []

    async def __aenter__(self) -> DecisionReader:
        await self.consumer.start()
        self.consumer.assign([TopicPartition(self.topic, p) for p in range(self.partitions)])
        return self

    async def __aexit__(self, *exc) -> None:
        await self.consumer.stop()

    async def until(self, page_id: str, timeout: float = 30.0, check=lambda: None) -> dict:
        """The first decision for ``page_id``; ``check`` raises if the workers died meanwhile."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            check()
            for record in self.records:
                if record[self.field] == page_id:
                    return record
            for messages in (await self.consumer.getmany(timeout_ms=200)).values():
                self.records.extend(orjson.loads(m.value) for m in messages)
        raise TimeoutError(f"no decision for {page_id} in {timeout} s")

    async def drain(self, seconds: float) -> None:
        """Read whatever arrives in the next ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for messages in (await self.consumer.getmany(timeout_ms=100)).values():
                self.records.extend(orjson.loads(m.value) for m in messages)


async def run_page_by_page(settings: Settings, pages: list[dict], workers: int) -> list[dict]:
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    names = TopicNames.from_settings(settings)
    pool = Workers(settings, settings.stream.broker, workers)
    producer = AIOKafkaProducer(bootstrap_servers=settings.stream.broker)
    await producer.start()
    try:
        decided = []
        feeder = await FileFeeder.start(producer, names.input)
        async with DecisionReader(
            settings.stream.broker, names.decisions, settings.stream.input_partitions
        ) as reader:
            for page in pages:
                fed = await feeder.send_record(page)
                try:
                    decided.append(
                        await reader.until(
                            page["id"], timeout=60.0 if not decided else 20.0, check=pool.check
                        )
                    )
                except TimeoutError as error:
                    where = await group_positions(settings)
                    raise TimeoutError(
                        f"{error}; it is at input partition {fed.partition} offset {fed.offset}; {where}"
                    ) from error
        return decided
    finally:
        await producer.stop()
        pool.stop()


async def feed_until_accounted(
    settings: Settings, pages: list[dict], bad: list[bytes], pool: Workers
) -> tuple[Counter[str], Counter[str]]:
    """Feed ``pages`` and then ``bad`` lines to running workers, and wait until every page has its
    decision and every bad line its dead letter; returns the decisions by status and the dead
    letters by reason that the output topics hold."""
    names = TopicNames.from_settings(settings)
    bootstrap, partitions = settings.stream.broker, settings.stream.input_partitions
    await feed_lines(bootstrap, names.input, [*(orjson.dumps(page) for page in pages), *bad])
    async with (
        DecisionReader(bootstrap, names.decisions, partitions) as decisions,
        DecisionReader(bootstrap, names.dead_letters, partitions, field="offset") as dead,
    ):
        for page in pages:
            await decisions.until(page["id"], timeout=90, check=pool.check)
        while len(dead.records) < len(bad):
            await dead.drain(0.5)
            pool.check()
    statuses = Counter(record["status"] for record in decisions.records)
    return statuses, Counter(record["reason"] for record in dead.records)


def follow_decisions(bootstrap: str, topic: str, progress: Progress) -> asyncio.Task:
    """Feed every decision of ``topic`` into ``progress`` as it arrives (cancel the task to stop)."""

    async def read() -> None:
        async for _, value, _, _ in read_topic(bootstrap, topic, follow=True, idle_ms=200):
            progress.on_decision(orjson.loads(value))

    return asyncio.create_task(read())


async def group_positions(settings: Settings) -> str:
    """The app's committed offsets and the end offsets of its input and internal topics, to say
    where a page that got no decision stopped."""
    from aiokafka.admin import AIOKafkaAdminClient

    from stream_lsh.pipeline.outbox import Stage

    names = TopicNames.from_settings(settings)
    topics = [names.input, *(names.internal(stage) for stage in Stage.ALL)]
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.stream.broker, group_id=None)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.stream.broker)
    await consumer.start()
    await admin.start()
    try:
        await consumer._client.force_metadata_update()
        tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        ends = await consumer.end_offsets(tps)
        committed = await admin.list_consumer_group_offsets(settings.stream.app_id)
    finally:
        await consumer.stop()
        await admin.close()
    parts = [
        f"{tp.topic.removeprefix(settings.stream.app_id + '-')}[{tp.partition}] "
        f"{committed[tp].offset if tp in committed else '-'}/{ends[tp]}"
        for tp in tps
    ]
    return "committed/end: " + ", ".join(parts)


async def commit_offset(bootstrap: str, group: str, tp: TopicPartition, offset: int) -> None:
    """Commit ``offset`` for ``group``, as a previous member of the group would have."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.commit({tp: offset})
    finally:
        await consumer.stop()
