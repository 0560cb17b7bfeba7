"""The worker's consumer: a partition never committed is read again from its start when Faust
rewinds to the committed offsets (stream/consumer.py), on both brokers."""

from __future__ import annotations

import asyncio
import uuid

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from stream_helpers import commit_offset

from stream_lsh.settings import Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.app import StreamApp
from stream_lsh.stream.consumer import RewindingConsumer, never_committed, rewind
from stream_lsh.stream.topics import TopicSpec

RECORDS = 5


async def _fill(bootstrap: str, topic: str, partitions: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await asyncio.gather(
            *[
                await producer.send(topic, b"r%d" % i, partition=p)
                for p in range(partitions)
                for i in range(RECORDS)
            ]
        )
    finally:
        await producer.stop()


async def _read_to_end(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> dict[int, list[int]]:
    """Offsets read per partition until every partition's position is at its end."""
    read: dict[int, list[int]] = {tp.partition: [] for tp in tps}
    for _ in range(100):
        for tp, records in (await consumer.getmany(*tps, timeout_ms=200)).items():
            read[tp.partition].extend(r.offset for r in records)
        if [await consumer.position(tp) for tp in tps] == [RECORDS] * len(tps):
            return read
    raise AssertionError(f"did not reach the end of {tps}: read {read}")


async def test_a_partition_never_committed_is_read_again_from_its_start(broker):
    topic, group = f"c{uuid.uuid4().hex[:8]}", f"g{uuid.uuid4().hex[:8]}"
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2, {})])
    await _fill(broker.bootstrap, topic, 2)
    never, committed_at_3 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    # committed before the consumer looks its position up
    await commit_offset(broker.bootstrap, group, committed_at_3, 3)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=50,
    )
    await consumer.start()
    try:
        consumer.assign([never, committed_at_3])
        assert await _read_to_end(consumer, [never, committed_at_3]) == {0: [0, 1, 2, 3, 4], 1: [3, 4]}

        committed = await consumer.seek_to_committed()
        # aiokafka seeks only where an offset was committed: the records read from partition 0
        # would never come again if they had been dropped before reaching their agent
        assert await consumer.position(never) == RECORDS
        assert await consumer.position(committed_at_3) == 3
        assert never_committed(committed) == [never]

        await rewind(consumer, never_committed(committed))
        assert await consumer.position(never) == 0
        assert await consumer.position(committed_at_3) == 3
        assert await _read_to_end(consumer, [never, committed_at_3]) == {0: [0, 1, 2, 3, 4], 1: [3, 4]}
    finally:
        await consumer.stop()


def test_never_committed_counts_offset_zero_as_none():
    assert never_committed({"a": None, "b": 0, "c": 7}) == ["a", "b"]


def test_the_worker_app_consumes_with_the_rewinding_consumer(tmp_path):
    settings = Settings.load(environ={}, broker="127.0.0.1:9", data_dir=str(tmp_path))
    app = StreamApp(settings, settings.stream.broker).app
    assert isinstance(app.consumer, RewindingConsumer)
