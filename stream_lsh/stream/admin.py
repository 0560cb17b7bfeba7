"""Before a worker starts: create the topics, refuse topics of the wrong shape, and refuse state
built under other parameters (the guard topic) while nothing has been consumed yet."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

from ..errors import BrokerUnreachableError, StateMismatchError, TopicShapeError
from ..pipeline.journal import guard_accepts, mismatch
from .client import read_topic
from .connection import KafkaConnection, start_client
from .topics import TopicSpec

__all__ = ["BrokerUnreachableError", "TopicShapeError", "claim_state", "ensure_topics"]

GUARD_KEY = b"guard"


async def claim_state(target: KafkaConnection | str, topic: str, guard: dict[str, Any]) -> None:
    """Record what this app's state is built with, or refuse if it was built with something else.

    The guard topic (compacted, one partition) holds one record; the first worker of an app writes
    it. Every partition's stored state carries the same guard and is checked again when loaded, but
    this check comes first and stops a misconfigured worker before it joins the group.
    """
    kafka = KafkaConnection.of(target)
    stored = None
    async for key, value, _, _ in read_topic(kafka, topic, follow=False, idle_ms=300):
        if key == GUARD_KEY and value is not None:
            stored = orjson.loads(value)
    if stored is not None:
        if not guard_accepts(stored, guard):
            raise StateMismatchError(f"{topic}: {mismatch(stored, guard)}")
        return
    producer = AIOKafkaProducer(**kafka.producer_options())
    await start_client(producer, kafka)
    try:
        await producer.send_and_wait(topic, orjson.dumps(guard), key=GUARD_KEY)
    finally:
        await producer.stop()


async def ensure_topics(target: KafkaConnection | str, specs: list[TopicSpec]) -> list[str]:
    """Create missing topics; check the partition count of those that exist. Returns the names
    of the topics created.

    Internal topics are hashed onto their partition count (sites, band keys, page ids), so a topic
    with another count would route records to partitions that do not hold their state.
    """
    kafka = KafkaConnection.of(target)
    admin = AIOKafkaAdminClient(**kafka.client_options())
    await start_client(admin, kafka)
    try:
        existing = await _partition_counts(admin, [spec.name for spec in specs])
        for spec in specs:
            have = existing.get(spec.name)
            if have is not None and have != spec.partitions:
                raise TopicShapeError(
                    f"topic {spec.name!r} has {have} partitions, the settings say {spec.partitions}: "
                    "set the matching STREAM_LSH_*_PARTITIONS or use a new app id"
                )
        missing = [spec for spec in specs if spec.name not in existing]
        if missing:
            response = await admin.create_topics(
                [NewTopic(s.name, s.partitions, s.replication, topic_configs=s.config) for s in missing]
            )
            _raise_for(response)
            await _wait_for_leaders(kafka, admin, [spec.name for spec in missing])
        return [spec.name for spec in missing]
    finally:
        await admin.close()


def _raise_for(response: Any) -> None:
    """aiokafka returns the broker's per-topic errors instead of raising them."""
    failures = [
        f"{e['topic']}: {for_code(e['error_code']).__name__}: {e.get('error_message') or ''}".rstrip(": ")
        for e in response.to_object()["topic_errors"]
        if e["error_code"] not in (0, TopicAlreadyExistsError.errno)
    ]  # already exists: created meanwhile
    if failures:
        raise TopicShapeError("the broker refused to create topics: " + "; ".join(failures))


async def _wait_for_leaders(
    kafka: KafkaConnection, admin: AIOKafkaAdminClient, names: list[str], timeout: float = 30.0
) -> None:
    """Until every partition of the new topics has a leader that serves it. Apache Kafka answers
    CreateTopics before the partitions exist on their leaders; workers started at once got
    NotLeaderForPartition on their first fetches, produces and offset lookups. Ready means: the
    metadata names a leader for every partition, and that leader answers ListOffsets for it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    waiting: list[str] = list(names)
    while loop.time() < deadline:
        described = await admin.describe_topics(names)
        waiting = sorted(
            t["topic"]
            for t in described
            if t.get("error_code", 0) != 0
            or not t.get("partitions")
            or any(p.get("leader", -1) < 0 for p in t["partitions"])
        )
        if not waiting and await _serving(kafka, {t["topic"]: len(t["partitions"]) for t in described}):
            return
        await asyncio.sleep(0.1)
    raise TopicShapeError(
        f"topics created but not served by a leader after {timeout:g} s: {', '.join(waiting or names)}"
    )


async def _serving(kafka: KafkaConnection, partitions: dict[str, int]) -> bool:
    """True if every partition's leader answers ListOffsets for it."""
    consumer = AIOKafkaConsumer(
        group_id=None, enable_auto_commit=False, request_timeout_ms=5000, **kafka.client_options()
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for topic, count in partitions.items() for p in range(count)]
        await asyncio.wait_for(consumer.end_offsets(tps), 5.0)
        return True
    except (KafkaError, asyncio.TimeoutError):
        return False
    finally:
        await consumer.stop()


async def _partition_counts(admin: AIOKafkaAdminClient, names: list[str]) -> dict[str, int]:
    """Partition counts of the topics that exist. Only listed topics are described: the embedded
    broker creates a topic (with 4 partitions) when asked to describe one it does not have."""
    listed = set(await admin.list_topics())
    names = [name for name in names if name in listed]
    if not names:
        return {}
    counts: dict[str, int] = {}
    for topic in await admin.describe_topics(names):
        partitions = topic.get("partitions") or []
        if topic.get("error_code", 0) == 0 and partitions:
            counts[topic["topic"]] = len(partitions)
    return counts
