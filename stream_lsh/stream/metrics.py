"""What a worker has done and holds, in Prometheus' text format, on its web server's ``/metrics``.

Two kinds of metric:

* **Counters and histograms** of what was sent. They are taken where every output leaves the
  worker: each outbox the app has sent (:meth:`WorkerMetrics.sent`), with the stages' tally of
  what happened while making it (:mod:`stream_lsh.pipeline.telemetry`). So they count records as
  the output topics receive them: a decision sent again after a crash (at-least-once, always the
  same decision) is counted again, and a consumer of the decisions topic that keeps the latest
  record per page sees one.
* **Gauges** of what the worker holds now (backlog, state, lag, recovery, health), read from the
  app when Prometheus scrapes (:class:`WorkerReading`).

Each worker has its own registry (not the process-global one), so that what it exports is exactly
its own metrics and a test can read them without a web server. :func:`exported_names` lists every
sample name it can export: the dashboard and alerts are checked against it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..pipeline.outbox import Outbox
from ..pipeline.telemetry import Gauges

__all__ = ["CONTENT_TYPE", "PartitionReading", "WorkerMetrics", "WorkerReading", "exported_names"]

#: Prometheus' text format, version 0.0.4, in UTF-8 (aiohttp takes the charset apart from the type)
CONTENT_TYPE = "text/plain; version=0.0.4"

#: record timestamp -> decision sent: milliseconds when flowing, minutes in a backfill
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)
#: event time -> decision sent: how old the news is when it is decided, seconds to weeks
AGE_BUCKETS = (1, 10, 60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86400, 3 * 86400, 7 * 86400, 30 * 86400)
CANDIDATE_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500)
BLOCK_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50)
SNAPSHOT_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
PAUSE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


@dataclass(frozen=True)
class PartitionReading:
    """One stage partition this worker holds: what its state machine holds, and its rows' sizes."""

    stage: str
    partition: int
    gauges: Gauges
    snapshot_bytes: int
    journal_bytes: int


@dataclass(frozen=True)
class WorkerReading:
    """What a worker holds at one moment (the gauges of a scrape)."""

    partitions: list[PartitionReading] = field(default_factory=list)
    input_lag: dict[int, int] = field(default_factory=dict)  # input partition -> records not yet taken
    assigned: dict[str, int] = field(default_factory=dict)  # topic -> partitions assigned
    recovering: bool = False
    recovery_expected: int = 0  # changelog records the latest recovery had to replay
    recovery_remaining: int = 0
    ready: bool = False
    live: bool = True
    loop_lag_s: float = 0.0
    longest_pause_s: float = 0.0  # of the event loop, since the worker started


class WorkerMetrics:
    """The metrics of one worker process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.inputs = Counter(
            "stream_lsh_inputs",
            "Input records taken, by kind (page, retraction, query)",
            ["kind"],
            registry=registry,
        )
        self.decisions = Counter(
            "stream_lsh_decisions",
            "Decisions sent to the decisions topic, by status (unique, duplicate, no_content)",
            ["status"],
            registry=registry,
        )
        self.dead_letters = Counter(
            "stream_lsh_dead_letters",
            "Input records sent to the dead-letter topic, by reason (invalid_json, too_large, ...)",
            ["reason"],
            registry=registry,
        )
        self.answers = Counter(
            "stream_lsh_answers", "Answers to query-only probes sent to the answers topic", registry=registry
        )
        self.unique_pages = Counter(
            "stream_lsh_unique_pages", "Pages sent to the unique-pages topic", registry=registry
        )
        self.latency = Histogram(
            "stream_lsh_decision_latency_seconds",
            "From a page's input record timestamp to its decision being sent",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.age = Histogram(
            "stream_lsh_event_time_latency_seconds",
            "From a page's event time (its date, or its clock) to its decision being sent",
            buckets=AGE_BUCKETS,
            registry=registry,
        )
        self.candidates = Histogram(
            "stream_lsh_candidates_per_page",
            "Pages found sharing a band with a page, per decision",
            buckets=CANDIDATE_BUCKETS,
            registry=registry,
        )
        self.checks = Counter(
            "stream_lsh_candidate_checks",
            "Bucket collisions checked by signature agreement at band partitions, by result "
            "(verified: at or above the threshold; rejected: below)",
            ["result"],
            registry=registry,
        )
        self.matches = Counter(
            "stream_lsh_duplicates",
            "Duplicate decisions sent, by the rule that matched them "
            "(jaccard, containment, opening, headline)",
            ["match"],
            registry=registry,
        )
        self.refused = Counter(
            "stream_lsh_refused_pages",
            "Decisions sent for pages a fuller page of a story kept out of its cluster (refused_by)",
            registry=registry,
        )
        self.roundups = Counter(
            "stream_lsh_roundup_pages",
            "Decisions sent for pages whose sentences opened three or more earlier stories "
            "(digests, roundups, front and live pages), which join none of them (roundup)",
            registry=registry,
        )
        self.notices = Counter(
            "stream_lsh_notice_pages",
            "Decisions sent for pages that say their article is not here (error pages, bot checks, "
            "consent, login and paywall walls; core/notice.py), by kind: no_content, never indexed",
            ["kind"],
            registry=registry,
        )
        self.evictions = Counter(
            "stream_lsh_bucket_evictions",
            "Page ids pushed out of a full LSH bucket by the bucket cap (hot buckets)",
            registry=registry,
        )
        self.late_pages = Counter(
            "stream_lsh_late_pages",
            "Pages that reached the decide partition behind its release point and were applied at once",
            registry=registry,
        )
        self.flattened = Counter(
            "stream_lsh_flattened_pages",
            "Input pages whose text held a whole article on one line (one block of over 150 words, "
            "most of the text): "
            "split into sentences; an extractor that keeps paragraphs serves better",
            registry=registry,
        )
        self.blocks_dropped = Histogram(
            "stream_lsh_boilerplate_dropped_blocks",
            "Boilerplate blocks dropped from a page before shingling",
            buckets=BLOCK_BUCKETS,
            registry=registry,
        )
        self.loop_pauses = Histogram(
            "stream_lsh_event_loop_pause_seconds",
            "Times the worker's event loop ran nothing else for 5 ms or more, by how long",
            buckets=PAUSE_BUCKETS,
            registry=registry,
        )
        self.snapshots = Histogram(
            "stream_lsh_snapshot_seconds",
            "Time to snapshot a stage partition's state (journal compaction), by stage",
            ["stage"],
            buckets=SNAPSHOT_BUCKETS,
            registry=registry,
        )
        self.stuck_pages = Counter(
            "stream_lsh_stuck_pages",
            "Pages reported by the pending-page guard: undecided past STREAM_LSH_PENDING_ALERT_S "
            "on a wait that did not move",
            registry=registry,
        )
        self._reading: Callable[[], WorkerReading] = WorkerReading
        registry.register(_ReadingCollector(lambda: self._reading()))

    def read_from(self, reading: Callable[[], WorkerReading]) -> None:
        """Where the gauges come from at each scrape (the app; an empty reading until set)."""
        self._reading = reading

    def sent(self, out: Outbox, now: float | None = None) -> None:
        """Count an outbox the app has just sent (``now``: wall-clock seconds of the send)."""
        now = time.time() if now is None else now
        for _, decision in out.decisions:
            self.decisions.labels(status=decision["status"]).inc()
            self.candidates.observe(decision.get("candidates", 0))
            if decision["status"] == "duplicate":
                self.matches.labels(match=decision.get("match") or "jaccard").inc()
            if decision.get("refused_by") is not None:
                self.refused.inc()
            if decision.get("roundup"):
                self.roundups.inc()
            if decision.get("notice") is not None:
                self.notices.labels(kind=decision["notice"]).inc()
        for _, letter in out.dead_letters:
            self.dead_letters.labels(reason=letter["reason"]).inc()
        _inc(self.answers, len(out.answers))
        _inc(self.unique_pages, len(out.unique_pages))
        tally = out.tally
        inputs = (("page", tally.pages), ("retraction", tally.retractions), ("query", tally.queries))
        for kind, count in inputs:
            _inc(self.inputs.labels(kind=kind), count)
        _inc(self.checks.labels(result="verified"), tally.verified)
        _inc(self.checks.labels(result="rejected"), tally.rejected)
        _inc(self.evictions, tally.evicted)
        _inc(self.late_pages, len(tally.late_ids))
        _inc(self.flattened, tally.flattened)
        for dropped in tally.blocks_dropped:
            self.blocks_dropped.observe(dropped)
        for timing in tally.decided:
            if timing.received_ms is not None and timing.received_ms > 0:
                self.latency.observe(max(0.0, now - timing.received_ms / 1000))
            if timing.event_time is not None:
                self.age.observe(max(0.0, now - timing.event_time))

    def render(self) -> bytes:
        """The registry in Prometheus' text exposition format."""
        return generate_latest(self.registry)


def _inc(counter: Counter, amount: int) -> None:
    if amount:
        counter.inc(amount)


class _ReadingCollector(Collector):
    """The gauges, from a :class:`WorkerReading` taken at each scrape."""

    def __init__(self, reading: Callable[[], WorkerReading]) -> None:
        self.reading = reading

    def describe(self) -> Iterable[Metric]:
        return list(self._families(WorkerReading()))

    def collect(self) -> Iterable[Metric]:
        return list(self._families(self.reading()))

    @staticmethod
    def _families(r: WorkerReading) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "stream_lsh_pending_pages",
            "Pages not yet decided, held for (clock, id) order at a site or the decide partition",
            labels=["stage", "partition"],
        )
        pending_age = GaugeMetricFamily(
            "stream_lsh_pending_oldest_seconds",
            "How long the oldest page held for (clock, id) order has waited",
            labels=["stage", "partition"],
        )
        blocks = _by_partition("boilerplate_blocks", "Blocks a site partition has learnt as boilerplate")
        alerts = _by_partition(
            "alerts_frontier_seconds",
            "Record clock before which the decide partition has applied every decision to its cluster's "
            "spread (alerts out)",
        )
        window = GaugeMetricFamily(
            "stream_lsh_window_pages",
            "Pages in the window of the decide partition",
            labels=["stage", "partition"],
        )
        size = GaugeMetricFamily(
            "stream_lsh_state_bytes",
            "Bytes of a stage partition's durable state rows, by part (snapshot, journal)",
            labels=["stage", "partition", "part"],
        )
        for p in r.partitions:
            number, g = str(p.partition), p.gauges
            if p.stage != "sites":  # a site partition keeps no pages
                window.add_metric([p.stage, number], g.window_pages)
            size.add_metric([p.stage, number, "snapshot"], p.snapshot_bytes)
            size.add_metric([p.stage, number, "journal"], p.journal_bytes)
            pending.add_metric([p.stage, number], g.waiting)
            pending_age.add_metric([p.stage, number], g.oldest_wait_s or 0.0)
            if g.boilerplate_blocks is not None:
                blocks.add_metric([number], g.boilerplate_blocks)
            if g.alerts_frontier_ms is not None:
                alerts.add_metric([number], g.alerts_frontier_ms / 1000.0)
        yield from (pending, pending_age, blocks, alerts, window, size)
        lag = _by_partition("input_lag_records", "Records of an input partition not yet taken by this worker")
        for partition, records in sorted(r.input_lag.items()):
            lag.add_metric([str(partition)], records)
        yield lag
        assigned = GaugeMetricFamily(
            "stream_lsh_assigned_partitions", "Partitions assigned to this worker, by topic", labels=["topic"]
        )
        for topic, count in sorted(r.assigned.items()):
            assigned.add_metric([topic], count)
        yield assigned
        yield _gauge("recovering", "1 while the worker restores state from changelogs", r.recovering)
        yield _gauge(
            "recovery_expected_records",
            "Changelog records the latest recovery had to replay",
            r.recovery_expected,
        )
        yield _gauge("recovery_remaining_records", "Changelog records still to replay", r.recovery_remaining)
        yield _gauge("ready", "1 when assigned, recovered and fetching (as /ready)", r.ready)
        yield _gauge("live", "0 when an agent is stuck with input waiting (as /live)", r.live)
        yield _gauge("event_loop_lag_seconds", "How late the worker's 1 s timer last fired", r.loop_lag_s)
        yield _gauge(
            "event_loop_longest_pause_seconds",
            "The longest time the worker's event loop ran nothing else, since it started",
            r.longest_pause_s,
        )


def _by_partition(name: str, documentation: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"stream_lsh_{name}", documentation, labels=["partition"])


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"stream_lsh_{name}", documentation, value=float(value))


def exported_names() -> set[str]:
    """Every sample name a worker's /metrics can hold (``_total``, ``_bucket``, ``_sum``...)."""
    names = set()
    for family in WorkerMetrics().registry.collect():
        if family.type == "counter":
            names |= {f"{family.name}_total", f"{family.name}_created"}
        elif family.type == "histogram":
            names |= {f"{family.name}{suffix}" for suffix in ("_bucket", "_sum", "_count", "_created")}
        else:
            names.add(family.name)
    return names
