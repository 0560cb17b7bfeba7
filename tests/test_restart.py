"""Workers stopped mid-stream, cleanly and by kill -9, restarted with their RocksDB directory and
without it (state recovered from the changelog topics): every page still gets its decision, the
decisions equal batch, and a decision given again after a restart is the same decision.

A real broker process and real worker processes, as in tests/test_stream.py.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import signal
import time
from collections import defaultdict
from pathlib import Path

import orjson
import pytest
import rocksdict
from aiokafka import AIOKafkaProducer
from stream_helpers import (
    DecisionReader,
    batch_alerts,
    batch_reference,
    follow_decisions,
    read_alerts,
    stream_settings,
)

from stream_lsh.core.clock import FileClock
from stream_lsh.core.config import DedupConfig
from stream_lsh.errors import ExitCode
from stream_lsh.evaluation import pair_scores
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.journal import partition_prefix
from stream_lsh.pipeline.messages import InputMark, OwnerChange
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import embedded_broker
from stream_lsh.stream.client import FileFeeder, feed_lines, read_topic
from stream_lsh.stream.runner import Progress, Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

KEEP, WIPE = "keep the data dir", "wipe the data dir"


async def started(broker, tmp_path, **overrides) -> tuple:
    """Topics, one worker and a decision follower for a fresh app: (settings, pool, progress, reader)."""
    settings = stream_settings(broker, tmp_path, log_level="info", **overrides)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    progress = Progress()
    reader = follow_decisions(settings.stream.broker, TopicNames.from_settings(settings).decisions, progress)
    return settings, Workers(settings, settings.stream.broker, 1), progress, reader


async def wait_until(done, *pools: Workers, timeout: float = 120.0) -> None:
    """Until ``done()``, or ``timeout``; raises if a worker of ``pools`` dies meanwhile."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        for pool in pools:
            pool.check()
        await asyncio.sleep(0.02)


async def in_flight_when_killed(settings, names, pages, progress, pool, *, first: int):
    """Feed ``first`` pages at once and wait until most are decided, then start feeding the rest
    at 150 pages/s: returns when that has begun, so that a kill now lands mid-stream with pages in
    every stage (a burst fed at once is decided in one release of the watermark, and on a busy
    machine a worker may take it all before a kill could land). Returns what was fed, and the task
    feeding the rest."""
    lines = [orjson.dumps(p) for p in pages]
    clock = FileClock(max_future=DedupConfig().max_future)  # one file's clock for both parts
    fed = await feed_lines(settings.stream.broker, names.input, lines[:first], clock=clock)
    await wait_until(lambda: len(progress.decisions) >= first * 0.8, pool, timeout=60)
    rest = asyncio.create_task(
        feed_lines(settings.stream.broker, names.input, lines[first:], clock=clock, rate=150.0)
    )
    await asyncio.sleep(0.5)
    assert 0 < len(progress.decisions) < len(pages), "the crash must come mid-stream"
    return fed, rest


# one plan per broker, so that each broker sees a kill and a wipe (tests/test_chaos.py has more)
PLANS = {
    "kafka": ("sigterm-keep,kill-wipe", {35: (signal.SIGTERM, KEEP), 70: (signal.SIGKILL, WIPE)}),
    "tansu": ("kill-keep,sigterm-wipe", {35: (signal.SIGKILL, KEEP), 70: (signal.SIGTERM, WIPE)}),
}


async def test_restarts_mid_stream_leave_the_batch_decisions(broker, tmp_path):
    plan, stops = PLANS[broker.kind]
    pages = generate_corpus(100, seed=13).pages
    settings = stream_settings(broker, tmp_path, snapshot_mb=0.02, log_level="info")
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    data_dir = Path(settings.stream.data_dir) / "worker-0"
    rng = random.Random(plan)
    pool = Workers(settings, settings.stream.broker, 1)
    producer = AIOKafkaProducer(bootstrap_servers=settings.stream.broker)
    await producer.start()
    try:
        decided = []
        feeder = await FileFeeder.start(producer, names.input)
        async with DecisionReader(
            settings.stream.broker, names.decisions, settings.stream.input_partitions
        ) as reader:
            for index, page in enumerate(pages):
                await feeder.send_record(page)
                if index in stops:
                    how, disk = stops[index]
                    await asyncio.sleep(rng.uniform(0.0, 0.05))  # the page is somewhere in the pipeline
                    pool.stop(how=how)
                    if disk == WIPE:
                        shutil.rmtree(data_dir)
                    pool = Workers(settings, settings.stream.broker, 1)
                decided.append(
                    await reader.until(
                        page["id"], timeout=60.0 if index in (0, *stops) else 20.0, check=pool.check
                    )
                )
            assert decided == batch_reference(pages)
            await reader.drain(1.0)  # decisions given again after the restarts
            every: dict[str, set[bytes]] = defaultdict(set)
            for record in reader.records:
                every[record["id"]].add(orjson.dumps(record))
            assert all(len(versions) == 1 for versions in every.values()), (
                "a page got two different decisions"
            )
    finally:
        await producer.stop()
        pool.stop()


async def test_a_crash_during_a_fast_feed_loses_no_page(broker, tmp_path):
    """kill -9 while hundreds of pages are in flight, restart without the disk."""
    pages = generate_corpus(400, seed=14).pages
    settings, pool, progress, reader = await started(broker, tmp_path, snapshot_mb=0.02)
    names = TopicNames.from_settings(settings)
    try:
        fed, rest = await in_flight_when_killed(settings, names, pages, progress, pool, first=100)
        pool.stop(how=signal.SIGKILL)
        shutil.rmtree(Path(settings.stream.data_dir) / "worker-0")
        pool = Workers(settings, settings.stream.broker, 1)
        progress.fed = fed + await rest
        await wait_until(progress.complete, pool)
        assert progress.complete(), progress.summary()
        assert sorted(progress.decisions) == sorted(p["id"] for p in pages)
        assert progress.changed == 0  # a decision given again after the crash is the same decision
    finally:
        reader.cancel()
        pool.stop()


def assert_all_decided_as_batch(progress: Progress, pages: list[dict]) -> None:
    """Every page decided once, none given another decision later, and the clusters batch's."""
    assert progress.complete(), progress.summary()
    assert progress.changed == 0
    truth = {d["id"]: d["cluster_id"] or d["id"] for d in batch_reference(pages)}
    got = {d["id"]: d["cluster_id"] or d["id"] for d in progress.decisions.values()}
    assert pair_scores(truth, got).f1 >= 0.98


async def test_a_worker_joining_and_another_leaving_mid_stream_lose_nothing(broker, tmp_path):
    """Scale out, then in, while pages flow: the partitions (and their state) move between workers."""
    pages = generate_corpus(400, seed=15).pages
    settings = stream_settings(broker, tmp_path, snapshot_mb=0.05, log_level="info")
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    first = Workers(settings, settings.stream.broker, 1)
    second = None
    progress = Progress()
    reader = follow_decisions(settings.stream.broker, names.decisions, progress)
    try:
        fed = asyncio.create_task(
            feed_lines(settings.stream.broker, names.input, [orjson.dumps(p) for p in pages], rate=40.0)
        )
        await wait_until(lambda: len(progress.decisions) >= 80, first)
        second = Workers(
            settings, settings.stream.broker, 1, first=1
        )  # joins: a rebalance moves partitions to it
        await wait_until(lambda: len(progress.decisions) >= 250, first, second)
        assert len(progress.decisions) < len(pages), "the second worker must leave mid-stream"
        first.stop()  # leaves: its partitions move to the second worker, which loads their state
        progress.fed = await fed
        await wait_until(progress.complete, second)
        assert_all_decided_as_batch(progress, pages)
    finally:
        reader.cancel()
        first.stop()
        if second is not None:
            second.stop()


def stage_copies(data_dir: Path) -> set[str]:
    """The stage partitions of which a worker's data directory holds a RocksDB copy."""
    return {path.name for path in data_dir.rglob("*.db") if path.is_dir()}


@pytest.mark.parametrize("standby", [1, 0], ids=["standby", "no-standby"])
async def test_a_worker_that_held_standby_copies_takes_the_partitions_over_with_every_row(
    broker, tmp_path, standby
):
    """A worker joins a running one and keeps warm (standby) copies of the partitions it does not
    own; when the first stops, it takes them over from those copies. aiokafka used to hand over
    the copies' first records while they were paused, and Faust dropped them (stream/consumer.py),
    so the copies lacked their first rows and the new owner refused to run (exit 78, "no head
    row"). Without standby copies (``STREAM_LSH_STANDBY_REPLICAS=0``) the second keeps only its own
    partitions, and takes the first's over by reading their changelogs."""
    pages = generate_corpus(240, seed=23).pages
    settings, first, progress, reader = await started(broker, tmp_path, standby_replicas=standby)
    names, second = TopicNames.from_settings(settings), None
    lines = [orjson.dumps(p) for p in pages]
    clock = FileClock(max_future=DedupConfig().max_future)  # one file's clock for both parts
    try:
        fed = await feed_lines(settings.stream.broker, names.input, lines[:120], clock=clock)
        await wait_until(lambda: len(progress.decisions) >= 120, first)
        second = Workers(settings, settings.stream.broker, 1, first=1)
        await asyncio.sleep(12)  # the rebalance, the second's recovery, and its standby copies
        copies = stage_copies(Path(settings.stream.data_dir) / "worker-1")
        first.stop()
        progress.fed = fed + await feed_lines(settings.stream.broker, names.input, lines[120:], clock=clock)
        await wait_until(progress.complete, second)
        assert_all_decided_as_batch(progress, pages)
        # the partitions the second took over from the first: with standby copies it held them all
        taken_over = stage_copies(Path(settings.stream.data_dir) / "worker-1") - copies
        assert bool(taken_over) == (standby == 0), (sorted(copies), sorted(taken_over))
    finally:
        reader.cancel()
        first.stop()
        if second is not None:
            second.stop()


async def decide_all(settings, pool: Workers, progress: Progress, pages: list[dict]) -> None:
    """Feed ``pages`` at once and wait until each has its decision."""
    input_topic = TopicNames.from_settings(settings).input
    progress.fed = await feed_lines(settings.stream.broker, input_topic, [orjson.dumps(p) for p in pages])
    await wait_until(progress.complete, pool)
    assert progress.complete(), progress.summary()


async def idle_claims_left_standing(bootstrap: str, topic: str) -> dict[int, set[int]]:
    """Per site partition, the input partitions whose last word in it is an idle claim (a caught-up
    mark, or the timer's ``w: null``) rather than a mark of an active partition or a withdrawal."""
    standing: dict[int, set[int]] = defaultdict(set)
    async for _, value, partition, _ in read_topic(bootstrap, topic, follow=False, idle_ms=1000):
        for message in codec.decode(Stage.SITES, value or b""):
            if isinstance(message, InputMark) and (message.idle or message.mark is None):
                standing[partition].add(message.source)
            elif isinstance(message, (InputMark, OwnerChange)):
                standing[partition].discard(message.source)
    return {partition: sources for partition, sources in standing.items() if sources}


async def test_a_worker_stopped_gracefully_leaves_no_idle_claim_standing(broker, tmp_path):
    """A worker that stops withdraws the idle claims of its input partitions before it goes.

    Left standing, they let the other workers' partitions release past every record that piles up
    in the stopped worker's partitions until the group hands them to someone (on Tansu, which does
    not rebalance when a member leaves, a session timeout): those records then come late, and a page
    whose copies left the window meanwhile is decided unique (../shared/repro/rebalance-handover:
    38-53 of 872 duplicates in 6 of 7 runs)."""
    pages = generate_corpus(40, seed=16).pages
    settings, pool, progress, reader = await started(broker, tmp_path)
    names = TopicNames.from_settings(settings)
    try:
        await decide_all(settings, pool, progress, pages)
        claimed = await idle_claims_left_standing(settings.stream.broker, names.sites)
        assert claimed, "a caught-up worker claims its partitions idle (the premise of this test)"
        pool.stop(how=signal.SIGTERM)
        assert pool.processes[0].returncode == 0
        assert await idle_claims_left_standing(settings.stream.broker, names.sites) == {}
    finally:
        reader.cancel()
        pool.stop()


async def test_a_data_dir_built_against_other_topics_is_refused_in_one_line(broker, tmp_path):
    """The same app and data directory against a broker whose changelogs are behind the directory
    (here a fresh broker: as after deleting the topics, or restarting the embedded broker)."""
    pages = generate_corpus(30, seed=16).pages
    settings, pool, progress, reader = await started(broker, tmp_path)
    try:
        await decide_all(settings, pool, progress, pages)
    finally:
        reader.cancel()
        pool.stop()
    with embedded_broker(broker.kind) as other:
        moved = settings.replace(broker=other.bootstrap)
        await ensure_topics(other.bootstrap, topic_specs(moved))
        pool = Workers(moved, other.bootstrap, 1, first=0)
        try:
            deadline = time.monotonic() + 90
            while pool.processes[0].poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert pool.processes[0].returncode == ExitCode.STATE_MISMATCH
            log = pool.logs[0].read_text(errors="replace")
            assert "refusing to run: the state in" in log and "ahead of its changelog topics" in log
            assert "Traceback" not in log.split("refusing to run")[-1]
        finally:
            pool.stop()


async def test_kill_9_mid_stream_changes_no_alert(broker, tmp_path):
    """kill -9 while pages are in flight, restart with the disk wiped (state recovered from the
    changelogs): the alerts on the topic are batch's, and one sent again is the same record.
    Without the learner, so that the decisions, hence the alerts, are batch's."""
    pages = generate_corpus(400, seed=7, spreading=2).pages
    settings, pool, progress, reader = await started(broker, tmp_path, snapshot_mb=0.02, boilerplate=False)
    names = TopicNames.from_settings(settings)
    expected = batch_alerts(pages, settings.dedup_config(), settings.engine.alert_rules())
    assert {record["level"] for record in expected.values()} == {1, 2, 3}
    try:
        fed, rest = await in_flight_when_killed(settings, names, pages, progress, pool, first=100)
        pool.stop(how=signal.SIGKILL)
        shutil.rmtree(Path(settings.stream.data_dir) / "worker-0")
        pool = Workers(settings, settings.stream.broker, 1)
        progress.fed = fed + await rest
        await wait_until(progress.complete, pool)
        assert progress.complete(), progress.summary()
        sent = await read_alerts(settings.stream.broker, names.alerts, expected)
    finally:
        reader.cancel()
        pool.stop()
    assert sent.keys() == expected.keys()
    assert [key for key, records in sent.items() if len(records) > 1] == [], "an alert changed"
    assert {key: orjson.loads(next(iter(records))) for key, records in sent.items()} == expected


def damage_stores(data_dir: Path, how: str) -> list[Path]:
    """Damage every SST file of worker 0's RocksDB stores, as a disk fault or a copy cut short
    would: ``truncate`` cuts each to half its size, ``scribble`` overwrites bytes in its middle.
    Returns the files damaged."""
    files = sorted((data_dir / "worker-0").rglob("*.sst"))
    for path in files:
        size = path.stat().st_size
        if how == "truncate":
            with path.open("r+b") as f:
                f.truncate(size // 2)
        else:
            with path.open("r+b") as f:
                f.seek(size // 3)
                f.write(bytes(random.Random(size).randrange(256) for _ in range(min(4096, size // 3))))
    return files


async def test_a_damaged_window_directory_is_moved_aside_and_built_again_from_the_log(broker, tmp_path):
    """The decide partition's window directory, its manifest overwritten between runs (RocksDB then
    refuses it as corrupt): the worker logs one line, moves the directory aside, builds the window
    again from the log in the stage's table, and decides the pages fed afterwards as batch does."""
    pages = generate_corpus(60, seed=22).pages
    settings, pool, progress, reader = await started(broker, tmp_path)
    try:
        await decide_all(settings, pool, progress, pages[:30])
        pool.stop(how=signal.SIGTERM)
        windows = sorted(Path(settings.stream.data_dir).rglob("decide-window-0"))
        manifests = [manifest for window in windows for manifest in window.glob("MANIFEST-*")]
        assert manifests, "the worker kept its window in a directory (the premise of this test)"
        for manifest in manifests:
            manifest.write_bytes(bytes(manifest.stat().st_size))
        pool = Workers(settings, settings.stream.broker, 1)
        await decide_all(settings, pool, progress, pages)
        log = pool.logs[0].read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
        damage_lines = [line for line in log.splitlines() if "is damaged" in line]
        assert len(damage_lines) == 1 and "decide partition 0" in damage_lines[0], damage_lines
        assert sorted(Path(settings.stream.data_dir).rglob("decide-window-0.damaged-*"))
        statuses = {page_id: record["status"] for page_id, record in progress.decisions.items()}
        assert statuses == {record["id"]: record["status"] for record in batch_reference(pages)}
    finally:
        reader.cancel()
        pool.stop()


def drop_head_rows(data_dir: Path) -> list[str]:
    """Delete the head row of partition 0 from every stage table of worker 0 (RocksDB, between
    runs), as a copy of the rows that missed its first records would lack it. Returns the tables
    changed."""
    changed = []
    for path in sorted((data_dir / "worker-0").rglob("*-state-0.db")):
        db = rocksdict.Rdict(str(path), options=rocksdict.Options(raw_mode=True))
        try:
            heads = [key for key in db.keys() if key[:5] == partition_prefix(0) + b"h"]
            for key in heads:
                del db[key]
        finally:
            db.close()
        if heads:
            changed.append(path.name)
    return changed


async def test_a_copy_of_the_rows_that_lacks_some_is_restored_from_the_changelog(broker, tmp_path):
    """A worker whose local rows lack some that their changelog has (here: every stage's head row
    of partition 0, as a standby copy that missed its first records would) logs one line per
    partition, restores its rows from the changelog and goes on: the pages fed afterwards are
    decided as batch decides them. Before, the worker refused to run ("no head row", exit 78)."""
    pages = generate_corpus(60, seed=24).pages
    settings, pool, progress, reader = await started(broker, tmp_path)
    try:
        await decide_all(settings, pool, progress, pages[:30])
        pool.stop(how=signal.SIGTERM)
        changed = drop_head_rows(Path(settings.stream.data_dir))
        assert any(name.startswith("decide") for name in changed) and len(changed) > 1, changed
        pool = Workers(settings, settings.stream.broker, 1)
        await decide_all(settings, pool, progress, pages)
        log = pool.logs[0].read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
        incomplete = [line for line in log.splitlines() if "copy of its rows is incomplete" in line]
        restored = [line for line in log.splitlines() if "changelog records restored" in line]
        assert len(incomplete) == len(restored) == len(changed), (changed, incomplete, restored)
        statuses = {page_id: record["status"] for page_id, record in progress.decisions.items()}
        assert statuses == {record["id"]: record["status"] for record in batch_reference(pages)}
    finally:
        reader.cancel()
        pool.stop()


@pytest.mark.parametrize("how", ["truncate", "scribble"])
async def test_a_corrupt_store_is_moved_aside_and_rebuilt_from_its_changelog(broker, tmp_path, how):
    """A worker whose RocksDB files were damaged between runs logs one line per damaged store, moves
    it aside, rebuilds it from the store's changelog and goes on: the pages fed afterwards are all
    decided, as batch decides them. Before, every start crashed with RocksDB's ``Corruption`` and a
    traceback, and the pages fed afterwards were never decided."""
    pages = generate_corpus(60, seed=21).pages
    settings, pool, progress, reader = await started(broker, tmp_path, snapshot_mb=0.02)
    try:
        await decide_all(settings, pool, progress, pages[:30])
        pool.stop(how=signal.SIGTERM)
        damaged = damage_stores(Path(settings.stream.data_dir), how)
        assert damaged, "the worker flushed its stores to SST files (the premise of this test)"
        pool = Workers(settings, settings.stream.broker, 1)
        await decide_all(settings, pool, progress, pages)
        log = pool.logs[0].read_text(errors="replace")
        assert "Traceback" not in log, log[-3000:]
        damage_lines = [line for line in log.splitlines() if "is damaged" in line]
        assert damage_lines and all("rebuilding it from its changelog" in line for line in damage_lines)
        aside = sorted(Path(settings.stream.data_dir).rglob("*.damaged-*"))
        assert len(aside) == len(damage_lines), "one line per damaged store, each kept aside"
        assert {path.name.split(".damaged-")[0] for path in aside} <= {
            path.parent.name for path in damaged
        }, "only damaged stores are moved"
        statuses = {page_id: record["status"] for page_id, record in progress.decisions.items()}
        assert statuses == {record["id"]: record["status"] for record in batch_reference(pages)}
    finally:
        reader.cancel()
        pool.stop()
