"""Event time as real feeds send it, through a real broker process and real worker processes.

The in-process proofs are in tests/test_pipeline.py (every interleaving); these runs check that the
worker wires them as they were proven, and that nothing waits without being reported.
"""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from stream_helpers import follow_decisions, stream_settings

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.clock import FileClock
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.evaluation import pair_scores
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.client import FileFeeder
from stream_lsh.stream.runner import Progress, Workers, run_stream
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

NOW_MS = 1_795_514_400_000  # 2026-11-24T10:00:00Z


async def test_a_worker_reports_a_page_whose_wait_nothing_ends(broker, tmp_path, make_prose):
    """Three of four input partitions never speak, and the idle timer (ten minutes here) does not
    declare them: the page waits for a watermark nothing moves, and the worker says so."""
    settings = stream_settings(broker, tmp_path, idle_ms=600_000, pending_alert_s=2.0)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pool = Workers(settings, settings.stream.broker, 1)
    producer = AIOKafkaProducer(bootstrap_servers=settings.stream.broker)
    await producer.start()
    try:
        feeder = await FileFeeder.start(
            producer, names.input, clock=FileClock(max_future=86400, now_ms=NOW_MS)
        )
        fed = await feeder.send_record(
            {"id": "stuck", "text": make_prose(5, 200), "published_at": "2026-11-24T10:00:00Z"}
        )
        silent = sorted(set(range(settings.stream.input_partitions)) - {fed.partition})
        log, deadline, lines = pool.logs[0], time.monotonic() + 60, []
        while time.monotonic() < deadline and not lines:
            pool.check()
            await asyncio.sleep(0.5)
            lines = [line for line in log.read_text(errors="replace").splitlines() if "page 'stuck'" in line]
        assert lines, "no report of the stuck page within 60 s"
        held = [line for line in lines if "sites partition" in line]  # held there for its learner
        assert held and f"input partitions {', '.join(map(str, silent))} hold it back" in held[0], lines
        assert "undecided for" in held[0] and "(clock 2026-11-24T10:00:00.001+00:00)" in held[0]
    finally:
        await producer.stop()
        pool.stop()


@pytest.mark.parametrize("learning", [False, True])
async def test_a_messy_feed_through_the_broker_gets_one_decision_per_page_and_the_batch_clusters(
    broker, tmp_path, learning
):
    """generate --messy-dates, fed at once by run --feed (every input partition at once, records
    stamped with the file's clock): every page decided once, as batch decides it; without the
    learner record for record, with it the batch clusters (its flags shared between site
    partitions arrive at times batch cannot see, README "The stream")."""
    pages = generate_corpus(400, seed=21, messy_dates=True).pages
    lines = [orjson.dumps(page) for page in pages]
    settings = stream_settings(broker, tmp_path, boilerplate=learning)
    progress = await run_stream(settings, workers=1, feed=lines, until_idle=True, timeout=150)
    engine = Deduplicator(settings.dedup_config())
    summary_out = DecisionRecords()
    run_batch(lines, engine, out=summary_out, rejects=RejectSink(lambda: open(tmp_path / "rejects", "wb")))
    batch = {record["id"]: record for record in summary_out.records}
    assert max(progress.decided.values()) == 1 and progress.decisions.keys() == batch.keys()
    assert {d["date_ignored"] for d in batch.values() if "date_ignored" in d} >= {
        "unreadable",
        "before_1990",
        "future",
    }
    if not learning:
        assert progress.decisions == batch
    else:
        truth = {d["id"]: d["cluster_id"] or d["id"] for d in batch.values()}
        got = {d["id"]: d["cluster_id"] or d["id"] for d in progress.decisions.values()}
        assert pair_scores(truth, got).f1 >= 0.99


async def test_a_file_dated_years_back_or_hours_ahead_is_kept_by_the_broker(broker, tmp_path, make_prose):
    """The file's clock travels in a header, so the broker's own rules on record timestamps do not
    touch it: Apache Kafka's retention deletes records stamped older than retention.ms (seen: a
    replayed archive gone before the workers read it), and Kafka 4 refuses records stamped more
    than an hour ahead. Both files are stored whole and read back with their clocks."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from stream_lsh.stream.client import feed_lines
    from stream_lsh.stream.topics import CLOCK_HEADER, clock_of_message

    settings = stream_settings(broker, tmp_path, input_partitions=1)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3 * 3600))

    def file(name: str, date: str) -> list[bytes]:
        return [
            orjson.dumps(
                {
                    "id": f"{name}{i}",
                    "text": make_prose(i, 60),
                    "published_at": date,
                    "url": f"https://site{i % 2}.example/{name}{i}",
                }
            )
            for i in range(6)
        ]

    for lines in (file("old", "2019-03-01T10:00:00Z"), file("ahead", ahead)):
        assert (
            len(
                await feed_lines(
                    settings.stream.broker, names.input, lines, clock=FileClock(max_future=86400)
                )
            )
            == 6
        )
    await asyncio.sleep(7)  # past a retention check of the test Kafka broker (every 5 s, from the start)
    tp = TopicPartition(names.input, 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.stream.broker, group_id=None, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        assert (await consumer.beginning_offsets([tp]))[tp] == 0
        records = []
        while len(records) < 12:
            records += (await consumer.getmany(tp, timeout_ms=2000)).get(tp, [])
    finally:
        await consumer.stop()
    assert all(dict(r.headers).get(CLOCK_HEADER) for r in records)
    clocks = [clock_of_message(r.timestamp, r.headers) for r in records]
    assert 1551434400000 <= max(clocks[:6]) < 1551434400000 + 10  # 2019-03-01T10:00:00Z (+1 ms a line)
    assert max(clocks[6:]) > time.time() * 1000 + 2 * 3600_000  # hours ahead of the broker
    assert all(abs(r.timestamp - time.time() * 1000) < 120_000 for r in records)  # stamped when sent


@pytest.mark.parametrize("workers", [1, 2])
async def test_pages_from_a_transactional_producer_are_all_decided(
    kafka_broker, tmp_path, make_prose, workers
):
    """A transaction's commit marker counts in a partition's high watermark but is never delivered,
    so 'every record taken' can never hold on such a partition, and in clock order it would hold
    every other partition's pages back. A partition whose records have all been fetched and that
    stays quiet for ten idle times counts as idle (Apache Kafka only: Tansu has no transactions).
    With two workers, each one's end offsets of the other's partitions count the markers too: a
    claim made before its marker was stored is claimed again once quiet (stream/idle.py)."""
    from stream_lsh.stream.topics import CLOCK_HEADER

    settings = stream_settings(kafka_broker, tmp_path)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    progress = Progress()
    reader = follow_decisions(settings.stream.broker, names.decisions, progress)
    pool = Workers(settings, settings.stream.broker, workers)
    if workers == 2:
        await asyncio.sleep(8)  # both in the group: the first pages are read by both
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.stream.broker, transactional_id=f"{settings.stream.app_id}-feed"
    )
    await producer.start()
    try:
        async with producer.transaction():
            for i in range(12):
                page = {
                    "id": f"tx{i}",
                    "text": make_prose(i % 5, 120),
                    "published_at": "2026-11-24T10:00:00Z",
                }
                await producer.send(
                    names.input,
                    orjson.dumps(page),
                    key=page["id"].encode(),
                    partition=i % 4,
                    headers=[(CLOCK_HEADER, str(NOW_MS + i).encode())],
                )
        deadline = time.monotonic() + 60
        while len(progress.decisions) < 12 and time.monotonic() < deadline:
            pool.check()
            await asyncio.sleep(0.2)
        assert sorted(progress.decisions) == sorted(f"tx{i}" for i in range(12)), progress.summary()
    finally:
        await producer.stop()
        reader.cancel()
        pool.stop()
