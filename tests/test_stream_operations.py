"""Retraction, query-only probes and the window, end to end through a real broker.

One worker, one story at a time, every output awaited; the in-process tests (test_pipeline.py)
cover the same rules under every delivery order, this checks the real topics say the same.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson
from aiokafka import AIOKafkaProducer
from stream_helpers import DecisionReader, stream_settings

from stream_lsh.core.prepare import Preparer
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.pipeline.stages import stage_factories
from stream_lsh.pipeline.window_log import WindowLog
from stream_lsh.stores.disk_index import write_rows
from stream_lsh.stream.app import stage_inputs, state_guard
from stream_lsh.stream.client import FileFeeder, read_topic
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, layout_of
from stream_lsh.stream.worker import prepare


def at(hour: int, minute: int) -> str:
    return f"2026-03-01T{hour:02d}:{minute:02d}:00Z"


async def latest(bootstrap: str, topic: str) -> dict[bytes, bytes | None]:
    """A compacted topic as a reader sees it: the last value per key (None: deleted)."""
    values: dict[bytes, bytes | None] = {}
    async for key, value, _, _ in read_topic(bootstrap, topic, follow=False, idle_ms=300):
        values[key] = value  # type: ignore[index]
    return values


async def test_retraction_queries_and_the_window(broker, tmp_path, make_prose):
    settings = stream_settings(broker, tmp_path, ttl_hours=1.0, snapshot_mb=0.001)
    names = TopicNames.from_settings(settings)
    guard = state_guard(Preparer(settings.dedup_config()), settings)
    await prepare(settings, broker.bootstrap, guard)
    story, other, third = make_prose(1, 160), make_prose(2, 160), make_prose(3, 160)
    pool = Workers(settings, broker.bootstrap, 1)
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        feeder = await FileFeeder.start(producer, names.input, clock=settings.file_clock())
        async with (
            DecisionReader(broker.bootstrap, names.decisions, settings.stream.input_partitions) as decisions,
            DecisionReader(
                broker.bootstrap, names.answers, settings.stream.input_partitions, "correlation_id"
            ) as answers,
        ):

            async def page(page_id: str, text: str, when: str) -> dict:
                await feeder.send_record({"id": page_id, "text": text, "published_at": when})
                return await decisions.until(page_id, timeout=60, check=pool.check)

            async def ask(correlation_id: str, text: str) -> dict:
                await producer.send_and_wait(
                    names.queries, orjson.dumps({"correlation_id": correlation_id, "text": text})
                )
                return await answers.until(correlation_id, timeout=30, check=pool.check)

            async def delete(page_id: str) -> None:
                await feeder.send_record({"id": page_id, "op": "delete"})

            assert (await page("a", story, at(12, 0)))["status"] == "unique"
            copy = await page("a2", "Breaking.\n" + story, at(12, 10))
            assert (copy["status"], copy["cluster_id"]) == ("duplicate", "a")

            seen = await ask("q1", story)
            assert (seen["status"], seen["cluster_id"], seen["duplicate_of"]) == ("duplicate", "a", "a")
            for attempt in range(50):  # the spread follows every home's frontier: within moments
                spread = (await ask(f"q1-spread-{attempt}", story))["spread"]
                if spread is not None and spread["pages"] == 2:
                    break
            assert attempt < 5, f"the cluster's spread took more than a few queries to show: {spread}"
            assert spread == {
                "cluster_id": "a",
                "first_page": "a",
                "pages": 2,
                "sources": [],  # pages without a site count as pages, not sources
                "levels_fired": [],
            }
            assert (await ask("q1b", third))["status"] == "unique"  # never seen, and not indexed by asking:
            assert (await page("t", third, at(12, 15)))["status"] == "unique"

            async def once_retracted(name: str, text: str, retracted: Callable[[dict], bool]) -> dict:
                """A retraction waits at the band partitions for the clock like a page; a query is
                answered at once: nothing orders the two, so it takes effect within moments."""
                for attempt in range(50):
                    answer = await ask(f"{name}-{attempt}", text)
                    if retracted(answer):
                        break
                assert attempt < 5, f"the retraction took more than a few queries to take effect: {answer}"
                return answer

            await delete("a2")
            after = await once_retracted(
                "q2", "Breaking.\n" + story, lambda answer: answer["duplicate_of"] != "a2"
            )
            assert (after["status"], after["duplicate_of"]) == ("duplicate", "a")  # a2 is gone, a is not
            await delete("a")
            gone = await once_retracted("q3", story, lambda answer: answer["status"] != "duplicate")
            assert (gone["status"], gone["cluster_id"]) == ("unique", None), gone

            assert (await page("b", other, at(12, 20)))["status"] == "unique"
            assert (await page("late", make_prose(4, 160), at(15, 0)))[
                "status"
            ] == "unique"  # moves the window on
            again = await page("b2", other, at(15, 1))
            assert again["status"] == "unique", "b left the 1-hour window: its copy founds a new cluster"
    finally:
        await producer.stop()
        pool.stop()

    clusters = await latest(broker.bootstrap, names.clusters)
    assert clusters[b"a"] is None  # both members retracted: a tombstone, compaction forgets the cluster
    assert orjson.loads(clusters[b"b2"])["size"] == 1

    # The window as the changelog holds it (what a worker that lost its disk would load): only
    # the pages inside the window are left.
    rows = await latest(broker.bootstrap, names.changelog(Stage.DECIDE))
    table = {key: value for key, value in rows.items() if value is not None}
    window_log = WindowLog(0, guard)
    plan = window_log.load(table.get(window_log.head_key), sorted(table.items()), None)
    assert window_log.checkpoint is not None, "no checkpoint was finished: the deltas were never replaced"
    restored = tmp_path / "restored-window"
    write_rows(restored, WindowLog.replay(plan.keys, table.get))
    decider = stage_factories(
        Preparer(settings.dedup_config()),
        layout_of(settings),
        stage_inputs(settings),
        windows=lambda partition: restored,
    )[Stage.DECIDE](0)  # as the app builds it, over the window built from the changelog alone
    assert {entry.id for entry in decider.engine.index} == {"late", "b2"}
    decider.close()
