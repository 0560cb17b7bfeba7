"""The stream's settings: broker, topics, partitions, batching, order, workers."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SettingsError
from .declare import CLIENTS, STREAM, TOPICS, setting
from .values import (
    LogFormat,
    LogLevel,
    Order,
    as_choices,
    choice,
    parse_optional_float,
    parse_optional_int,
    where,
)

#: a report a second is as often as people read them; more often would only fill the status topic
MIN_STATUS_INTERVAL_S = 1.0


@dataclass(frozen=True)
class StreamSettings:
    """The Kafka stream: broker, topics, partitions, batching, order, workers."""

    broker: str = setting(
        "",
        str,
        "Kafka bootstrap servers, host:port[,host:port] (`stream-lsh broker` runs one on this machine)",
        CLIENTS,
        shown="required",
        help_for={"run": "Kafka bootstrap servers, host:port[,host:port] [empty: one started for the run]"},
    )
    app_id: str = setting(
        "stream-lsh", str, "consumer group, prefix of internal topics and state", (*TOPICS, "status")
    )
    input_topic: str = setting(
        "pages", str, "topic of input pages and retractions", (*TOPICS, "produce", "status")
    )
    queries_topic: str = setting("dedup-queries", str, "topic of query-only probes", TOPICS)
    decisions_topic: str = setting("dedup-decisions", str, "one decision per page, key = page id", TOPICS)
    clusters_topic: str = setting(
        "dedup-clusters", str, "latest state of each cluster, key = cluster id", TOPICS
    )
    alerts_topic: str = setting(
        "dedup-alerts",
        str,
        "story-spread alerts, key = cluster id @ level, once per level",
        TOPICS,
    )
    unique_topic: str = setting(
        "unique-pages",
        str,
        "the original page of every page judged unique or fuller than the page it joined",
        TOPICS,
    )
    answers_topic: str = setting(
        "dedup-answers", str, "answers to query-only probes, key = correlation id", TOPICS
    )
    dead_letters_topic: str = setting(
        "dedup-dead-letters", str, "inputs that could not be processed, with reason", TOPICS
    )
    input_partitions: int = setting(
        8, int, "partitions of the input and query topics (when created here)", TOPICS
    )
    site_partitions: int = setting(
        8, int, "partitions of the site stage (boilerplate learning, signing)", TOPICS
    )
    batch_size: int = setting(256, int, "most input messages per micro-batch", STREAM)
    batch_wait_ms: float = setting(
        10.0, float, "longest wait to fill a micro-batch of an internal stage, milliseconds", STREAM
    )
    ingest_wait_ms: float = setting(
        50.0, float, "longest wait to fill a micro-batch of input pages, milliseconds", STREAM
    )
    fetch_wait_ms: int = setting(
        10, int, "longest a worker's fetch waits for new records, milliseconds", STREAM
    )
    order: Order = setting(
        Order.CLOCK,
        choice(Order, "order"),
        "which copy of a story is first: clock (the earliest "
        "(clock, id): the record timestamp, whatever the interleaving of input partitions; "
        "'event-time' is the same) or arrival (the first to reach the index)",
        STREAM,
    )
    idle_ms: float = setting(
        200.0, float, "clock order: an input partition quiet this long holds no page back", STREAM
    )
    lateness_s: float = setting(
        0.0,
        float,
        "clock order: how far the record timestamps of one input partition may go backwards, seconds",
        STREAM,
    )
    pending_alert_s: float = setting(
        5.0,
        float,
        "a page undecided this long, on a wait that has not moved as "
        "long, is logged with what it waits for, seconds (keep it above the idle "
        "time)",
        STREAM,
    )
    stuck_after_s: float | None = setting(
        None,
        parse_optional_float,
        "/live fails when an agent makes no progress this long while records wait for it, seconds "
        "[the send timeout + 60, so that an outage the worker rides out is not a failure]",
        STREAM,
        shown="the send timeout + 60",
    )
    data_dir: str = setting(
        "stream-lsh-data", str, "worker state directory (RocksDB); one per worker", STREAM
    )
    web_port: int = setting(
        0, int, "port of the worker's web server (/metrics, /ready, /live); 0 = no web server", STREAM
    )
    web_bind: str = setting(
        "127.0.0.1",
        str,
        "address the web server listens on; 0.0.0.0 for a Prometheus on another host",
        STREAM,
    )
    replication_factor: int = setting(
        1, int, "replicas of every topic the app creates (3 on a production cluster)", TOPICS
    )
    min_insync_replicas: int | None = setting(
        None,
        parse_optional_int,
        "min.insync.replicas of the topics it creates [broker's]",
        TOPICS,
        shown="the broker's",
    )
    log_level: LogLevel = setting(LogLevel.WARNING, choice(LogLevel, "log level"), "worker log level", STREAM)
    log_format: LogFormat = setting(
        LogFormat.TEXT,
        choice(LogFormat, "log format"),
        "worker log lines: text, or json (one object a line)",
        STREAM,
    )
    standby_replicas: int = setting(
        1,
        int,
        "warm copies of each stage partition that other workers keep (Faust's standby replicas), so "
        "that one taking it over need not read its whole changelog; 0 saves their memory and disk",
        STREAM,
    )
    snapshot_mb: float = setting(
        16.0,
        float,
        "journal megabytes per stage partition before a state snapshot replaces them (for the "
        "decide partition: logged deltas before a checkpoint)",
        STREAM,
    )
    status_interval_s: float = setting(
        5.0,
        float,
        "how often each worker publishes its status report (stream-lsh status, run's live lines), "
        "seconds; 0 = never",
        STREAM,
    )

    def __post_init__(self) -> None:
        for name in (
            "input_partitions",
            "site_partitions",
            "batch_size",
            "fetch_wait_ms",
            "replication_factor",
        ):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be >= 1, got {getattr(self, name)} ({where(name)})")
        if (
            self.min_insync_replicas is not None
            and not 1 <= self.min_insync_replicas <= self.replication_factor
        ):
            raise SettingsError(
                f"min_insync_replicas must be between 1 and replication_factor "
                f"({self.replication_factor}), got {self.min_insync_replicas} "
                f"({where('min_insync_replicas')})"
            )
        for name in ("snapshot_mb", "idle_ms", "pending_alert_s"):
            if not getattr(self, name) > 0:
                raise SettingsError(f"{name} must be positive, got {getattr(self, name)} ({where(name)})")
        if self.stuck_after_s is not None and not self.stuck_after_s > 0:
            raise SettingsError(
                f"stuck_after_s must be positive, got {self.stuck_after_s} ({where('stuck_after_s')})"
            )
        for name in ("batch_wait_ms", "ingest_wait_ms", "lateness_s", "standby_replicas"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name} must be >= 0, got {getattr(self, name)} ({where(name)})")
        if self.status_interval_s != 0 and not self.status_interval_s >= MIN_STATUS_INTERVAL_S:
            raise SettingsError(
                f"status_interval_s must be 0 (no reports) or at least {MIN_STATUS_INTERVAL_S:g}, got "
                f"{self.status_interval_s} ({where('status_interval_s')})"
            )
        if not self.app_id or not all(c.isalnum() or c in "-_." for c in self.app_id):
            raise SettingsError(
                f"app_id must be letters, digits, '-', '_' or '.', got {self.app_id!r} ({where('app_id')})"
            )
        as_choices(self, order=Order, log_level=LogLevel, log_format=LogFormat)
