"""StageStore: a batch's journal rows are on the broker before the batch may be acknowledged.

Faust sends changelog rows in the background and only logs a failed one, so the store keeps the
futures of the rows it writes and ``durable()`` waits for them, raising when one failed (the agent
then ends the worker before the batch's input can be committed).
"""

from __future__ import annotations

import uuid

import faust
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.app import faust_broker_url
from stream_lsh.stream.state import StageStore
from stream_lsh.stream.topics import TopicSpec

pytestmark = pytest.mark.asyncio


async def changelog_rows(bootstrap: str, topic: str, partition: int) -> dict[bytes, bytes]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        batches = await consumer.getmany(tp, timeout_ms=2000)
        return {m.key: m.value for m in batches.get(tp, [])}
    finally:
        await consumer.stop()


async def test_rows_are_awaited_and_a_row_the_broker_refuses_fails_the_batch(broker):
    app = faust.App(
        f"durable{uuid.uuid4().hex[:6]}",
        broker=faust_broker_url(broker.bootstrap),
        store="memory://",
        producer_max_request_size=100_000,
        topic_allow_declare=False,
    )
    store = StageStore(
        app,
        "decide",
        2,
        lambda partition: None,
        {},
        compact_bytes=1 << 20,
        chunk_bytes=1 << 16,
        row_timeout_s=60.0,
    )
    changelog = store.table.changelog_topic.get_topic_name()
    await ensure_topics(broker.bootstrap, [TopicSpec(changelog, 2, {})])
    await app.producer.start()
    try:
        store.table.send_changelog(1, b"segment-1", b"[1]")
        store.table.send_changelog(1, b"segment-2", b"[2]")
        await store.durable()
        assert store.table.unsent == []
        assert await changelog_rows(broker.bootstrap, changelog, 1) == {
            b"segment-1": b"[1]",
            b"segment-2": b"[2]",
        }

        store.table.send_changelog(1, b"segment-3", b"x" * 200_000)  # larger than a request may be
        with pytest.raises(Exception, match=r"(?i)size|large"):
            await store.durable()
    finally:
        await app.producer.stop()
