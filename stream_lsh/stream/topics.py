"""Topic names and shapes, all derived from the one settings object."""

from __future__ import annotations

from dataclasses import dataclass

from ..pipeline.outbox import Stage
from ..pipeline.routing import Layout
from ..settings import Settings

__all__ = [
    "CLOCK_HEADER",
    "STATUS_TOPIC_CONFIG",
    "TopicNames",
    "TopicSpec",
    "clock_of_message",
    "header_value",
    "layout_of",
    "state_table",
    "topic_specs",
]

CLOCK_HEADER = "stream-lsh-clock"
"""Record header with a page's clock (ms, decimal ASCII), as ``produce`` and ``run --feed`` write it.

The clock travels in a header, not in the record timestamp, because Apache Kafka acts on record
timestamps: time-based retention deletes records stamped older than ``retention.ms`` within one
retention check (an archive replayed with its own dates vanished before the workers read it), and
Kafka 4 refuses records stamped more than ``message.timestamp.after.max.ms`` (1 h) ahead. Records
of other producers, without the header, are clocked by their timestamp."""


def header_value(headers: object, name: str) -> bytes | None:
    """The value of a record's first non-empty header called ``name``, if it has one. ``headers``
    as Kafka clients give them: (key, value) pairs, or a mapping."""
    pairs = headers.items() if isinstance(headers, dict) else (headers or ())
    for key, value in pairs:  # type: ignore[attr-defined]  # headers is either form
        if key == name and value:
            return value  # type: ignore[no-any-return]
    return None


def clock_of_message(timestamp_ms: int, headers: object) -> int:
    """The clock of an input record: its :data:`CLOCK_HEADER` if it has a readable one, else its
    timestamp (unreadable: the timestamp, as for a record without the header)."""
    value = header_value(headers, CLOCK_HEADER)
    if value is not None:
        try:
            return int(value)
        except ValueError:
            pass
    return timestamp_ms


#: The status topic holds each worker's latest report (compacted, keyed by worker) and, for a day,
#: the reports before it (`stream-lsh status --since` looks back that far at most). Segments roll
#: hourly: retention and compaction only ever act on segments that have rolled, and at one report
#: per worker every few seconds the default week-long segment would hold everything.
STATUS_TOPIC_CONFIG = {
    "cleanup.policy": "compact,delete",
    "retention.ms": str(24 * 3600 * 1000),
    "segment.ms": str(3600 * 1000),
}


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]
    replication: int = 1


@dataclass(frozen=True)
class TopicNames:
    """Every topic the app reads or writes."""

    input: str
    queries: str
    decisions: str
    clusters: str
    alerts: str
    unique: str
    answers: str
    dead_letters: str
    sites: str
    decide: str
    guard: str
    status: str  # the workers' status reports (stream_lsh.stream.status)
    app_id: str

    @classmethod
    def from_settings(cls, settings: Settings) -> TopicNames:
        prefix = settings.stream.app_id
        return cls(
            input=settings.stream.input_topic,
            queries=settings.stream.queries_topic,
            decisions=settings.stream.decisions_topic,
            clusters=settings.stream.clusters_topic,
            alerts=settings.stream.alerts_topic,
            unique=settings.stream.unique_topic,
            answers=settings.stream.answers_topic,
            dead_letters=settings.stream.dead_letters_topic,
            sites=f"{prefix}-{Stage.SITES}",
            decide=f"{prefix}-{Stage.DECIDE}",
            guard=f"{prefix}-guard",
            status=f"{prefix}-status",
            app_id=prefix,
        )

    def changelog(self, stage: str) -> str:
        """The changelog topic of a stage's state table (Faust's naming: ``<app>-<table>-changelog``)."""
        return f"{self.app_id}-{state_table(stage)}-changelog"

    def internal(self, stage: str) -> str:
        return {Stage.SITES: self.sites, Stage.DECIDE: self.decide}[stage]


def state_table(stage: str) -> str:
    """Name of the Faust table that holds a stage's state (stream_lsh.stream.state)."""
    return f"{stage}-state"


def layout_of(settings: Settings) -> Layout:
    return Layout(sites=settings.stream.site_partitions)


def topic_specs(settings: Settings) -> list[TopicSpec]:
    """Every topic the app uses, to create when missing. Outputs keyed by id are compacted: a consumer that
    reads one from the start sees the latest record per key (the idempotence of re-emitted
    decisions relies on it)."""
    names = TopicNames.from_settings(settings)
    compact = {"cleanup.policy": "compact"}
    inputs = settings.stream.input_partitions
    layout = layout_of(settings)
    changelogs = [TopicSpec(names.changelog(stage), layout.partitions(stage), compact) for stage in Stage.ALL]
    specs = [
        TopicSpec(names.input, inputs, {}),
        TopicSpec(names.queries, inputs, {}),
        TopicSpec(names.decisions, inputs, compact),
        TopicSpec(names.clusters, inputs, compact),
        TopicSpec(names.alerts, inputs, compact),  # key: cluster_id@level, one record each
        TopicSpec(names.unique, inputs, compact),  # whole pages
        TopicSpec(names.answers, inputs, compact),
        TopicSpec(names.dead_letters, inputs, {}),
        *(TopicSpec(names.internal(stage), layout.partitions(stage), {}) for stage in Stage.ALL),
        *changelogs,
        TopicSpec(names.guard, 1, compact),
        TopicSpec(names.status, 1, STATUS_TOPIC_CONFIG),
        # Faust's leader election (faust/assignor/leader_assignor.py); the app does not let Faust
        # create topics, and brokers should not auto-create them with their own partition count
        TopicSpec(f"{settings.stream.app_id}-__assignor-__leader", 1, {}),
    ]
    # every topic takes the largest record the app writes (stream_lsh.pipeline.limits), and no larger
    extra = {"max.message.bytes": str(settings.kafka.max_message_bytes)}
    if settings.stream.min_insync_replicas is not None:
        extra["min.insync.replicas"] = str(settings.stream.min_insync_replicas)
    return [
        TopicSpec(spec.name, spec.partitions, {**spec.config, **extra}, settings.stream.replication_factor)
        for spec in specs
    ]
