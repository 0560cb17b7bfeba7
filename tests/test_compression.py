"""Compressed input, end to end: producers that compress with each codec Kafka has, and a batch
that cannot be decoded, read by a real worker process from a real broker."""

from __future__ import annotations

import asyncio

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.record.util import calc_crc32c
from stream_helpers import DecisionReader, batch_reference, stream_settings

from stream_lsh.core.clock import FileClock
from stream_lsh.core.record import InputLine, parse_record
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.client import FileFeeder
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

CODECS = ("gzip", "lz4", "snappy", "zstd")


async def send_undecodable_batch(producer: AIOKafkaProducer, topic: str, partition: int, values: list[bytes]):
    """A gzip batch with two bytes after the compressed stream, and a length and CRC that fit:
    Apache Kafka (whose decompressor stops at the end of the stream) and Tansu store it, Python's
    gzip refuses it. What a buggy producer or a damaged disk leaves in a log."""
    batch = producer.create_batch()
    for value in values:
        batch.append(key=None, value=value, timestamp=None)
    raw = bytearray(batch._build())
    raw += b"XX"
    raw[8:12] = (len(raw) - 12).to_bytes(4, "big")  # batch length: after the offset and length fields
    raw[17:21] = calc_crc32c(bytes(raw[21:])).to_bytes(4, "big")  # CRC-32C of what follows it
    batch._buffer = bytes(raw)
    return await (await producer.send_batch(batch, topic, partition=partition))


async def test_every_codec_is_read_and_an_undecodable_batch_is_a_dead_letter(broker, tmp_path):
    """Pages sent with gzip, lz4, snappy and zstd are decided as batch decides them; a corrupt batch
    between them becomes one dead letter naming its partition and offsets, the worker goes on, and
    the group commits past the batch (so a restart does not meet it again)."""
    corpus = generate_corpus(64, seed=21)
    pages, lost = corpus.pages, [orjson.dumps({"id": f"lost-{i}", "text": "never read"}) for i in range(3)]
    # the boilerplate learner on: each site partition learns in clock order, so pages fed at once
    # over two input partitions get exactly batch's decisions
    settings = stream_settings(broker, tmp_path, input_partitions=2)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pool = Workers(settings, settings.stream.broker, 1)
    producers = {
        codec: AIOKafkaProducer(bootstrap_servers=broker.bootstrap, compression_type=codec)
        for codec in CODECS
    }
    clock = FileClock(max_future=settings.engine.max_future_hours * 3600)
    try:
        for producer in producers.values():
            await producer.start()
        number = 0
        chunks = [pages[i : i + 16] for i in range(0, len(pages), 16)]
        for codec, chunk in zip(CODECS, chunks, strict=True):
            feeder = FileFeeder(producers[codec], names.input, 2, clock=clock)
            feeder.lines = number
            sent = []
            for page in chunk:
                raw = orjson.dumps(page)
                number += 1
                sent.append(await feeder.send(InputLine(number, raw, parse_record(raw, 10_000_000))))
            await asyncio.gather(*sent)  # one compressed batch or a few per partition
            if codec == "lz4":
                corrupt = await send_undecodable_batch(producers["gzip"], names.input, 1, lost)
        async with (
            DecisionReader(broker.bootstrap, names.decisions, 2) as decisions,
            DecisionReader(broker.bootstrap, names.dead_letters, 2, field="reason") as dead,
        ):
            for page in pages:
                await decisions.until(page["id"], timeout=60, check=pool.check)
            letter = await dead.until("undecodable_batch", timeout=30, check=pool.check)
            await dead.drain(1.0)
        by_id = {record["id"]: record for record in decisions.records}
        assert [by_id[page["id"]] for page in pages] == batch_reference(pages)
        assert [r["reason"] for r in dead.records] == ["undecodable_batch"]
        assert (letter["topic"], letter["partition"]) == (names.input, 1)
        assert (letter["offset"], letter["last_offset"]) == (corrupt.offset, corrupt.offset + 2)
        assert "gzip" in letter["detail"].lower() or "BadGzipFile" in letter["detail"]
        pool.check()  # alive
        await _until_committed_past(settings, names.input, 1, corrupt.offset + 2)
    finally:
        for producer in producers.values():
            await producer.stop()
        pool.stop()


async def _until_committed_past(settings, topic: str, partition: int, offset: int, timeout: float = 20.0):
    """Until the app's group has committed an offset past ``offset`` (read without joining it)."""
    reader = AIOKafkaConsumer(bootstrap_servers=settings.stream.broker, group_id=settings.stream.app_id)
    await reader.start()
    try:
        deadline = asyncio.get_running_loop().time() + timeout
        while (
            committed := await reader.committed(TopicPartition(topic, partition))
        ) is None or committed <= offset:
            assert asyncio.get_running_loop().time() < deadline, f"committed {committed}, not past {offset}"
            await asyncio.sleep(0.5)
    finally:
        await reader.stop()


def _records(batches: list[bytes]):
    from aiokafka.record.memory_records import MemoryRecords

    return MemoryRecords(b"".join(batches))


def _batch(values: list[bytes], codec: int, base_offset: int, garbage: bytes = b"") -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, batch_size=1 << 20)
    for delta, value in enumerate(values):
        builder.append(delta, timestamp=1_700_000_000_000 + delta, key=None, value=value, headers=[])
    raw = bytearray(builder.build())
    raw[0:8] = base_offset.to_bytes(8, "big")
    raw += garbage
    raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    raw[17:21] = calc_crc32c(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)


def test_an_undecodable_batch_becomes_one_marker_per_offset_and_only_on_the_input():
    """The consumer-side hook alone, on aiokafka's own record classes: the good batches around a
    corrupt one are read, the corrupt one's offsets come as markers with the reason, and a topic
    that is not an input still fails as before."""
    import pytest
    from aiokafka.consumer.fetcher import READ_UNCOMMITTED
    from aiokafka.errors import KafkaError

    from stream_lsh.stream.undecodable import _checking, undecodable_of

    records = [
        _batch([b"a", b"b"], 0, 10),
        _batch([b"c", b"d", b"e"], 1, 12, garbage=b"XX"),  # gzip, with bytes after its stream
        _batch([b"f"], 0, 15),
    ]
    checked = _checking(frozenset({"pages"}))
    read = list(
        checked(TopicPartition("pages", 3), _records(records), [], 10, None, None, True, READ_UNCOMMITTED)
    )
    assert [(r.offset, r.value) for r in read] == [
        (10, b"a"),
        (11, b"b"),
        (12, None),
        (13, None),
        (14, None),
        (15, b"f"),
    ]
    batches = [undecodable_of(r.value, r.headers) for r in read]
    assert batches[:2] == [None, None] and batches[-1] is None
    assert {(b.first_offset, b.last_offset) for b in batches[2:5]} == {(12, 14)}
    assert "gzip" in batches[2].reason.lower()
    other = checked(
        TopicPartition("app-homes", 0), _records(records), [], 10, None, None, True, READ_UNCOMMITTED
    )
    with pytest.raises((OSError, KafkaError, ValueError)):
        list(other)
    assert undecodable_of(b"a value", read[2].headers) is None  # a record with a value is never a marker
