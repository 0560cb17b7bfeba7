"""The message-size limit (stream_lsh.pipeline.limits): batches split under it, pages over it
dead letters, and, end to end on a broker that enforces it, a stream that never writes a record it
refuses."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stream_helpers import DecisionReader, batch_reference, stream_settings
from test_messages import BY_STAGE

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.prepare import Preparer
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.ingest import Ingest, Message
from stream_lsh.pipeline.limits import BATCH_OVERHEAD, PAGE_SLACK, RecordLimit
from stream_lsh.pipeline.local import LocalPipeline
from stream_lsh.pipeline.messages import PageToSign
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.pipeline.routing import Layout
from stream_lsh.settings import Settings, SettingsError
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

SMALL = 1 << 16  # the smallest limit the settings take: pages of the generated corpus fit, batches do not


def _page_to_sign(number: int, size: int) -> PageToSign:
    return PageToSign(f"p{number}", False, "a.example", "en", number, None, None, number, ("x" * size,), "{}")


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=60),
    max_bytes=st.integers(200, 20_000),
)
def test_a_batch_is_split_into_records_under_the_limit_that_decode_to_it_in_order(sizes, max_bytes):
    messages = [_page_to_sign(i, size) for i, size in enumerate(sizes)]
    records = codec.encode_within(messages, max_bytes)
    decoded = [message for record in records for message in codec.decode(Stage.SITES, record)]
    assert decoded == messages
    for record in records:
        alone = len(codec.decode(Stage.SITES, record)) == 1
        assert len(record) <= max_bytes or alone  # only a message longer on its own may exceed it
    if len(codec.encode(messages)) <= max_bytes:
        assert records == [codec.encode(messages)]  # the common case: one record, as before


@pytest.mark.parametrize("stage", Stage.ALL)
def test_every_kind_of_message_splits(stage):
    messages = BY_STAGE[stage] * 40
    records = codec.encode_within(messages, 600)
    assert len(records) > 1 and all(len(record) <= 600 for record in records)
    assert [m for record in records for m in codec.decode(stage, record)] == messages


def test_the_limit_is_checked_where_it_is_set():
    with pytest.raises(ValueError, match="must exceed"):
        RecordLimit(BATCH_OVERHEAD + PAGE_SLACK)
    with pytest.raises(SettingsError, match="max_message_bytes must be at least 65536"):
        Settings.load(environ={"STREAM_LSH_MAX_MESSAGE_BYTES": "1000"})
    with pytest.raises(SettingsError, match="compression"):
        Settings.load(environ={"STREAM_LSH_COMPRESSION": "brotli"})
    assert Settings.load(environ={"STREAM_LSH_COMPRESSION": "ZSTD"}).kafka.compression.codec == "zstd"
    assert Settings.load(environ={"STREAM_LSH_COMPRESSION": "none"}).kafka.compression.codec is None


def test_every_topic_the_app_makes_takes_exactly_the_limit():
    settings = Settings.load(environ={"STREAM_LSH_MAX_MESSAGE_BYTES": "8388608"})
    assert {spec.config["max.message.bytes"] for spec in topic_specs(settings)} == {"8388608"}
    assert {spec.config["max.message.bytes"] for spec in topic_specs(Settings())} == {"1048576"}


def _ingest(limit: RecordLimit | None) -> Ingest:
    return Ingest(Preparer(DedupConfig()), Layout(2), max_page_bytes=10_000_000, limit=limit)


def _message(value: bytes, offset: int = 0) -> Message:
    return Message("pages", 0, offset, None, value, 1_772_323_200_000 + offset)


def _text_page(page_id: str, chars: int, escaped: bool = False) -> bytes:
    word = 'a "quoted" word' if escaped else "plain words here"
    text = (word + " ") * (chars // (len(word) + 1))
    return orjson.dumps({"id": page_id, "url": f"https://a.example/{page_id}", "text": text})


@pytest.mark.parametrize("escaped", [False, True], ids=["plain", "escaped"])
def test_a_page_whose_site_record_would_pass_the_limit_is_a_dead_letter(escaped):
    """The record counts the page twice (its raw JSON and its text), with JSON's escapes: the check
    measures that record, not the input's size."""
    limit = RecordLimit(SMALL)
    ingest = _ingest(limit)
    sizes = range(10_000, 40_000, 500)
    outcomes = []
    for size in sizes:
        out = ingest.pages([_message(_text_page(f"p{size}", size, escaped))])
        sent = [m for parts in out.internal.values() for ms in parts.values() for m in ms]
        if sent:
            assert len(codec.encode(sent)) <= limit.page_bytes + 2
            outcomes.append("sent")
        else:
            (letter,) = out.dead_letters
            assert letter[1]["reason"] == "too_large" and letter[1]["id"] == f"p{size}"
            assert "STREAM_LSH_MAX_MESSAGE_BYTES" in letter[1]["detail"]
            outcomes.append("dead")
    assert outcomes[0] == "sent" and outcomes[-1] == "dead"
    assert outcomes == sorted(outcomes, reverse=True)  # one threshold: sent below it, dead above
    unlimited = _ingest(None).pages([_message(_text_page("big", 40_000, escaped))])
    assert not unlimited.dead_letters


def test_a_query_over_the_limit_is_a_dead_letter_too():
    out = _ingest(RecordLimit(SMALL)).queries([_message(_text_page("q", 70_000))])
    assert [letter[1]["reason"] for letter in out.dead_letters] == ["too_large"]


def test_the_in_process_pipeline_under_a_small_limit_decides_as_batch():
    """Batches of a few hundred pages split into many records per partition; the stages handle them
    in parts and decide exactly as batch does. A page over the limit is the only difference."""
    corpus = generate_corpus(600, seed=9)
    big = {"id": "too-big", "url": "https://a.example/big", "text": "word " * 20_000}
    pipe = LocalPipeline(
        DedupConfig(boilerplate=False),
        Layout(2),
        max_message_bytes=SMALL,
        rng=random.Random(3),
        inputs=1,  # clock order, as the stream's default: the decisions do not depend on interleaving
    )
    pipe.feed([orjson.dumps(page) for page in [*corpus.pages, big]])  # one ingest batch
    assert max(len(queue) for queue in pipe.queues.values()) > 1  # split into several records
    pipe.finish()
    pipe.run()
    by_id = {record["id"]: record for _, record in pipe.outputs.decisions}
    assert [by_id[page["id"]] for page in corpus.pages] == batch_reference(corpus.pages, boilerplate=False)
    assert [letter["reason"] for _, letter in pipe.outputs.dead_letters] == ["too_large"]


async def test_a_broker_that_enforces_a_small_limit_never_refuses_the_app(broker, tmp_path):
    """Topics at 64 KiB: micro-batches of generated pages are several times that, a page's journal
    segment and snapshot would be too; one page is over the limit. Apache Kafka refuses any record
    over ``max.message.bytes`` (a refused send would end the worker with exit code 70): every page
    is decided as batch decides it, the big one is a dead letter, and the worker lives on."""
    corpus = generate_corpus(400, seed=17)
    big = {"id": "too-big", "url": "https://a.example/big", "text": "word " * 20_000}
    settings = stream_settings(
        broker, tmp_path, max_message_bytes=SMALL, boilerplate=False, batch_size=512, snapshot_mb=0.1
    )
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    await feed_lines(settings.stream.broker, names.input, [orjson.dumps(p) for p in [*corpus.pages, big]])
    pool = Workers(settings, settings.stream.broker, 1)
    try:
        async with (
            DecisionReader(broker.bootstrap, names.decisions, settings.stream.input_partitions) as decisions,
            DecisionReader(broker.bootstrap, names.dead_letters, settings.stream.input_partitions) as dead,
        ):
            decided = [await decisions.until(p["id"], timeout=120, check=pool.check) for p in corpus.pages]
            letter = await dead.until("too-big", timeout=30, check=pool.check)
        assert decided == batch_reference(corpus.pages, boilerplate=False)
        assert letter["reason"] == "too_large"
        await asyncio.sleep(1.0)
        pool.check()
    finally:
        pool.stop()
