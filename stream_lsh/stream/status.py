"""A worker's status report: who it is, which partitions it holds, what it has done and how fast,
and what it holds now. Each worker publishes one every ``STREAM_LSH_STATUS_INTERVAL_S`` to
``<app_id>-status``, keyed by its name, for ``stream-lsh status`` and ``stream-lsh run``'s live lines.

The numbers are read from the worker's metrics registry (:class:`~.metrics.WorkerMetrics`) when
the report is built, so they are the numbers its ``/metrics`` serves: there is no second set of
counters that could disagree with Prometheus. A report is complete on its own: the counters' totals
since the worker started, their rates over the interval since its previous report (the worker
keeps the previous totals), and the gauges. A reader therefore needs only each worker's latest
report, which is what the compacted status topic keeps.

Publishing is best effort. The report has its own timer, so it never stands in a batch's way; a
send that fails or does not finish within the interval is logged and given up, and the worker
goes on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import orjson
from prometheus_client import CollectorRegistry

from ..settings import Settings
from .logs import worker_name
from .metrics import WorkerMetrics
from .topics import TopicNames

__all__ = [
    "STALE_AFTER_INTERVALS",
    "STATUS_VERSION",
    "Assignment",
    "Backlog",
    "Counts",
    "Health",
    "StatusPublisher",
    "StatusReport",
    "StatusReporter",
]

log = logging.getLogger(__name__)

#: The report's format. A reader refuses other versions (it cannot know what they mean); fields
#: added later get defaults, so adding one does not need a new version.
STATUS_VERSION = 2  # 2: one decide partition (no band partitions or homes, no held probes)
#: A worker with no report for this many of its own intervals is stale: stopped, hung, or cut off.
STALE_AFTER_INTERVALS = 3


@dataclass(frozen=True)
class Assignment:
    """The partitions a worker holds of each topic its agents read."""

    input: list[int] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    sites: list[int] = field(default_factory=list)
    decide: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, assigned: Iterable[Any], names: TopicNames) -> Assignment:
        """From a consumer's assignment (topic-partitions; other topics, e.g. changelogs, left out)."""
        roles = {
            names.input: "input",
            names.queries: "queries",
            names.sites: "sites",
            names.decide: "decide",
        }
        held: dict[str, list[int]] = {role: [] for role in roles.values()}
        for tp in assigned:
            if tp.topic in roles:
                held[roles[tp.topic]].append(tp.partition)
        return cls(**{role: sorted(partitions) for role, partitions in held.items()})


@dataclass(frozen=True)
class Counts:
    """A worker's counters: totals since it started, or per second over an interval."""

    decisions: dict[str, float] = field(default_factory=dict)  # by status
    dead_letters: dict[str, float] = field(default_factory=dict)  # by reason
    inputs: dict[str, float] = field(default_factory=dict)  # by kind: page, retraction, query
    answers: float = 0
    unique_pages: float = 0
    stuck_pages: float = 0  # reported by the pending guard

    @property
    def decided(self) -> float:
        return sum(self.decisions.values())

    @property
    def dead(self) -> float:
        return sum(self.dead_letters.values())

    @property
    def taken(self) -> float:
        return sum(self.inputs.values())

    def per_second(self, earlier: Counts, seconds: float) -> Counts:
        """The rates from ``earlier`` totals to these over ``seconds``."""
        return _combine(self, earlier, lambda now, then: round((now - then) / seconds, 3))

    def plus(self, other: Counts) -> Counts:
        return _combine(self, other, lambda a, b: a + b)


def _combine(a: Counts, b: Counts, op: Callable[[float, float], float]) -> Counts:
    values: dict[str, Any] = {}
    for spec in fields(Counts):
        x, y = getattr(a, spec.name), getattr(b, spec.name)
        if isinstance(x, dict):
            values[spec.name] = {key: op(x.get(key, 0), y.get(key, 0)) for key in sorted({*x, *y})}
        else:
            values[spec.name] = op(x, y)
    return Counts(**values)


@dataclass(frozen=True)
class Backlog:
    """What a worker holds now (its gauges), summed over its stage partitions."""

    pending_pages: int = 0  # not yet decided, held for clock order (site and decide partitions)
    pending_oldest_s: float = 0.0
    input_lag: dict[int, int] = field(default_factory=dict)  # input partition -> records not yet taken
    window_pages: int = 0  # pages in its decide partition's window
    state_bytes: int = 0  # its stage partitions' durable rows
    # the record clock (ms) before which every alert is out; None: not known (or not the decider)
    alerts_frontier_ms: float | None = None


@dataclass(frozen=True)
class Health:
    ready: bool = False  # assigned, recovered and fetching (as /ready)
    live: bool = True  # no agent stuck with input waiting (as /live)
    recovering: bool = False
    recovery_remaining: int = 0  # changelog records still to replay
    loop_lag_s: float = 0.0


@dataclass(frozen=True)
class StatusReport:
    """One worker at one moment. Times are wall-clock seconds since the epoch."""

    worker: str  # host:pid, as its log lines name it
    app_id: str
    software: str  # the stream-lsh version it runs
    sent_at: float
    started_at: float
    interval_s: float  # how often it reports
    rates_over_s: float  # the seconds ``rates`` span: since its previous report
    partitions: Assignment
    totals: Counts
    rates: Counts
    backlog: Backlog
    health: Health
    version: int = STATUS_VERSION

    def stale(self, now: float) -> bool:
        """No report for :data:`STALE_AFTER_INTERVALS` intervals by ``now`` (the reader's clock,
        taken to agree with the worker's within a few seconds, as NTP keeps them)."""
        return now - self.sent_at > STALE_AFTER_INTERVALS * self.interval_s

    def to_json(self) -> bytes:
        return orjson.dumps(self, option=orjson.OPT_NON_STR_KEYS)

    @classmethod
    def from_json(cls, raw: bytes) -> StatusReport:
        """A report from its record; ValueError for one that is not a report of this version."""
        try:
            data = orjson.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            if data.get("version") != STATUS_VERSION:
                raise ValueError(f"version {data.get('version')!r}, this stream-lsh reads {STATUS_VERSION}")
            return cls(
                worker=str(data["worker"]),
                app_id=str(data["app_id"]),
                software=str(data["software"]),
                sent_at=_number(data["sent_at"]),
                started_at=_number(data["started_at"]),
                interval_s=_number(data["interval_s"]),
                rates_over_s=_number(data["rates_over_s"]),
                partitions=Assignment(
                    **{k: [int(p) for p in v] for k, v in _known(Assignment, data["partitions"])}
                ),
                totals=_counts(data["totals"]),
                rates=_counts(data["rates"]),
                backlog=_backlog(data["backlog"]),
                health=Health(**dict(_known(Health, data["health"]))),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as error:
            raise ValueError(f"not a status report: {error!r}") from None


def _known(kind: type, data: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    """The fields of ``data`` that ``kind`` has: a newer writer's added fields are left out."""
    names = {spec.name for spec in fields(kind)}
    return [(name, value) for name, value in data.items() if name in names]


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"not a number: {value!r}")
    return value


def _counts(data: dict[str, Any]) -> Counts:
    def by_label(name: str) -> dict[str, float]:
        return {str(label): _number(value) for label, value in data.get(name, {}).items()}

    return Counts(
        decisions=by_label("decisions"),
        dead_letters=by_label("dead_letters"),
        inputs=by_label("inputs"),
        answers=_number(data.get("answers", 0)),
        unique_pages=_number(data.get("unique_pages", 0)),
        stuck_pages=_number(data.get("stuck_pages", 0)),
    )


def _backlog(data: dict[str, Any]) -> Backlog:
    values = dict(_known(Backlog, data))
    lag = {int(partition): int(records) for partition, records in values.pop("input_lag", {}).items()}
    return Backlog(input_lag=lag, **values)


# -- building reports from a registry ----------------------------------------------------------
Samples = dict[str, list[tuple[dict[str, str], float]]]  # sample name -> (labels, value) of each


def _samples(registry: CollectorRegistry) -> Samples:
    """Every sample the registry has now (its gauges are read from the app at this call)."""
    found: Samples = {}
    for family in registry.collect():
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def _total(samples: Samples, name: str) -> int:
    return round(sum(value for _, value in samples.get(name, ())))


def _by(samples: Samples, name: str, label: str) -> dict[str, float]:
    return {labels[label]: round(value) for labels, value in samples.get(name, ())}


def _oldest(samples: Samples, name: str) -> float:
    return round(max((value for _, value in samples.get(name, ())), default=0.0), 3)


def counts_of(samples: Samples) -> Counts:
    return Counts(
        decisions=_by(samples, "stream_lsh_decisions_total", "status"),
        dead_letters=_by(samples, "stream_lsh_dead_letters_total", "reason"),
        inputs=_by(samples, "stream_lsh_inputs_total", "kind"),
        answers=_total(samples, "stream_lsh_answers_total"),
        unique_pages=_total(samples, "stream_lsh_unique_pages_total"),
        stuck_pages=_total(samples, "stream_lsh_stuck_pages_total"),
    )


def backlog_of(samples: Samples) -> Backlog:
    window = [
        value for labels, value in samples.get("stream_lsh_window_pages", ()) if labels["stage"] == "decide"
    ]
    return Backlog(
        pending_pages=_total(samples, "stream_lsh_pending_pages"),
        pending_oldest_s=_oldest(samples, "stream_lsh_pending_oldest_seconds"),
        input_lag={
            int(labels["partition"]): round(value)
            for labels, value in samples.get("stream_lsh_input_lag_records", ())
        },
        window_pages=round(sum(window)),
        state_bytes=_total(samples, "stream_lsh_state_bytes"),
        alerts_frontier_ms=_earliest_ms(samples, "stream_lsh_alerts_frontier_seconds"),
    )


def _earliest_ms(samples: Samples, name: str) -> float | None:
    values = [value for _, value in samples.get(name, ())]
    return round(min(values) * 1000, 1) if values else None


def health_of(samples: Samples) -> Health:
    def value(name: str) -> float:
        return sum(v for _, v in samples.get(f"stream_lsh_{name}", ()))

    return Health(
        ready=value("ready") == 1,
        live=value("live") == 1,
        recovering=value("recovering") == 1,
        recovery_remaining=round(value("recovery_remaining_records")),
        loop_lag_s=round(value("event_loop_lag_seconds"), 3),
    )


@functools.lru_cache(maxsize=1)
def software_version() -> str:
    try:
        return version("stream-lsh")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


class StatusReporter:
    """The successive reports of one worker, each with its rates since the one before."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        worker: str,
        app_id: str,
        interval_s: float,
        started_at: float | None = None,
    ) -> None:
        self.registry, self.worker, self.app_id, self.interval_s = registry, worker, app_id, interval_s
        self.started_at = time.time() if started_at is None else started_at
        self._previous, self._previous_at = Counts(), self.started_at  # counters start at 0 with the worker

    def report(self, partitions: Assignment, now: float | None = None) -> StatusReport:
        """The report of now; the next one's rates start here (sent or not: rates always cover
        the interval before the report that carries them)."""
        now = time.time() if now is None else now
        samples = _samples(self.registry)
        totals = counts_of(samples)
        over = max(now - self._previous_at, 0.001)
        rates = totals.per_second(self._previous, over)
        self._previous, self._previous_at = totals, now
        return StatusReport(
            worker=self.worker,
            app_id=self.app_id,
            software=software_version(),
            sent_at=round(now, 3),
            started_at=round(self.started_at, 3),
            interval_s=self.interval_s,
            rates_over_s=round(over, 3),
            partitions=partitions,
            totals=totals,
            rates=rates,
            backlog=backlog_of(samples),
            health=health_of(samples),
        )


class StatusPublisher:
    """What a worker's status timer calls: build the report, send it, and never raise.

    The send waits at most one interval (the next report is due then). A failure is logged once,
    and again when reports get through, not at every interval of an outage."""

    def __init__(self, settings: Settings, metrics: WorkerMetrics) -> None:
        self.names = TopicNames.from_settings(settings)
        self.interval_s = settings.stream.status_interval_s
        self.reporter = StatusReporter(
            metrics.registry, worker=worker_name(), app_id=settings.stream.app_id, interval_s=self.interval_s
        )
        self.failing = False

    async def publish(self, app: Any) -> StatusReport | None:
        """Send the report of now with the Faust ``app``'s producer; the report, or None if it
        was not sent."""
        try:
            report = self.reporter.report(self._assignment(app))
            await asyncio.wait_for(self._send(app.producer, report), self.interval_s)
        except Exception as error:  # whatever it is, the worker goes on
            if not self.failing:
                log.warning(
                    "status report not sent to %s (%s); trying again every %g s",
                    self.names.status,
                    repr(error),
                    self.interval_s,
                )
            self.failing = True
            return None
        if self.failing:
            log.warning("status reports are sent to %s again", self.names.status)
            self.failing = False
        return report

    def _assignment(self, app: Any) -> Assignment:
        try:
            return Assignment.of(app.consumer.assignment(), self.names)
        except Exception:  # no consumer yet (starting): no partitions
            return Assignment()

    async def _send(self, producer: Any, report: StatusReport) -> None:
        key = report.worker.encode("utf-8")
        sent = await producer.send(self.names.status, key, report.to_json(), None, None, None)
        await sent
