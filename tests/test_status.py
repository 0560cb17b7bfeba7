"""Workers' status reports (stream_lsh.stream.status) and `stream-lsh status`
(stream_lsh.stream.deployment): built from the registry /metrics serves, rates between reports,
JSON, stale workers, the text; and end to end, a real worker's reports read by the real command."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import subprocess
import sys
import time

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from stream_helpers import feed_until_accounted, stream_settings

from stream_lsh.errors import ExitCode
from stream_lsh.pipeline.outbox import Outbox
from stream_lsh.pipeline.telemetry import Gauges, Tally
from stream_lsh.settings import Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import free_port
from stream_lsh.stream.client import Fed, read_topic
from stream_lsh.stream.deployment import (
    DeploymentStatus,
    GroupLag,
    LatestReports,
    PartitionLag,
    deployment_status,
    format_status,
    live_line,
)
from stream_lsh.stream.metrics import PartitionReading, WorkerMetrics, WorkerReading
from stream_lsh.stream.runner import Progress, Workers, run_stream
from stream_lsh.stream.status import (
    Assignment,
    Backlog,
    StatusPublisher,
    StatusReport,
    StatusReporter,
)
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

BAD = [b"{not json", orjson.dumps({"text": "no id"}), orjson.dumps({"id": "no-body"})]


def busy_worker() -> WorkerMetrics:
    """A worker's metrics after one outbox sent, with the gauges of a worker holding work."""
    metrics = WorkerMetrics()
    metrics.sent(
        Outbox(
            decisions=[
                ("a", {"status": "unique"}),
                ("b", {"status": "duplicate"}),
                ("c", {"status": "unique"}),
            ],
            dead_letters=[(None, {"reason": "invalid_json"})],
            answers=[("q", {"id": "q"})],
            unique_pages=[("a", b"{}"), ("c", b"{}")],
            tally=Tally(pages=4, queries=1),
        )
    )
    metrics.read_from(
        lambda: WorkerReading(
            partitions=[
                PartitionReading("decide", 0, Gauges(window_pages=15, waiting=3, oldest_wait_s=1.5), 190, 20),
                PartitionReading("sites", 0, Gauges(boilerplate_blocks=4), 7, 0),
            ],
            input_lag={0: 5, 1: 0},
            assigned={"pages": 2},
            ready=True,
            loop_lag_s=0.02,
        )
    )
    return metrics


def report_of(metrics: WorkerMetrics, *, at: float = 1010.0, started: float = 1000.0) -> StatusReport:
    reporter = StatusReporter(
        metrics.registry, worker="host:1", app_id="app", interval_s=5.0, started_at=started
    )
    return reporter.report(Assignment(input=[0, 1], decide=[0], sites=[0]), now=at)


def test_a_report_carries_the_numbers_the_metrics_page_serves():
    metrics = busy_worker()
    report = report_of(metrics)
    scraped = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
    }
    served = {
        labels[0][1]: value
        for (name, labels), value in scraped.items()
        if name == "stream_lsh_decisions_total"
    }
    assert report.totals.decisions == served == {"unique": 2, "duplicate": 1}
    assert report.totals.dead_letters == {"invalid_json": 1}
    assert report.totals.inputs == {"page": 4, "query": 1, "retraction": 0}
    assert (report.totals.answers, report.totals.unique_pages) == (1, 2)
    assert report.backlog == Backlog(
        pending_pages=3,
        pending_oldest_s=1.5,
        input_lag={0: 5, 1: 0},
        window_pages=15,
        state_bytes=217,
    )
    assert report.health.ready and report.health.live and not report.health.recovering
    assert report.health.loop_lag_s == 0.02
    assert (report.worker, report.app_id, report.sent_at, report.started_at) == (
        "host:1",
        "app",
        1010.0,
        1000.0,
    )


def test_rates_are_per_second_since_the_previous_report():
    metrics = busy_worker()
    reporter = StatusReporter(metrics.registry, worker="w", app_id="app", interval_s=5.0, started_at=1000.0)
    first = reporter.report(Assignment(), now=1004.0)  # since the start, when every counter was 0
    assert first.rates_over_s == 4.0
    assert first.rates.decisions == {"unique": 0.5, "duplicate": 0.25}
    metrics.sent(Outbox(decisions=[(str(i), {"status": "duplicate"}) for i in range(10)]))
    second = reporter.report(Assignment(), now=1009.0)
    assert second.rates_over_s == 5.0
    assert second.rates.decisions == {"unique": 0.0, "duplicate": 2.0}
    assert second.rates.decided == 2.0 and second.rates.dead == 0.0
    assert second.totals.decisions == {"unique": 2, "duplicate": 11}


def test_a_report_survives_json_and_other_versions_are_refused():
    report = report_of(busy_worker())
    raw = report.to_json()
    assert StatusReport.from_json(raw) == report
    data = orjson.loads(raw)
    assert data["backlog"]["input_lag"] == {"0": 5, "1": 0} and data["version"] == 2
    newer_fields = {**data, "added_later": 1, "health": {**data["health"], "also_later": True}}
    assert StatusReport.from_json(orjson.dumps(newer_fields)) == report  # added fields are ignored
    for bad in (
        orjson.dumps({**data, "version": 1}),  # a report of a worker with band partitions and homes
        orjson.dumps({**data, "version": 3}),
        orjson.dumps({**data, "sent_at": "yesterday"}),
        orjson.dumps({k: v for k, v in data.items() if k != "worker"}),
        b"[1, 2]",
        b"{not json",
    ):
        with pytest.raises(ValueError, match="not a status report"):
            StatusReport.from_json(bad)


def test_a_worker_is_stale_after_three_of_its_intervals_without_a_report():
    report = report_of(busy_worker(), at=100.0, started=90.0)  # every 5 s
    assert not report.stale(115.0) and report.stale(115.1)
    latest = LatestReports()
    latest.add(report.to_json())
    status = deployment_status(
        latest, GroupLag("app", "pages", []), app_id="app", status_topic="app-status", now=116.0, since_s=600
    )
    assert [(w.up, w.age_s) for w in status.workers] == [(False, 16.0)] and status.up == []


def test_the_latest_report_of_each_worker_is_kept_and_unreadable_records_are_counted():
    metrics = busy_worker()
    reporter = StatusReporter(metrics.registry, worker="w1", app_id="app", interval_s=5.0, started_at=0.0)
    older, newer = reporter.report(Assignment(), now=10.0), reporter.report(Assignment(), now=15.0)
    other = report_of(metrics, at=12.0, started=0.0)
    before = report_of(metrics, at=1.0, started=0.0)
    latest = LatestReports(since=5.0)
    for raw in (newer.to_json(), older.to_json(), other.to_json(), before.to_json(), b"garbage", None):
        latest.add(raw)
    assert latest.reports() == [other, newer]  # by worker name; the older report of w1 did not replace
    assert (latest.received, latest.unreadable) == (3, 1)


def two_workers(now: float) -> DeploymentStatus:
    up = report_of(busy_worker(), at=now - 1.2, started=now - 6.2)  # rates over 5 s
    gone = dataclasses.replace(up, worker="other:7", sent_at=now - 47)
    group = GroupLag(
        "app",
        "pages",
        [PartitionLag.of(0, 1200, 1210), PartitionLag.of(1, None, 0), PartitionLag.of(2, 90, 87)],
    )
    latest = LatestReports()
    latest.add(up.to_json())
    latest.add(gone.to_json())
    return deployment_status(latest, group, app_id="app", status_topic="app-status", now=now, since_s=600)


def test_the_text_shows_each_worker_its_partitions_rates_backlog_and_the_group_lag():
    status = two_workers(now=5000.0)
    assert len(status.up) == 1
    text = format_status(status)
    assert text.startswith("app app: 1 of 2 workers up (reports of the last 10 min on app-status)")
    lines = text.splitlines()
    block = lines[lines.index(next(line for line in lines if line.startswith("worker host:1"))) :]
    assert block[0].startswith("worker host:1: up, last report 1.2 s ago (every 5 s); ready; stream-lsh ")
    assert block[0].endswith("running 5.0 s")
    assert block[1] == "  partitions   input 0-1, sites 0, decide 0"
    assert block[2].startswith("  rates        0.6 decisions/s (0.4 unique, 0.2 duplicate), 1.0 inputs/s")
    assert block[3] == (
        "  totals       3 decisions (2 unique, 1 duplicate), 1 dead letters (1 invalid json), "
        "5 inputs, 1 answers"
    )
    assert block[4].startswith("  backlog      3 pages pending (oldest 1.5 s); 15 pages in the window,")
    assert block[5].startswith("  input lag    5 records (by partition 0: 5, 1: 0;")
    assert "worker other:7: STALE, last report 47 s ago (every 5 s);" in text
    assert "workers up, together: 0.6 decisions/s" in text and "; input lag 5 records" in text
    group = lines.index("consumer group app on pages:")
    assert "the embedded Tansu broker under-reports" in lines[group + 1]
    rows = [line.split() for line in lines[group + 2 :]]
    assert rows[0] == ["partition", "committed", "end", "lag"]
    assert rows[1:4] == [["0", "1,200", "1,210", "10"], ["1", "none", "0", "-"], ["2", "90", "87", "0"]]
    assert lines[-1] == "  total lag 10 records"


def test_the_json_form_holds_the_reports_the_sums_and_the_group():
    data = orjson.loads(two_workers(now=5000.0).to_json())
    assert [w["up"] for w in data["workers"]] == [True, False] and data["workers_up"] == 1
    assert data["workers"][0]["report"]["totals"]["decisions"] == {"unique": 2, "duplicate": 1}
    assert data["group"]["total_lag"] == 10 and data["group"]["partitions"][1]["committed"] is None
    assert data["rates"]["decisions"] == {"duplicate": 0.2, "unique": 0.4}


def test_runs_live_line_adds_up_the_workers():
    status = two_workers(now=5000.0)
    line = live_line([w.report for w in status.workers], now=5000.0)
    assert line == (
        "2 workers (1 stale): 6 decisions sent (4 unique, 2 duplicate), 2 dead letters; "
        "now 0.6 decisions/s, 1.0 inputs/s, 0.2 dead letters/s; 3 pages pending; "
        "input lag 5 records"
    )


async def test_a_send_that_hangs_is_given_up_after_one_interval_and_the_worker_goes_on(caplog):
    """The publisher against a producer whose sends never complete (as during a broker outage)
    and one that raises: both come back, each failure is logged once, not at every interval."""

    class Hanging:
        async def send(self, *args):
            return asyncio.get_running_loop().create_future()  # never resolved

    class Failing:
        async def send(self, *args):
            raise ConnectionError("broker gone")

    class App:
        consumer = None  # no assignment yet: reported as no partitions

        def __init__(self, producer):
            self.producer = producer

    settings = Settings.load(environ={}, status_interval_s=1)
    publisher = StatusPublisher(settings, WorkerMetrics())
    started = time.monotonic()
    assert await publisher.publish(App(Hanging())) is None
    assert 0.9 < time.monotonic() - started < 2.0
    assert await publisher.publish(App(Failing())) is None
    warnings = [r.getMessage() for r in caplog.records if "status report not sent" in r.getMessage()]
    assert len(warnings) == 1 and "TimeoutError" in warnings[0]


def test_an_unreachable_broker_is_one_line_and_exit_code_2():
    result = status_command({}, "--broker", f"127.0.0.1:{free_port('127.0.0.1')}")
    assert result.returncode == ExitCode.USAGE
    assert result.stderr.strip().count("\n") == 0 and "cannot reach a Kafka broker" in result.stderr


def status_command(environ: dict[str, str], *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "stream_lsh", "status", *flags],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_status_lists_the_worker_its_partitions_and_the_decisions_on_the_topic(broker, tmp_path):
    """One worker decides generated pages and dead-letters bad lines; `stream-lsh status --json`,
    run as a user runs it, lists it with every partition of the app and the totals the output
    topics hold, and the group's committed offsets cover every record fed. Stopped, it turns stale
    and the command exits with 69."""
    pages = generate_corpus(60, seed=5).pages
    settings = stream_settings(broker, tmp_path, status_interval_s=1)
    environ = settings.to_environ()
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pool = Workers(settings, settings.stream.broker, 1)
    try:
        statuses, reasons = await feed_until_accounted(settings, pages, BAD, pool)
        deadline = time.monotonic() + 20
        while True:  # a report a second; the group commits every second
            result = await asyncio.to_thread(status_command, environ, "--json")
            found = orjson.loads(result.stdout) if result.returncode == 0 else None
            workers = found["workers"] if found else []
            report = workers[0]["report"] if workers else None
            committed = sum(p["committed"] or 0 for p in found["group"]["partitions"]) if found else 0
            done = report is not None and report["totals"]["decisions"] == statuses
            if (done and committed == len(pages) + len(BAD)) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.3)
        assert result.returncode == 0, result.stderr
        assert len(workers) == 1 and workers[0]["up"], found
        assert report["totals"]["decisions"] == statuses and sum(statuses.values()) == len(pages)
        assert report["totals"]["dead_letters"] == reasons
        assert report["app_id"] == settings.stream.app_id and report["interval_s"] == 1
        assert report["partitions"] == {
            "input": [0, 1, 2, 3],
            "queries": [0, 1, 2, 3],
            "sites": [0, 1, 2],
            "decide": [0],
        }
        group = found["group"]
        assert group["error"] is None and [p["partition"] for p in group["partitions"]] == [0, 1, 2, 3]
        assert committed == len(pages) + len(BAD)
        text = await asyncio.to_thread(status_command, environ)
        assert text.returncode == 0, text.stderr
        assert f"app {settings.stream.app_id}: 1 of 1 worker up" in text.stdout
        assert "  partitions   input 0-3, queries 0-3, sites 0-2, decide 0" in text.stdout
    finally:
        pool.stop()
    await asyncio.sleep(3.2)  # three intervals without a report
    stale = await asyncio.to_thread(status_command, environ, "--json")
    assert stale.returncode == ExitCode.UNAVAILABLE, stale.stderr
    assert [w["up"] for w in orjson.loads(stale.stdout)["workers"]] == [False]
    assert stale.stderr.count("\n") == 1 and "no worker of app" in stale.stderr


def test_runs_summary_counts_the_pages_it_fed_once_the_feed_is_known():
    """A broker that under-reports its end offsets (Tansu) lets `run --broker` read decisions of an
    earlier run from the topic: the summary counts this run's pages, as `-o` writes only theirs."""
    progress = Progress()
    for page_id, status in [("old-1", "unique"), ("old-2", "duplicate"), ("a", "unique"), ("b", "duplicate")]:
        progress.on_decision({"id": page_id, "status": status})
    assert progress.summary().startswith("4 pages decided (2 unique, 2 duplicate")
    progress.fed = [Fed(0, 0, "a", False), Fed(1, 0, "b", False), Fed(0, 1, "c", False)]
    assert progress.summary().startswith("2 pages decided (1 unique, 1 duplicate, 0 no content)")


async def test_runs_status_lines_come_from_its_workers_reports_while_it_feeds(broker, tmp_path):
    """`run` with a paced feed: status lines come while it is still feeding, from the workers'
    reports (their decisions sent, never more than were fed), and its summary counts the topic."""
    pages = generate_corpus(100, seed=6).pages
    settings = stream_settings(broker, tmp_path, status_interval_s=1)
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    progress = await run_stream(
        settings,
        workers=1,
        feed=[orjson.dumps(p) for p in pages],
        rate=10,  # the feed takes at least 9.9 s from its start, after the topics are made
        until_idle=True,
        on_status=lambda line: lines.append((time.monotonic() - started, line)),
        status_every=0.5,
        timeout=120,
    )
    assert sorted(progress.decisions) == sorted(p["id"] for p in pages)
    assert progress.summary().startswith("100 pages decided")
    assert lines[0][1].startswith("waiting for the workers' first status reports"), lines
    sent = [
        (at, int(m[1].replace(",", "")))
        for at, m in ((at, re.match(r"1 worker: ([\d,]+) decisions sent", line)) for at, line in lines)
        if m
    ]
    counts = [count for _, count in sent]
    assert len(sent) >= 3 and counts == sorted(counts) and 0 < counts[-1] <= len(pages), lines
    assert any(at < 9.5 and count > 0 for at, count in sent), lines  # while it was still feeding


async def test_reading_from_a_time_starts_at_the_first_record_stamped_then(broker, tmp_path):
    """read_topic(since_ms=...): from the first record at or after the time; none after the last
    (Tansu answers such a time with offset 0, which would read everything)."""
    from aiokafka import AIOKafkaProducer

    settings = stream_settings(broker, tmp_path)
    topic = TopicNames.from_settings(settings).status
    await ensure_topics(broker.bootstrap, topic_specs(settings))
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        stamps = []
        for value in (b"a", b"b", b"c"):
            # keyed: Apache Kafka refuses records without a key on a compacted topic
            stamps.append((await producer.send_and_wait(topic, value, key=b"w")).timestamp)
            await asyncio.sleep(0.05)
    finally:
        await producer.stop()

    async def read(since_ms: int) -> list[bytes]:
        return [
            value
            async for _, value, _, _ in read_topic(broker.bootstrap, topic, since_ms=since_ms, follow=False)
        ]

    assert await read(stamps[0] - 60_000) == [b"a", b"b", b"c"]
    assert await read(stamps[1]) == [b"b", b"c"]
    assert await read(stamps[2] + 60_000) == []
