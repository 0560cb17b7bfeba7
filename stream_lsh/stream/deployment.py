"""A running deployment as ``stream-lsh status`` shows it, and ``stream-lsh run``'s live lines:
the workers' latest status reports (:mod:`.status`), read from the status topic, and the consumer
group's committed lag, asked of the broker.

The two sources are kept apart wherever they are shown, because they can disagree for good
reasons. A worker's report says what it counted and holds, and its input lag is measured from its
consumer's fetches (high watermarks, exact on every broker). The broker's view of the group is its
committed offsets against its ListOffsets end offsets: it needs no worker to be up, but commits
trail processing by up to a second, and the embedded Tansu broker under-reports end offsets by up to
one record batch (the lag it shows can then be too small, never too large).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from .client import read_topic
from .connection import KafkaConnection, start_client
from .status import Assignment, Counts, StatusReport
from .topics import TopicNames

__all__ = [
    "DeploymentStatus",
    "GroupLag",
    "LatestReports",
    "PartitionLag",
    "WorkerState",
    "deployment_status",
    "follow_reports",
    "format_status",
    "group_lag",
    "live_line",
    "read_deployment",
]

STATUS_ORDER = {"unique": 0, "duplicate": 1, "no_content": 2}
GROUP_SOURCE = (
    "from the broker: committed offsets against end offsets (ListOffsets), "
    "which the embedded Tansu broker under-reports by up to one record batch"
)


class LatestReports:
    """The latest report of each worker, from status records as they are read. Reports sent
    before ``since`` (seconds) are left out, and records that are not reports are counted."""

    def __init__(self, since: float = 0.0) -> None:
        self.since = since
        self.by_worker: dict[str, StatusReport] = {}
        self.unreadable = 0
        self.received = 0  # reports taken

    def add(self, raw: bytes | None) -> StatusReport | None:
        if raw is None:
            return None  # a tombstone
        try:
            report = StatusReport.from_json(raw)
        except ValueError:
            self.unreadable += 1
            return None
        if report.sent_at < self.since:
            return None
        known = self.by_worker.get(report.worker)
        if known is None or report.sent_at >= known.sent_at:
            self.by_worker[report.worker] = report
        self.received += 1
        return report

    def reports(self) -> list[StatusReport]:
        return sorted(self.by_worker.values(), key=lambda report: report.worker)


async def read_reports(kafka: KafkaConnection, topic: str, *, since: float) -> LatestReports:
    """The reports sent since ``since`` (wall-clock seconds), up to the last one on the broker."""
    latest = LatestReports(since)
    async for _, value, _, _ in read_topic(
        kafka, topic, since_ms=int(since * 1000), follow=False, idle_ms=300
    ):
        latest.add(value)
    return latest


async def follow_reports(kafka: KafkaConnection, topic: str, latest: LatestReports) -> None:
    """Take every report sent since ``latest.since`` into ``latest`` as it arrives, until cancelled."""
    async for _, value, _, _ in read_topic(
        kafka, topic, since_ms=int(latest.since * 1000), follow=True, idle_ms=200
    ):
        latest.add(value)


@dataclass(frozen=True)
class PartitionLag:
    """One input partition as the broker sees the group: ``lag`` is None without a commit."""

    partition: int
    committed: int | None
    end: int
    lag: int | None

    @classmethod
    def of(cls, partition: int, committed: int | None, end: int) -> PartitionLag:
        lag = None if committed is None else max(0, end - committed)
        return cls(partition, committed, end, lag)


@dataclass(frozen=True)
class GroupLag:
    """The consumer group's committed lag on one topic; ``error`` says why it could not be read."""

    group: str
    topic: str
    partitions: list[PartitionLag]
    error: str | None = None
    source: str = GROUP_SOURCE

    @property
    def total(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)


async def group_lag(kafka: KafkaConnection, group: str, topic: str) -> GroupLag:
    """Committed offsets of ``group`` on ``topic`` against the topic's end offsets.

    The partitions are named in the request: the embedded broker cannot answer an OffsetFetch for
    all of a group's partitions (aiokafka fails to decode its reply)."""
    consumer = AIOKafkaConsumer(group_id=None, enable_auto_commit=False, **kafka.client_options())
    await start_client(consumer, kafka)
    admin = AIOKafkaAdminClient(**kafka.client_options())
    try:
        await start_client(admin, kafka)
        try:
            await consumer._client.force_metadata_update()
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                return GroupLag(group, topic, [], error=f"topic {topic!r} does not exist")
            tps = [TopicPartition(topic, p) for p in sorted(partitions)]
            ends = await consumer.end_offsets(tps)
            committed = await admin.list_consumer_group_offsets(group, partitions=tps)
        finally:
            await admin.close()
    except KafkaError as error:  # e.g. no group coordinator yet: the group never committed
        return GroupLag(group, topic, [], error=f"{type(error).__name__}: {error}")
    finally:
        await consumer.stop()
    lags = []
    for tp in tps:
        meta = committed.get(tp)  # offset -1: the group has not committed this partition
        lags.append(
            PartitionLag.of(tp.partition, meta.offset if meta and meta.offset >= 0 else None, ends[tp])
        )
    return GroupLag(group, topic, lags)


@dataclass(frozen=True)
class WorkerState:
    report: StatusReport
    up: bool  # reported within STALE_AFTER_INTERVALS of its intervals
    age_s: float  # since its latest report


@dataclass(frozen=True)
class DeploymentStatus:
    """What ``stream-lsh status`` prints: the workers seen in the last ``since_s`` seconds."""

    app_id: str
    status_topic: str
    read_at: float
    since_s: float
    workers: list[WorkerState]
    group: GroupLag
    unreadable: int = 0  # records of the status topic that were not reports this version reads

    @property
    def up(self) -> list[WorkerState]:
        return [worker for worker in self.workers if worker.up]

    def rates(self) -> Counts:
        """The latest rates of the workers that are up, added up."""
        return _sum(worker.report.rates for worker in self.up)

    def to_json(self) -> bytes:
        data = dataclasses.asdict(self)
        data["group"]["total_lag"] = self.group.total
        data["workers_up"] = len(self.up)
        data["rates"] = dataclasses.asdict(self.rates())
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)


def deployment_status(
    reports: LatestReports, group: GroupLag, *, app_id: str, status_topic: str, now: float, since_s: float
) -> DeploymentStatus:
    workers = [
        WorkerState(report, up=not report.stale(now), age_s=round(max(0.0, now - report.sent_at), 3))
        for report in reports.reports()
    ]
    return DeploymentStatus(app_id, status_topic, now, since_s, workers, group, reports.unreadable)


async def read_deployment(kafka: KafkaConnection, names: TopicNames, *, since_s: float) -> DeploymentStatus:
    """The reports of the last ``since_s`` seconds and the group's lag on the input topic, read
    at once; workers' ages are taken when both are in."""
    reports, group = await asyncio.gather(
        read_reports(kafka, names.status, since=time.time() - since_s),
        group_lag(kafka, names.app_id, names.input),
    )
    return deployment_status(
        reports, group, app_id=names.app_id, status_topic=names.status, now=time.time(), since_s=since_s
    )


def _sum(counts: Iterable[Counts]) -> Counts:
    total = Counts()
    for count in counts:
        total = total.plus(count)
    return total


# -- text ------------------------------------------------------------------------------------------
def format_status(status: DeploymentStatus) -> str:
    """The deployment for people: a block per worker, the sum, then the group's lag."""
    up, seen = len(status.up), len(status.workers)
    lines = [
        f"app {status.app_id}: {up} of {seen} worker{'s' if seen != 1 else ''} up "
        f"(reports of the last {_duration(status.since_s)} on {status.status_topic})"
    ]
    if status.unreadable:
        lines.append(
            f"  {status.unreadable:,} records of {status.status_topic} were not reports this version reads"
        )
    for worker in status.workers:
        lines += ["", *_worker_lines(worker)]
    if status.up:
        reports = [worker.report for worker in status.up]
        lines += ["", f"workers up, together: {_rates(status.rates())}; {_backlog_clause(reports)}"]
    lines += ["", *_group_lines(status.group)]
    return "\n".join(lines)


def _worker_lines(worker: WorkerState) -> list[str]:
    r = worker.report
    state = "up" if worker.up else "STALE"
    health = "recovering" if r.health.recovering else "ready" if r.health.ready else "not ready"
    if not r.health.live:
        health += ", NOT LIVE (an agent is stuck)"
    if r.health.recovering and r.health.recovery_remaining:
        health += f" ({r.health.recovery_remaining:,} changelog records to go)"
    b, totals = r.backlog, r.totals
    return [
        f"worker {r.worker}: {state}, last report {_duration(worker.age_s)} ago (every {r.interval_s:g} s); "
        f"{health}; stream-lsh {r.software}, running {_duration(r.sent_at - r.started_at)}",
        f"  partitions   {_assignment(r.partitions)}",
        f"  rates        {_rates(r.rates)} (over {r.rates_over_s:.1f} s)",
        f"  totals       {_int(totals.decided)} decisions{_split(totals.decisions, _int)}, "
        f"{_int(totals.dead)} dead letters{_split(totals.dead_letters, _int)}, "
        f"{_int(totals.taken)} inputs, {_int(totals.answers)} answers",
        f"  backlog      {b.pending_pages:,} pages pending{_oldest(b.pending_oldest_s)}; "
        f"{b.window_pages:,} pages in the window, {_bytes(b.state_bytes)} of state",
        f"  input lag    {_partition_lag(b.input_lag)}",
    ]


def _group_lines(group: GroupLag) -> list[str]:
    head = [f"consumer group {group.group} on {group.topic}:", f"  ({group.source})"]
    if group.error is not None:
        return [*head, f"  not available: {group.error}"]
    rows = [f"  {'partition':>9}  {'committed':>12}  {'end':>12}  {'lag':>10}"]
    for p in group.partitions:
        committed = "none" if p.committed is None else f"{p.committed:,}"
        lag = "-" if p.lag is None else f"{p.lag:,}"
        rows.append(f"  {p.partition:>9}  {committed:>12}  {p.end:>12,}  {lag:>10}")
    return [*head, *rows, f"  total lag {group.total:,} records"]


def live_line(reports: Iterable[StatusReport], now: float) -> str:
    """``run``'s status line, from its workers' latest reports: totals, rates, backlog."""
    seen = list(reports)
    up = [report for report in seen if not report.stale(now)]
    totals, rates = _sum(r.totals for r in seen), _sum(r.rates for r in up)
    workers = f"{len(seen)} worker{'s' if len(seen) != 1 else ''}"
    if len(up) < len(seen):
        workers += f" ({len(seen) - len(up)} stale)"
    return (
        f"{workers}: {_int(totals.decided)} decisions sent{_split(totals.decisions, _int)}, "
        f"{_int(totals.dead)} dead letters; now {_rates(rates, split=False)}; {_backlog_clause(up)}"
    )


def _backlog_clause(up: list[StatusReport]) -> str:
    """What the workers that are up hold, added up."""
    backlog = [report.backlog for report in up]
    lags = [records for b in backlog for records in b.input_lag.values()]
    return f"{sum(b.pending_pages for b in backlog):,} pages pending" + (
        f"; input lag {sum(lags):,} records" if lags else ""
    )


def _rates(rates: Counts, *, split: bool = True) -> str:
    by_status = _split(rates.decisions, _rate) if split else ""
    return (
        f"{rates.decided:,.1f} decisions/s{by_status}, {rates.taken:,.1f} inputs/s, "
        f"{rates.dead:,.1f} dead letters/s"
    )


def _split(by: dict[str, float], show: Callable[[float], str]) -> str:
    """`` (600 unique, 14 no content)``: the labels with a count (statuses in the order of
    ``run``'s summary), or nothing."""
    order = sorted(by, key=lambda label: (STATUS_ORDER.get(label, len(STATUS_ORDER)), label))
    parts = [f"{show(by[label])} {label.replace('_', ' ')}" for label in order if by[label]]
    return f" ({', '.join(parts)})" if parts else ""


def _int(value: float) -> str:
    return f"{round(value):,}"


def _rate(value: float) -> str:
    return f"{value:,.1f}"


def _oldest(seconds: float) -> str:
    return f" (oldest {_duration(seconds)})" if seconds else ""


def _partition_lag(lag: dict[int, int]) -> str:
    if not lag:
        return "not reported (no input partition, or a worker that does not report it)"
    parts = ", ".join(f"{partition}: {records:,}" for partition, records in sorted(lag.items()))
    return f"{sum(lag.values()):,} records (by partition {parts}; fetched by the broker, not yet taken)"


def _assignment(held: Assignment) -> str:
    parts = [
        f"{role} {_ranges(getattr(held, role))}"
        for role in ("input", "queries", "sites", "decide")
        if getattr(held, role)
    ]
    return ", ".join(parts) or "none"


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2,5,7-8``."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = int(seconds // 60)
    if minutes < 120:
        return f"{minutes} min" + (f" {int(seconds % 60)} s" if int(seconds % 60) else "")
    return f"{minutes // 60} h {minutes % 60} min"


def _bytes(count: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"
