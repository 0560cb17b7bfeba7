"""Workers' status reports (stream_lsh.stream.status): built from the registry /metrics serves,
rates between reports, JSON, when a worker is stale, and a send that never ends."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from stream_lsh.pipeline.outbox import Outbox
from stream_lsh.pipeline.telemetry import Gauges, Tally
from stream_lsh.settings import Settings
from stream_lsh.stream.metrics import PartitionReading, WorkerMetrics, WorkerReading
from stream_lsh.stream.status import Assignment, Backlog, StatusPublisher, StatusReport, StatusReporter


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
                PartitionReading("homes", 0, Gauges(window_pages=10, waiting=3, oldest_wait_s=1.5), 100, 20),
                PartitionReading("homes", 2, Gauges(window_pages=5, waiting=0), 40, 0),
                PartitionReading("bands", 1, Gauges(window_pages=99, waiting=2, oldest_wait_s=0.25), 50, 0),
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
    return reporter.report(Assignment(input=[0, 1], homes=[0, 2], bands=[1], sites=[0]), now=at)


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
        held_probes=2,
        held_oldest_s=0.25,
        input_lag={0: 5, 1: 0},
        window_pages=15,  # homes only: a page is remembered by one home, but by many band partitions
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
    assert data["backlog"]["input_lag"] == {"0": 5, "1": 0} and data["version"] == 1
    newer_fields = {**data, "added_later": 1, "health": {**data["health"], "also_later": True}}
    assert StatusReport.from_json(orjson.dumps(newer_fields)) == report  # added fields are ignored
    for bad in (
        orjson.dumps({**data, "version": 2}),
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
