"""Plain Kafka clients around the app: feeding pages in, reading outputs back.

Reading never trusts the broker's end offsets (the embedded broker under-reports them by up to a
record batch): a reader that wants "everything so far" keeps fetching until a fetch comes back
empty, and the runner decides it is done from what it has read, not from offsets.

A line the input topic cannot take (larger than its ``max.message.bytes``) is refused by the
feeder, with its line number and size, and the lines after it are sent: one oversize page must not
cost the rest of the file. The workers never see it, so it is the feeder's to report (``produce``
and ``run`` write it to their rejects file, as ``dedup`` writes its own).

Feeding stamps every record with the file's clock (:class:`~stream_lsh.core.clock.FileClock`), the
clock ``stream-lsh dedup`` reads the same file with: the stream then orders and windows the pages as
batch does, whatever day and at whatever rate the file is fed.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
import xxhash
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

from ..core.clock import FileClock
from ..core.dedup import DedupConfig
from ..core.page import Page
from ..core.record import DEFAULT_MAX_PAGE_BYTES, Delete, InputLine, Rejected, parse_record, read_lines
from ..errors import BrokerError
from ..pipeline.limits import BATCH_OVERHEAD
from .connection import KafkaConnection, start_client
from .topics import CLOCK_HEADER

__all__ = ["Fed", "FileFeeder", "OnRefused", "feed_lines", "read_topic"]

#: Told of each line the input topic cannot take, which is then not sent.
OnRefused = Callable[[InputLine, Rejected], None]


@dataclass(frozen=True)
class Fed:
    """One record sent to the input topic, and where it landed."""

    partition: int
    offset: int
    page_id: str | None
    delete: bool
    clock: int | None = None  # the record's timestamp: the file's clock at that line


def _identity(line: InputLine) -> tuple[str | None, bool, str | None]:
    """The record's id, whether it is a retraction, and its site, as far as the line tells."""
    parsed = line.parsed
    if isinstance(parsed, Page):
        return parsed.id, False, parsed.site
    if isinstance(parsed, Delete):
        return parsed.id, True, None
    return parsed.page_id, False, None


def _partition_of(site: str | None, partitions: int) -> int | None:
    """Pages of one site go to one input partition, so they reach the site's boilerplate learner
    in the order they were sent (pages spread by id would reach it in an order that depends on how
    the partitions interleave). None: let the key decide."""
    if site is None:
        return None
    return xxhash.xxh3_64_intdigest(site.encode("utf-8", "surrogatepass")) % partitions


class FileFeeder:
    """Sends the lines of one file to the input topic, each as ``stream-lsh produce`` does: keyed
    by its page id when it has one, on the partition of its site (:func:`_partition_of`), with the
    file's clock in its :data:`CLOCK_HEADER` (before the file's clock starts: its line number, a
    "no clock" reading); the record timestamp is the time of sending, as Kafka expects.

    ``max_page_bytes`` must be the workers' (and batch's) limit: a line over it has no date for
    the clock, here as there. ``max_record_bytes``: the input topic's ``max.message.bytes``; a line
    that would not fit in a record batch under it is refused (``on_refused``) and not sent.
    """

    def __init__(
        self,
        producer: AIOKafkaProducer,
        topic: str,
        partitions: int,
        *,
        clock: FileClock | None = None,
        max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
        max_record_bytes: int | None = None,
        on_refused: OnRefused | None = None,
    ) -> None:
        self.producer, self.topic, self.partitions = producer, topic, partitions
        self.clock = clock if clock is not None else FileClock(max_future=DedupConfig().max_future)
        self.max_page_bytes = max_page_bytes
        self.max_line_bytes = None if max_record_bytes is None else max_record_bytes - BATCH_OVERHEAD
        self.on_refused = on_refused
        self.lines = 0
        self.refused = 0

    @classmethod
    async def start(cls, producer: AIOKafkaProducer, topic: str, **options: Any) -> FileFeeder:
        return cls(producer, topic, len(await producer.partitions_for(topic)), **options)

    async def send(self, line: InputLine) -> asyncio.Future[Fed | None] | None:
        """Send one line of the file (lines in file order); the future resolves once it is stored,
        to None if the broker refused it for its size. None: the line was refused before sending
        (see the class doc). A refused line still ticks the file's clock, as a rejected line does
        in batch."""
        self.lines += 1
        page_id, delete, site = _identity(line)
        stamp = self.clock.stamp(line.date, line.number, line.site)
        if self.max_line_bytes is not None and len(line.raw) > self.max_line_bytes:
            self._refuse(line, page_id, f"the input topic takes records of at most {self.max_line_bytes:,}")
            return None
        try:
            sent = await self.producer.send(
                self.topic,
                line.raw,
                key=page_id.encode("utf-8") if page_id else None,
                partition=_partition_of(site, self.partitions),
                headers=[(CLOCK_HEADER, str(stamp).encode("ascii"))],
            )
        except MessageSizeTooLargeError:  # over the producer's own request limit
            self._refuse(line, page_id, "the producer takes requests of at most its max_request_size")
            return None

        async def stored() -> Fed | None:
            try:
                meta = await sent
            except MessageSizeTooLargeError:  # the topic's own limit is below the one given here
                self._refuse(line, page_id, f"the broker refused it: {self.topic}'s max.message.bytes")
                return None
            return Fed(meta.partition, meta.offset, page_id, delete, stamp)

        return asyncio.ensure_future(stored())

    def _refuse(self, line: InputLine, page_id: str | None, limit: str) -> None:
        if self.on_refused is None:
            raise MessageSizeTooLargeError(f"line {line.number}: {len(line.raw):,} bytes; {limit}")
        self.refused += 1
        self.on_refused(line, Rejected("too_large", f"record of {len(line.raw):,} bytes: {limit}", page_id))

    async def send_record(self, record: dict[str, Any]) -> Fed:
        """Send one record as the file's next line, and wait until it is stored."""
        raw = orjson.dumps(record)
        sent = await self.send(InputLine(self.lines + 1, raw, parse_record(raw, self.max_page_bytes)))
        fed = None if sent is None else await sent
        if fed is None:
            raise MessageSizeTooLargeError(f"a record of {len(raw):,} bytes does not fit the input topic")
        return fed


async def feed_lines(
    target: KafkaConnection | str,
    topic: str,
    lines: Iterable[bytes],
    *,
    clock: FileClock | None = None,
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    rate: float | None = None,
    max_request_size: int = 25_000_000,
    max_record_bytes: int | None = None,
    on_refused: OnRefused | None = None,
) -> list[Fed]:
    """Send the non-blank lines of a file as :class:`FileFeeder` does. Without ``clock``, a new
    file's clock with the default settings; pass one clock to feed one file in several calls.

    With ``rate`` (messages per second) the sends are paced; otherwise they go as fast as the
    producer takes them. A line the topic cannot take (over ``max_record_bytes``, the input
    topic's ``max.message.bytes``, or over ``max_request_size``) goes to ``on_refused`` and the
    rest are sent; without ``on_refused`` it raises :class:`MessageSizeTooLargeError`.
    """
    kafka = KafkaConnection.of(target)
    producer = AIOKafkaProducer(max_request_size=max_request_size, linger_ms=5, **kafka.producer_options())
    await start_client(producer, kafka)
    started = time.perf_counter()
    try:
        feeder = await FileFeeder.start(
            producer,
            topic,
            clock=clock,
            max_page_bytes=max_page_bytes,
            max_record_bytes=max_record_bytes,
            on_refused=on_refused,
        )
        futures: list[Any] = []
        for line in read_lines(lines, max_page_bytes):
            if rate:
                delay = started + (len(futures) + feeder.refused) / rate - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            future = await feeder.send(line)
            if future is not None:
                futures.append(future)
        stored = [await future for future in futures]
        return [fed for fed in stored if fed is not None]
    finally:
        await producer.stop()


async def read_topic(
    target: KafkaConnection | str,
    topic: str,
    *,
    from_start: bool = True,
    follow: bool = True,
    idle_ms: int = 500,
    since_ms: int | None = None,
) -> AsyncIterator[tuple[bytes | None, bytes | None, int, int]]:
    """Yield (key, value, partition, offset) of a topic, without a consumer group.

    Without ``follow`` it stops after a fetch of ``idle_ms`` returns nothing (the end, whatever
    end offsets the broker reports). With ``since_ms`` (wall-clock ms) it starts at the first
    record stamped then or later, instead of at the start or the end.
    """
    kafka = KafkaConnection.of(target)
    consumer = AIOKafkaConsumer(
        **kafka.client_options(),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest" if from_start else "latest",
        fetch_max_wait_ms=100,
        max_partition_fetch_bytes=25_000_000,
    )
    await start_client(consumer, kafka)
    try:
        partitions = consumer.partitions_for_topic(topic)
        if partitions is None:
            await consumer._client.force_metadata_update()
            partitions = consumer.partitions_for_topic(topic) or set()
        if not partitions:
            known = sorted(await consumer.topics())
            close = difflib.get_close_matches(topic, known, n=1)
            hint = f"did you mean {close[0]}?" if close else f"it has {', '.join(known) or 'none'}"
            raise BrokerError(f"there is no topic {topic!r} at {kafka.bootstrap}: {hint}")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        if since_ms is not None:
            await _seek_to_time(consumer, tps, since_ms)
        elif from_start:
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


async def _seek_to_time(consumer: AIOKafkaConsumer, tps: list[TopicPartition], since_ms: int) -> None:
    """Each partition at its first record stamped ``since_ms`` or later; at its end if it has none.

    The embedded broker answers a time after its last record with offset 0 and timestamp -1
    (Apache Kafka: no offset), which would read the whole partition: a hit stamped before the time
    asked for is taken as none. Its end is under-reported by up to a record batch, so a few older
    records may still come: a caller that cares checks their time itself."""
    found = await consumer.offsets_for_times({tp: since_ms for tp in tps})
    for tp in tps:
        hit = found.get(tp)
        if hit is None or hit.timestamp < since_ms:
            await consumer.seek_to_end(tp)
        else:
            consumer.seek(tp, hit.offset)
