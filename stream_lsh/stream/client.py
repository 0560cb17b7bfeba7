"""Plain Kafka clients around the app: feeding pages in, reading outputs back.

Reading never trusts the broker's end offsets (the embedded broker under-reports them by up to a
record batch): a reader that wants "everything so far" keeps fetching until a fetch comes back
empty, and the runner decides it is done from what it has read, not from offsets.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import AsyncIterator, Iterable

import orjson
import xxhash
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from ..core.page import PageError, page_from_dict
from ..core.record import record_id

__all__ = ["Fed", "feed_lines", "read_topic"]


@dataclass(frozen=True)
class Fed:
    """One record sent to the input topic, and where it landed."""

    partition: int
    offset: int
    page_id: str | None
    delete: bool


def _identity(line: bytes) -> tuple[str | None, bool, str | None]:
    """The record's id, whether it is a retraction, and its site, as far as the line tells."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None, False, None
    if not isinstance(record, dict):
        return None, False, None
    page_id = record_id(record)
    try:
        site = page_from_dict(record).site
    except PageError:
        site = None
    return page_id, record.get("op") == "delete", site


def _partition_of(site: str | None, partitions: int) -> int | None:
    """Pages of one site go to one input partition, so they reach the site's boilerplate learner
    in the order they were sent (pages spread by id would reach it in an order that depends on how
    the partitions interleave). None: let the key decide."""
    if site is None:
        return None
    return xxhash.xxh3_64_intdigest(site.encode("utf-8", "surrogatepass")) % partitions


async def feed_lines(bootstrap: str, topic: str, lines: Iterable[bytes], *, rate: float | None = None,
                     max_request_size: int = 25_000_000) -> list[Fed]:
    """Send each non-blank line as one message, keyed by its page id when it has one, on the
    partition of its site (see :func:`_partition_of`).

    With ``rate`` (messages per second) the sends are paced; otherwise they go as fast as the
    producer takes them.
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, max_request_size=max_request_size, linger_ms=5)
    await producer.start()
    fed: list[Fed] = []
    started = time.perf_counter()
    try:
        partitions = len(await producer.partitions_for(topic))
        futures = []
        identities = []
        for line in lines:
            line = line.strip()
            if not line:
                continue
            page_id, delete, site = _identity(line)
            if rate:
                delay = started + len(futures) / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            futures.append(await producer.send(topic, line, key=page_id.encode("utf-8") if page_id else None,
                                               partition=_partition_of(site, partitions)))
            identities.append((page_id, delete))
        for future, (page_id, delete) in zip(futures, identities, strict=True):
            meta = await future
            fed.append(Fed(meta.partition, meta.offset, page_id, delete))
    finally:
        await producer.stop()
    return fed


async def read_topic(bootstrap: str, topic: str, *, from_start: bool = True, follow: bool = True,
                     idle_ms: int = 500) -> AsyncIterator[tuple[bytes | None, bytes | None, int, int]]:
    """Yield (key, value, partition, offset) of a topic, without a consumer group.

    Without ``follow`` it stops after a fetch of ``idle_ms`` returns nothing (the end, whatever
    end offsets the broker reports).
    """
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                auto_offset_reset="earliest" if from_start else "latest",
                                fetch_max_wait_ms=100, max_partition_fetch_bytes=25_000_000)
    await consumer.start()
    try:
        partitions = consumer.partitions_for_topic(topic)
        if partitions is None:
            await consumer._client.force_metadata_update()  # noqa: SLF001 - a fresh client may not know it yet
            partitions = consumer.partitions_for_topic(topic) or set()
        consumer.assign([TopicPartition(topic, p) for p in sorted(partitions)])
        if from_start:
            await consumer.seek_to_beginning()
        while True:
            batches = await consumer.getmany(timeout_ms=idle_ms)
            if not batches and not follow:
                return
            for messages in batches.values():
                for message in messages:
                    yield message.key, message.value, message.partition, message.offset
    finally:
        await consumer.stop()
