"""One settings object for every command: defaults, then ``STREAM_LSH_*`` environment variables,
then command-line flags; validated once, at start-up, with messages that name the variable or flag.

The object is nested (the engine's knobs, how input is read, the stream, how clients reach Kafka),
the names are flat:
``settings.stream.band_partitions`` is ``STREAM_LSH_BAND_PARTITIONS`` and ``--band-partitions``.
The engine's defaults are :class:`~stream_lsh.core.config.DedupConfig`'s, read from it.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from .core.clock import EARLIEST_DATE, FileClock
from .core.config import DedupConfig, Verify
from .core.dates import read_date
from .core.record import DEFAULT_MAX_PAGE_BYTES
from .core.shingles import ShingleKind, ShingleSpec
from .core.spread import AlertRules
from .errors import SettingsError

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ENV_PREFIX",
    "EXPLICIT_NONE",
    "Compression",
    "EngineSettings",
    "InputSettings",
    "KafkaSettings",
    "LogFormat",
    "LogLevel",
    "Order",
    "SaslMechanism",
    "Secret",
    "SecurityProtocol",
    "Settings",
    "SettingsError",
    "StreamSettings",
]

ENV_PREFIX = "STREAM_LSH_"
#: An override meaning "this setting is None" (``--containment none``), where None means "not given".
EXPLICIT_NONE: Any = type("ExplicitNone", (), {"__repr__": lambda self: "EXPLICIT_NONE"})()
#: Variables of the prefix that are not settings: the Apache Kafka jar cache (stream/brokers), the
#: real-prose cache (synthetic/real_prose), and the test suite's own (``STREAM_LSH_TEST_*``),
#: which its worker processes inherit.
OTHER_VARIABLES = frozenset({"STREAM_LSH_KAFKA_CACHE", "STREAM_LSH_PROSE_CACHE"})
TEST_VARIABLES_PREFIX = "STREAM_LSH_TEST_"


def _refuse_unknown_variables(environ: Mapping[str, str], settings: set[str]) -> None:
    """A misspelled variable would otherwise be ignored in silence, and the default used instead
    of what the operator meant: refuse it, naming the closest valid one."""
    known = settings | OTHER_VARIABLES
    unknown = sorted(
        name
        for name in environ
        if name.startswith(ENV_PREFIX) and name not in known and not name.startswith(TEST_VARIABLES_PREFIX)
    )
    if unknown:
        suffixes = sorted(valid[len(ENV_PREFIX) :] for valid in known)  # the prefix would match anything
        hints = []
        for name in unknown:
            suffix = name[len(ENV_PREFIX) :]
            close = (
                [valid for valid in suffixes if valid.startswith(suffix + "_")]  # TTL: TTL_HOURS
                or difflib.get_close_matches(suffix, suffixes, n=1, cutoff=0.6)
            )
            hints.append(f"{name} (did you mean {ENV_PREFIX}{close[0]}?)" if close else name)
        raise SettingsError(
            f"unknown environment variable{'s' if len(unknown) > 1 else ''}: "
            f"{', '.join(hints)}. Unset it, or see `stream-lsh --help` and the README's "
            "docs/settings.md for valid names"
        )


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true/false, got {text!r}")


def _languages(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _optional_int(text: str) -> int | None:
    return None if text.strip().lower() in ("", "none", "auto") else int(text)


def _optional_float(text: str) -> float | None:
    return None if text.strip().lower() in ("", "none", "forever") else float(text)


#: The commands whose flags a setting is, by kind (its ``STREAM_LSH_*`` variable applies to every
#: command): the engine's knobs, how a file of pages is read, the clients of Kafka, the stream.
ENGINE = ("dedup", "eval", "run", "worker")
FILES = ("dedup", "eval", "run", "produce")
CLIENTS = ("run", "worker", "topics", "produce", "tail", "status")
STREAM = ("run", "worker")
TOPICS = ("run", "worker", "topics")
COMMANDS = ("dedup", "eval", "tune", "run", "worker", "topics", "produce", "tail", "status")


def _setting(
    default: Any,
    parse: Callable[[str], Any],
    help: str,
    commands: tuple[str, ...],
    *,
    shown: str | None = None,
    switch: str | None = None,
    flag: bool = True,
    help_for: Mapping[str, str] | None = None,
    engine: Callable[[Any], dict[str, Any]] | None = None,
) -> Any:
    """The one declaration of a setting; its name is the field's. From it come its
    ``STREAM_LSH_<NAME>`` variable, its ``--<name>`` flag on each of ``commands`` (none with
    ``flag`` False: a secret must not sit on a command line), its row in docs/settings.md and,
    for the engine's knobs, the :class:`DedupConfig` field of the same name (``engine``: the fields
    it becomes instead, from the settings group).

    Args:
        shown: the default as help shows it, when its value says too little ("chosen from ...").
        switch: the off form of a boolean flag (``no-boilerplate``); default ``no-<name>``.
        help_for: the help on some commands, where the setting means more there.
    """
    unknown = set(commands) - set(COMMANDS)
    assert not unknown, f"unknown commands {unknown}"
    return field(
        default=default,
        metadata={
            "parse": parse,
            "help": help,
            "commands": commands,
            "shown": shown,
            "switch": switch,
            "flag": flag,
            "help_for": dict(help_for or {}),
            "engine": engine,
        },
    )


class Order(str, Enum):
    """Which copy of a story is first."""

    CLOCK = "clock"  # the earliest (clock, id), whatever the interleaving of input partitions
    ARRIVAL = "arrival"  # the first to reach the index

    @classmethod
    def parse(cls, text: str) -> Order:
        text = text.strip().lower()
        return cls.CLOCK if text == "event-time" else cls(text)  # its name until clocks replaced dates


_Lower = TypeVar("_Lower", bound="_LowerCaseChoice")


class _LowerCaseChoice(str, Enum):
    """A setting of fixed lower-case values, read whatever the case the user wrote."""

    @classmethod
    def parse(cls: type[_Lower], text: str) -> _Lower:
        return cls(text.strip().lower())


class LogFormat(_LowerCaseChoice):
    TEXT = "text"  # for people: time, level, logger, message
    JSON = "json"  # one JSON object per line, for a log pipeline (stream_lsh.stream.logs)


class LogLevel(_LowerCaseChoice):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


def _choice(kind: type[Enum], what: str) -> Callable[[str], Any]:
    """A parser for a fixed set of values whose error names them."""
    parse = getattr(kind, "parse", kind)

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError:
            choices = ", ".join(str(member.value) for member in kind)
            raise ValueError(f"unknown {what} {text!r}; choose one of {choices}") from None

    return parsed


def _as_choices(settings: Any, **kinds: type[Enum]) -> None:
    """Settings of a fixed set of values given as text (from Python, not the environment) become
    their enum members, or a SettingsError that lists the choices."""
    for name, kind in kinds.items():
        value = getattr(settings, name)
        if not isinstance(value, kind):
            try:
                object.__setattr__(settings, name, _choice(kind, name.replace("_", " "))(str(value)))
            except ValueError as error:
                raise SettingsError(f"{name}: {error} ({_where(name)})") from None


#: a report a second is as often as people read them; more often would only fill the status topic
MIN_STATUS_INTERVAL_S = 1.0
_ENGINE = DedupConfig()  # the engine's defaults: the one source of them (the CLI's help reads them from here)
_HOUR = 3600.0


@dataclass(frozen=True)
class EngineSettings:
    """The kernel's knobs (:class:`~stream_lsh.core.config.DedupConfig`), as operators give them."""

    threshold: float = _setting(
        _ENGINE.threshold, float, "Jaccard similarity from which a page is a duplicate", (*ENGINE, "tune")
    )
    containment: float | None = _setting(
        _ENGINE.containment,
        _optional_float,
        "containment (share of the smaller page found in the larger) from which a page is a "
        "duplicate; none: Jaccard similarity alone",
        (*ENGINE, "tune"),
    )
    num_perm: int = _setting(_ENGINE.num_perm, int, "minhash signature length n", (*ENGINE, "tune"))
    seed: int = _setting(_ENGINE.seed, int, "seed of token hashing and minhash functions", ENGINE)
    shingles: ShingleKind = _setting(
        _ENGINE.shingles.kind,
        _choice(ShingleKind, "shingle kind"),
        "shingle kind",
        ENGINE,
        engine=lambda s: {"shingles": ShingleSpec(s.shingles, s.shingle_size)},
    )
    shingle_size: int | None = _setting(
        None,
        _optional_int,
        "shingle length k",
        ENGINE,
        shown="3; 9 for char",
        engine=lambda s: {},
    )
    lead_share: float = _setting(
        _ENGINE.lead_share,
        float,
        "share of a page's shingles, from where its article begins, that count three times (its "
        "lead: copies share it, a page quoting another does not); 0 ignores position",
        ENGINE,
    )
    languages: tuple[str, ...] = _setting(
        _ENGINE.languages, _languages, "stop-word languages, comma-separated", ENGINE
    )
    bands: int | None = _setting(
        _ENGINE.bands,
        _optional_int,
        "LSH bands b",
        (*ENGINE, "tune"),
        shown="chosen from the threshold",
    )
    rows: int | None = _setting(
        _ENGINE.rows,
        _optional_int,
        "rows per band r",
        (*ENGINE, "tune"),
        shown="chosen from the threshold",
    )
    fp_weight: float = _setting(
        _ENGINE.fp_weight, float, "weight of false positives when choosing (b, r)", (*ENGINE, "tune")
    )
    fn_weight: float = _setting(
        _ENGINE.fn_weight, float, "weight of false negatives when choosing (b, r)", (*ENGINE, "tune")
    )
    verify: Verify = _setting(_ENGINE.verify, _choice(Verify, "candidate check"), "candidate check", ENGINE)
    min_shingles: int = _setting(
        _ENGINE.min_shingles, int, "pages with fewer shingles are no_content", ENGINE
    )
    bucket_cap: int = _setting(_ENGINE.bucket_cap, int, "most pages kept per LSH bucket", ENGINE)
    ttl_hours: float = _setting(
        (_ENGINE.ttl or 0.0) / _HOUR,
        float,
        "how long a page stays indexed after its event time, by the clock; 0 = forever",
        ENGINE,
        engine=lambda s: {"ttl": s.ttl_hours * _HOUR if s.ttl_hours > 0 else None},
    )
    boilerplate: bool = _setting(
        _ENGINE.boilerplate, _bool, "learn and drop site-wide boilerplate", ENGINE, switch="no-boilerplate"
    )
    boilerplate_min_pages: int = _setting(
        _ENGINE.boilerplate_min_pages,
        int,
        "pages of a site with different content that make a block boilerplate",
        ENGINE,
    )
    drop_chrome: bool = _setting(
        _ENGINE.drop_chrome,
        _bool,
        "drop nav/aside/footer/form of HTML pages, and lists of headlines",
        ENGINE,
        switch="keep-chrome",
    )
    max_future_hours: float = _setting(
        _ENGINE.max_future / _HOUR,
        float,
        "a published_at more than this many hours after the page's clock is "
        "ignored (a wrong year, a time-zone bug)",
        (*ENGINE, "produce"),
        engine=lambda s: {"max_future": s.max_future_hours * _HOUR},
    )
    alert_levels: str = _setting(
        "3,10,30",
        str,
        "story-spread alert levels: N (N pages from N distinct sources) or PAGES:SOURCES, comma-separated",
        ("dedup", "run", "worker"),
    )
    alert_within_hours: float = _setting(
        6.0,
        float,
        "hours of event time within which an alert level's pages must fall",
        ("dedup", "run", "worker"),
    )

    def __post_init__(self) -> None:
        if self.ttl_hours < 0:
            raise SettingsError(f"ttl_hours must be >= 0, got {self.ttl_hours} ({_where('ttl_hours')})")
        if self.max_future_hours < 0:
            raise SettingsError(
                f"max_future_hours must be >= 0, got {self.max_future_hours} ({_where('max_future_hours')})"
            )
        try:
            self.config()
        except ValueError as error:
            raise SettingsError(f"invalid settings: {error}") from None
        if not (math.isfinite(self.alert_within_hours) and self.alert_within_hours > 0):
            raise SettingsError(
                f"alert_within_hours must be positive hours, got {self.alert_within_hours} "
                f"({_where('alert_within_hours')})"
            )
        try:
            self.alert_rules()
        except ValueError as error:
            raise SettingsError(f"alert_levels: {error} ({_where('alert_levels')})") from None

    def alert_rules(self) -> AlertRules:
        """The story-spread alert rules (:mod:`stream_lsh.core.spread`)."""
        return AlertRules.parse(self.alert_levels, self.alert_within_hours)

    def config(self) -> DedupConfig:
        """The engine's config: each setting named as a :class:`DedupConfig` field is that field,
        those declared with ``engine`` become the fields it gives, the rest are not the engine's."""
        knobs = {spec.name for spec in fields(DedupConfig)}
        values: dict[str, Any] = {}
        for spec in fields(self):
            convert = spec.metadata["engine"]
            if convert is not None:
                values.update(convert(self))
            elif spec.name in knobs:
                values[spec.name] = getattr(self, spec.name)
        return DedupConfig(**values)


@dataclass(frozen=True)
class InputSettings:
    """How input records are read, in batch and stream alike."""

    max_page_bytes: int = _setting(
        DEFAULT_MAX_PAGE_BYTES, int, "larger input records are rejected", (*ENGINE, "produce")
    )
    now: str = _setting(
        "",
        str,
        "the clock of every page of a file (ISO 8601); empty: the file's own clock, from its dates",
        FILES,
        shown="the file's own clock, from its dates",
    )

    def __post_init__(self) -> None:
        if self.max_page_bytes < 1:
            raise SettingsError(
                f"max_page_bytes must be positive, got {self.max_page_bytes} ({_where('max_page_bytes')})"
            )
        self.now_ms()  # validates it

    def now_ms(self) -> int | None:
        """``now`` as a clock reading, None when not set."""
        if not self.now.strip():
            return None
        reading = read_date(self.now)
        if reading.seconds is None or reading.seconds < EARLIEST_DATE:
            raise SettingsError(
                f"now must be a date from 1990 on (ISO 8601, e.g. 2026-11-24T10:00:00Z), got "
                f"{self.now!r} ({_where('now')})"
            )
        return int(reading.seconds * 1000)


@dataclass(frozen=True)
class StreamSettings:
    """The Kafka stream: broker, topics, partitions, batching, order, workers."""

    broker: str = _setting(
        "",
        str,
        "Kafka bootstrap servers, host:port[,host:port] (`stream-lsh broker` runs one on this machine)",
        CLIENTS,
        shown="required",
        help_for={"run": "Kafka bootstrap servers, host:port[,host:port] [empty: one started for the run]"},
    )
    app_id: str = _setting(
        "stream-lsh", str, "consumer group, prefix of internal topics and state", (*TOPICS, "status")
    )
    input_topic: str = _setting(
        "pages", str, "topic of input pages and retractions", (*TOPICS, "produce", "status")
    )
    queries_topic: str = _setting("dedup-queries", str, "topic of query-only probes", TOPICS)
    decisions_topic: str = _setting("dedup-decisions", str, "one decision per page, key = page id", TOPICS)
    clusters_topic: str = _setting(
        "dedup-clusters", str, "latest state of each cluster, key = cluster id", TOPICS
    )
    alerts_topic: str = _setting(
        "dedup-alerts",
        str,
        "story-spread alerts, key = cluster id @ level, once per level",
        TOPICS,
    )
    unique_topic: str = _setting("unique-pages", str, "the original page of every page judged unique", TOPICS)
    answers_topic: str = _setting(
        "dedup-answers", str, "answers to query-only probes, key = correlation id", TOPICS
    )
    dead_letters_topic: str = _setting(
        "dedup-dead-letters", str, "inputs that could not be processed, with reason", TOPICS
    )
    input_partitions: int = _setting(
        8, int, "partitions of the input and query topics (when created here)", TOPICS
    )
    site_partitions: int = _setting(
        8, int, "partitions of the site stage (boilerplate learning, signing)", TOPICS
    )
    band_partitions: int = _setting(8, int, "partitions of the band tables", TOPICS)
    home_partitions: int = _setting(8, int, "partitions of page state (gather and decision)", TOPICS)
    batch_size: int = _setting(256, int, "most input messages per micro-batch", STREAM)
    batch_wait_ms: float = _setting(
        10.0, float, "longest wait to fill a micro-batch of an internal stage, milliseconds", STREAM
    )
    ingest_wait_ms: float = _setting(
        50.0, float, "longest wait to fill a micro-batch of input pages, milliseconds", STREAM
    )
    fetch_wait_ms: int = _setting(
        10, int, "longest a worker's fetch waits for new records, milliseconds", STREAM
    )
    order: Order = _setting(
        Order.CLOCK,
        _choice(Order, "order"),
        "which copy of a story is first: clock (the earliest "
        "(clock, id): the record timestamp, whatever the interleaving of input partitions; "
        "'event-time' is the same) or arrival (the first to reach the index)",
        STREAM,
    )
    idle_ms: float = _setting(
        200.0, float, "clock order: an input partition quiet this long holds no page back", STREAM
    )
    lateness_s: float = _setting(
        0.0,
        float,
        "clock order: how far the record timestamps of one input partition may go backwards, seconds",
        STREAM,
    )
    pending_alert_s: float = _setting(
        5.0,
        float,
        "a page undecided this long, on a wait that has not moved as "
        "long, is logged with what it waits for, seconds (keep it above the idle "
        "time)",
        STREAM,
    )
    stuck_after_s: float | None = _setting(
        None,
        _optional_float,
        "/live fails when an agent makes no progress this long while records wait for it, seconds "
        "[the send timeout + 60, so that an outage the worker rides out is not a failure]",
        STREAM,
        shown="the send timeout + 60",
    )
    data_dir: str = _setting(
        "stream-lsh-data", str, "worker state directory (RocksDB); one per worker", STREAM
    )
    web_port: int = _setting(
        0, int, "port of the worker's web server (/metrics, /ready, /live); 0 = no web server", STREAM
    )
    web_bind: str = _setting(
        "127.0.0.1",
        str,
        "address the web server listens on; 0.0.0.0 for a Prometheus on another host",
        STREAM,
    )
    replication_factor: int = _setting(
        1, int, "replicas of every topic the app creates (3 on a production cluster)", TOPICS
    )
    min_insync_replicas: int | None = _setting(
        None,
        _optional_int,
        "min.insync.replicas of the topics it creates [broker's]",
        TOPICS,
        shown="the broker's",
    )
    log_level: LogLevel = _setting(
        LogLevel.WARNING, _choice(LogLevel, "log level"), "worker log level", STREAM
    )
    log_format: LogFormat = _setting(
        LogFormat.TEXT,
        _choice(LogFormat, "log format"),
        "worker log lines: text, or json (one object a line)",
        STREAM,
    )
    snapshot_mb: float = _setting(
        16.0, float, "journal megabytes per stage partition before a state snapshot replaces them", STREAM
    )
    status_interval_s: float = _setting(
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
            "band_partitions",
            "home_partitions",
            "batch_size",
            "fetch_wait_ms",
            "replication_factor",
        ):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be >= 1, got {getattr(self, name)} ({_where(name)})")
        if (
            self.min_insync_replicas is not None
            and not 1 <= self.min_insync_replicas <= self.replication_factor
        ):
            raise SettingsError(
                f"min_insync_replicas must be between 1 and replication_factor "
                f"({self.replication_factor}), got {self.min_insync_replicas} "
                f"({_where('min_insync_replicas')})"
            )
        for name in ("snapshot_mb", "idle_ms", "pending_alert_s"):
            if not getattr(self, name) > 0:
                raise SettingsError(f"{name} must be positive, got {getattr(self, name)} ({_where(name)})")
        if self.stuck_after_s is not None and not self.stuck_after_s > 0:
            raise SettingsError(
                f"stuck_after_s must be positive, got {self.stuck_after_s} ({_where('stuck_after_s')})"
            )
        for name in ("batch_wait_ms", "ingest_wait_ms", "lateness_s"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name} must be >= 0, got {getattr(self, name)} ({_where(name)})")
        if self.status_interval_s != 0 and not self.status_interval_s >= MIN_STATUS_INTERVAL_S:
            raise SettingsError(
                f"status_interval_s must be 0 (no reports) or at least {MIN_STATUS_INTERVAL_S:g}, got "
                f"{self.status_interval_s} ({_where('status_interval_s')})"
            )
        if not self.app_id or not all(c.isalnum() or c in "-_." for c in self.app_id):
            raise SettingsError(
                f"app_id must be letters, digits, '-', '_' or '.', got {self.app_id!r} ({_where('app_id')})"
            )
        _as_choices(self, order=Order, log_level=LogLevel, log_format=LogFormat)


class SecurityProtocol(str, Enum):
    """How clients reach the brokers: Kafka's own ``security.protocol`` names."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"  # TLS; with a client certificate, mutual TLS
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"  # SASL over TLS: Confluent Cloud, MSK with SCRAM, Redpanda Cloud, Aiven

    @classmethod
    def parse(cls, text: str) -> SecurityProtocol:
        return cls(text.strip().upper())

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class SaslMechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
    OAUTHBEARER = "OAUTHBEARER"

    @classmethod
    def parse(cls, text: str) -> SaslMechanism:
        return cls(text.strip().upper().replace("_", "-"))


class Compression(_LowerCaseChoice):
    """Codec of the record batches the app writes (Kafka's ``compression.type`` names)."""

    NONE = "none"
    GZIP = "gzip"
    LZ4 = "lz4"
    SNAPPY = "snappy"
    ZSTD = "zstd"

    @property
    def codec(self) -> str | None:
        """The name Kafka clients take (``None``: uncompressed)."""
        return None if self is Compression.NONE else self.value


#: The largest record batch the app writes by default: 1 MiB, the limit of Apache Kafka, Amazon MSK,
#: Redpanda, Aiven and Azure Event Hubs out of the box (Confluent Cloud allows 2 MB by default, 8 MB at
#: most), so that topics can be created and written anywhere without asking for a larger limit.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
MIN_MESSAGE_BYTES = 1 << 16  # a snapshot chunk or a batch of a few pages must fit


class Secret:
    """A password or key passphrase: compared and passed on, never shown. Its ``repr`` and ``str``
    are masked, so a settings object can be logged or printed in a traceback without leaking it."""

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return "Secret('********')" if self._value else "Secret('')"

    __str__ = __repr__


def _secret_from(value: Secret, file: str, names: tuple[str, str]) -> str | None:
    """A secret given inline (environment) or in a file (a mounted Kubernetes Secret), read now:
    a file is read at every connection, so a rotated secret is picked up by the next one."""
    if value and file:
        raise SettingsError(f"give {names[0]} or {names[1]}, not both ({_where(names[1])})")
    if file:
        try:
            return Path(file).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as error:
            raise SettingsError(
                f"{names[1]}: cannot read {file!r}: {error.strerror} ({_where(names[1])})"
            ) from None
    return value.reveal() if value else None


@dataclass(frozen=True)
class KafkaSettings:
    """How every Kafka client of the app connects (worker, topics, produce, tail): TLS and SASL;
    how long a worker waits for a broker that is not there yet, and for one that went away."""

    security_protocol: SecurityProtocol = _setting(
        SecurityProtocol.PLAINTEXT,
        _choice(SecurityProtocol, "security protocol"),
        "PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL (SASL over TLS), as Kafka's security.protocol",
        CLIENTS,
    )
    ssl_cafile: str = _setting(
        "",
        str,
        "PEM file of the CA certificates that sign the brokers'; empty: the system's trust store",
        CLIENTS,
    )
    ssl_certfile: str = _setting(
        "", str, "PEM file of this client's certificate chain, for mutual TLS", CLIENTS
    )
    ssl_keyfile: str = _setting(
        "",
        str,
        "PEM file of this client's private key, for mutual TLS; empty: it is in the certificate file",
        CLIENTS,
    )
    ssl_key_password: Secret = _setting(
        Secret(), Secret, "passphrase of an encrypted client key (environment only)", CLIENTS, flag=False
    )
    ssl_key_password_file: str = _setting("", str, "file holding the passphrase of the client key", CLIENTS)
    ssl_check_hostname: bool = _setting(
        True,
        _bool,
        "check that a broker's certificate names the host connected to",
        CLIENTS,
        switch="no-ssl-check-hostname",
    )
    sasl_mechanism: SaslMechanism = _setting(
        SaslMechanism.PLAIN,
        _choice(SaslMechanism, "SASL mechanism"),
        "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
        CLIENTS,
    )
    sasl_username: str = _setting("", str, "SASL user name (PLAIN, SCRAM)", CLIENTS)
    sasl_password: Secret = _setting(
        Secret(), Secret, "SASL password (environment only)", CLIENTS, flag=False
    )
    sasl_password_file: str = _setting("", str, "file holding the SASL password", CLIENTS)
    sasl_oauth_token_file: str = _setting(
        "",
        str,
        "OAUTHBEARER: file holding the access token, read again at every login (rotate it there)",
        CLIENTS,
    )
    compression: Compression = _setting(
        Compression.ZSTD,  # the fewest bytes for the least CPU (benchmarks/bench_compression.py)
        _choice(Compression, "compression"),
        "codec of the app's output and internal topics: none, gzip, lz4, snappy or zstd",
        (*STREAM, "produce"),
    )
    max_message_bytes: int = _setting(
        DEFAULT_MAX_MESSAGE_BYTES,
        int,
        "largest record the app writes, as the broker counts it (max.message.bytes of the topics it makes)",
        (*TOPICS, "produce"),
    )
    broker_wait_s: float | None = _setting(
        None,
        _optional_float,
        "how long a worker waits for an unreachable broker at start-up, retrying, seconds; none = forever",
        STREAM,
        shown="forever",
    )
    send_timeout_s: float = _setting(
        300.0,
        float,
        "how long a worker's sends wait for the brokers, retrying, before it exits with code 70 "
        "(its input is redelivered): broker outages shorter than this are ridden out, seconds",
        STREAM,
    )

    def __post_init__(self) -> None:
        _as_choices(
            self, security_protocol=SecurityProtocol, sasl_mechanism=SaslMechanism, compression=Compression
        )
        if self.max_message_bytes < MIN_MESSAGE_BYTES:
            raise SettingsError(
                f"max_message_bytes must be at least {MIN_MESSAGE_BYTES} (64 KiB), got "
                f"{self.max_message_bytes} ({_where('max_message_bytes')})"
            )
        if self.broker_wait_s is not None and self.broker_wait_s < 0:
            raise SettingsError(
                f"broker_wait_s must be >= 0 or none, got {self.broker_wait_s} ({_where('broker_wait_s')})"
            )
        if not self.send_timeout_s > 0:
            raise SettingsError(
                f"send_timeout_s must be positive, got {self.send_timeout_s} ({_where('send_timeout_s')})"
            )
        for name in ("ssl_key_password", "sasl_password"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, Secret(getattr(self, name)))
        protocol = self.security_protocol
        given = [f.name for f in fields(self) if f.name.startswith(("ssl_", "sasl_")) and _is_set(self, f)]
        for name in given:
            tls = name.startswith("ssl_")
            if (tls and not protocol.tls) or (not tls and not protocol.sasl):
                wanted = "SSL or SASL_SSL" if tls else "SASL_PLAINTEXT or SASL_SSL"
                raise SettingsError(
                    f"{name} is set but security_protocol is {protocol.value}: set it to {wanted} "
                    f"({_where('security_protocol')})"
                )
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "sasl_oauth_token_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise SettingsError(f"{name}: no such file {path!r} ({_where(name)})")
        if (
            self.ssl_keyfile or self.ssl_key_password or self.ssl_key_password_file
        ) and not self.ssl_certfile:
            raise SettingsError(
                f"a client key needs its certificate: set ssl_certfile ({_where('ssl_certfile')})"
            )
        self.key_password()
        if protocol.sasl:
            self._check_sasl()

    def _check_sasl(self) -> None:
        if self.sasl_mechanism is SaslMechanism.OAUTHBEARER:
            if not self.sasl_oauth_token_file:
                raise SettingsError(
                    "sasl_mechanism OAUTHBEARER needs a token: "
                    f"set sasl_oauth_token_file ({_where('sasl_oauth_token_file')})"
                )
            return
        if self.sasl_oauth_token_file:
            raise SettingsError(
                f"sasl_oauth_token_file is for sasl_mechanism OAUTHBEARER, not {self.sasl_mechanism.value}"
            )
        if not self.sasl_username or self.password() is None:
            raise SettingsError(
                f"SASL {self.sasl_mechanism.value} needs sasl_username and sasl_password or "
                f"sasl_password_file ({_where('sasl_username')}, {ENV_PREFIX}SASL_PASSWORD)"
            )

    def password(self) -> str | None:
        """The SASL password, from the environment or its file."""
        return _secret_from(
            self.sasl_password, self.sasl_password_file, ("sasl_password", "sasl_password_file")
        )

    def key_password(self) -> str | None:
        """The client key's passphrase, from the environment or its file."""
        return _secret_from(
            self.ssl_key_password, self.ssl_key_password_file, ("ssl_key_password", "ssl_key_password_file")
        )

    def describe(self) -> str:
        """How clients connect, for logs and messages: never a secret."""
        parts = [self.security_protocol.value]
        if self.security_protocol.sasl:
            who = f" as {self.sasl_username!r}" if self.sasl_username else ""
            parts.append(f"{self.sasl_mechanism.value}{who}")
        if self.ssl_certfile:
            parts.append("client certificate")
        return ", ".join(parts)


def _is_set(settings: KafkaSettings, spec: Any) -> bool:
    """Whether a setting differs from its default (ssl_check_hostname's default is on)."""
    return bool(getattr(settings, spec.name) != spec.default)


_GROUPS: dict[str, type] = {
    "engine": EngineSettings,
    "input": InputSettings,
    "stream": StreamSettings,
    "kafka": KafkaSettings,
}


@dataclass(frozen=True)
class Settings:
    """Every setting, in four groups. A field ``x`` of any group is read from ``STREAM_LSH_X`` and
    the flag ``--x``: names are unique across groups, so environment and flags stay flat."""

    engine: EngineSettings = field(default_factory=EngineSettings)
    input: InputSettings = field(default_factory=InputSettings)
    stream: StreamSettings = field(default_factory=StreamSettings)
    kafka: KafkaSettings = field(default_factory=KafkaSettings)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults < ``STREAM_LSH_*`` environment < ``overrides`` (flags; None means not given,
        :data:`EXPLICIT_NONE` sets a setting to None)."""
        environ = os.environ if environ is None else environ
        _refuse_unknown_variables(environ, {ENV_PREFIX + name.upper() for name in _owner})
        unknown = set(overrides) - set(_owner)
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        values: dict[str, dict[str, Any]] = {group: {} for group in _GROUPS}
        for name, (group, spec) in _owner.items():
            raw = environ.get(ENV_PREFIX + name.upper())
            if raw is not None:
                try:
                    values[group][name] = spec.metadata["parse"](raw)
                except ValueError as error:
                    raise SettingsError(f"{ENV_PREFIX}{name.upper()}={raw!r}: {error}") from None
            given = overrides.get(name)
            if given is EXPLICIT_NONE:  # a flag set to "none": no bound, not "not given"
                values[group][name] = None
            elif given is not None:
                values[group][name] = given
        return cls(**{group: kind(**values[group]) for group, kind in _GROUPS.items()})

    def replace(self, **changes: Any) -> Settings:
        """These settings with some changed, by their flat names (``replace(seed=7, broker=...)``),
        validated like the originals."""
        unknown = set(changes) - set(_owner)
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        groups = {}
        for group in _GROUPS:
            mine = {name: value for name, value in changes.items() if _owner[name][0] == group}
            current = getattr(self, group)
            groups[group] = dataclasses.replace(current, **mine) if mine else current
        return Settings(**groups)

    def to_environ(self) -> dict[str, str]:
        """These settings as ``STREAM_LSH_*`` variables (how ``run`` hands them to its workers)."""
        environ = {}
        for name, (group, _) in _owner.items():
            environ[ENV_PREFIX + name.upper()] = _text(getattr(getattr(self, group), name))
        return environ

    def dedup_config(self) -> DedupConfig:
        return self.engine.config()

    def file_clock(self) -> FileClock:
        """The clock of a file read by ``dedup`` or sent by ``produce``: ``now`` if set, else the
        file's own."""
        return FileClock(max_future=self.engine.max_future_hours * _HOUR, now_ms=self.input.now_ms())

    @staticmethod
    def names() -> list[str]:
        """Every setting's name (``STREAM_LSH_<NAME>``, ``--<name>``), group by group."""
        return list(_owner)

    @staticmethod
    def default(name: str) -> Any:
        """The default of a setting (what ``--help`` shows)."""
        return _owner[name][1].default

    @staticmethod
    def help(name: str) -> str:
        return str(_owner[name][1].metadata["help"])

    @staticmethod
    def parse(name: str, text: str) -> Any:
        """A setting's value from text, as its environment variable is read (ValueError if it
        cannot be), for flags that take what the variable takes (``none``, any case)."""
        return _owner[name][1].metadata["parse"](text)

    @staticmethod
    def for_command(command: str) -> list[str]:
        """The settings that are flags of ``command``, in declaration order."""
        return [
            name
            for name, (_, spec) in _owner.items()
            if command in spec.metadata["commands"] and spec.metadata["flag"]
        ]

    @staticmethod
    def spec(name: str) -> Any:
        """A setting's declaration (a dataclass field, its metadata from :func:`_setting`)."""
        return _owner[name][1]

    @staticmethod
    def help_on(name: str, command: str) -> str:
        """A setting's help on one command, with its default as ``--help`` shows it."""
        meta = _owner[name][1].metadata
        own = meta["help_for"].get(command)  # says its default itself
        text = str(own or meta["help"]).rstrip(".")
        return f"{text[0].upper()}{text[1:]}{'' if own else f' [{Settings.shown(name)}]'}."

    @staticmethod
    def shown(name: str) -> str:
        """A setting's default as help and the docs show it."""
        spec = _owner[name][1]
        return str(spec.metadata["shown"] or _shown(spec.default))

    @staticmethod
    def describe() -> list[tuple[str, str, str]]:
        """(environment variable, default, help) of every setting, for docs and --help."""
        return [
            (ENV_PREFIX + name.upper(), _text(spec.default), spec.metadata["help"])
            for name, (_, spec) in _owner.items()
        ]


#: setting name -> (its group, its field): the flat namespace of flags and variables
_owner: dict[str, tuple[str, Any]] = {
    spec.name: (group, spec) for group, kind in _GROUPS.items() for spec in fields(kind)
}


def _shown(value: Any) -> str:
    """A default as people read it: ``on``, ``none``, ``0.25``, ``en,de``."""
    if isinstance(value, Secret):
        return "none"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, Enum):
        return str(value.value)
    if value is None or value == "":
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value)


#: The groups' titles in docs/settings.md.
_GROUP_TITLES = {
    "engine": "The engine: shingles, signatures, bands, verification, window, boilerplate, alerts",
    "input": "Input files and records",
    "stream": "The stream: broker, topics, partitions, batching, order, workers",
    "kafka": "Kafka clients: security, record size, compression, waits",
}


def settings_reference() -> str:
    """docs/settings.md, made from the declarations (``python -m stream_lsh.settings`` prints it;
    a test checks the file equals it)."""
    out = [
        "# Settings",
        "",
        "<!-- Made by `python -m stream_lsh.settings > docs/settings.md` from stream_lsh/settings.py; "
        "edit the declarations there, not this file. -->",
        "",
        "Every setting is an environment variable `STREAM_LSH_<NAME>`, read by every command, and a flag",
        "`--<name>` of the commands listed beside it. A flag wins over the variable, the variable over",
        "the default. Values are read the same way from both: `none` for no bound, any case for choices,",
        "`true`/`false` (or `--x`/`--no-x`) for switches. A misspelled `STREAM_LSH_` variable is refused,",
        "naming the closest valid one. Secrets have no flag (a command line is visible to every user of",
        "the machine): give them in the environment or in a file (`..._FILE`).",
    ]
    for group, kind in _GROUPS.items():
        out += [
            "",
            f"## {_GROUP_TITLES[group]}",
            "",
            "| variable | flag | default | commands | what it does |",
            "|---|---|---|---|---|",
        ]
        for spec in fields(kind):
            meta = spec.metadata
            dashed = spec.name.replace("_", "-")
            flag = f"`--{dashed}`" if meta["flag"] else "none (a secret)"
            if isinstance(spec.default, bool) and meta["flag"]:
                flag += f", `--{meta['switch'] or 'no-' + dashed}`"
            commands = ", ".join(c for c in COMMANDS if c in meta["commands"])
            help_text = str(meta["help"]).replace("|", "\\|")
            variable, default = f"`{ENV_PREFIX}{spec.name.upper()}`", f"`{Settings.shown(spec.name)}`"
            out.append(f"| {variable} | {flag} | {default} | {commands} | {help_text} |")
    return "\n".join(out) + "\n"


def _text(value: Any) -> str:
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    return "none" if value is None else str(value)


def _where(name: str) -> str:
    return f"--{name.replace('_', '-')} or {ENV_PREFIX}{name.upper()}"


if __name__ == "__main__":
    print(settings_reference(), end="")
