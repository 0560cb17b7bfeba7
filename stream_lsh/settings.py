"""One settings object for every command: defaults, then ``STREAM_LSH_*`` environment variables,
then command-line flags; validated once, at start-up, with messages that name the variable or flag.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Mapping

from .core.clock import EARLIEST_DATE, FileClock
from .core.dates import read_date
from .core.dedup import DedupConfig
from .core.record import DEFAULT_MAX_PAGE_BYTES
from .core.shingles import ShingleSpec
from .core.stopwords import DEFAULT_LANGUAGES
from .errors import SettingsError

__all__ = ["ENV_PREFIX", "Settings", "SettingsError"]

ENV_PREFIX = "STREAM_LSH_"
#: Variables of the prefix that are not settings: the Apache Kafka jar cache (stream/brokers), and
#: the test suite's own (``STREAM_LSH_TEST_*``), which its worker processes inherit.
OTHER_VARIABLES = frozenset({"STREAM_LSH_KAFKA_CACHE"})
TEST_VARIABLES_PREFIX = "STREAM_LSH_TEST_"


def _refuse_unknown_variables(environ: Mapping[str, str], settings: set[str]) -> None:
    """A misspelled variable would otherwise be ignored in silence, and the default used instead
    of what the operator meant: refuse it, naming the closest valid one."""
    known = settings | OTHER_VARIABLES
    unknown = sorted(name for name in environ if name.startswith(ENV_PREFIX) and name not in known
                     and not name.startswith(TEST_VARIABLES_PREFIX))
    if unknown:
        suffixes = sorted(valid[len(ENV_PREFIX):] for valid in known)  # the prefix would match anything
        hints = []
        for name in unknown:
            suffix = name[len(ENV_PREFIX):]
            close = ([valid for valid in suffixes if valid.startswith(suffix + "_")]  # TTL: TTL_HOURS
                     or difflib.get_close_matches(suffix, suffixes, n=1, cutoff=0.6))
            hints.append(f"{name} (did you mean {ENV_PREFIX}{close[0]}?)" if close else name)
        raise SettingsError(f"unknown environment variable{'s' if len(unknown) > 1 else ''}: "
                            f"{', '.join(hints)}. Unset it, or see `stream-lsh --help` and the README's "
                            "settings tables for valid names")


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


def _setting(default: Any, parse: Callable[[str], Any], help: str) -> Any:
    return field(default=default, metadata={"parse": parse, "help": help})


@dataclass(frozen=True)
class Settings:
    """Engine and I/O settings. Field ``x`` is read from ``STREAM_LSH_X``."""

    threshold: float = _setting(0.3, float, "Jaccard similarity from which a page is a duplicate")
    num_perm: int = _setting(128, int, "minhash signature length n")
    seed: int = _setting(1, int, "seed of token hashing and minhash functions")
    shingles: str = _setting("stopword", str, "shingle kind: stopword, char or word")
    shingle_size: int | None = _setting(None, _optional_int, "shingle length k (default 3, 9 for char)")
    languages: tuple[str, ...] = _setting(DEFAULT_LANGUAGES, _languages, "stop-word languages, comma-separated")
    bands: int | None = _setting(None, _optional_int, "LSH bands b (default: chosen from the threshold)")
    rows: int | None = _setting(None, _optional_int, "rows per band r (default: chosen from the threshold)")
    fp_weight: float = _setting(0.5, float, "weight of false positives when choosing (b, r)")
    fn_weight: float = _setting(0.5, float, "weight of false negatives when choosing (b, r)")
    verify: str = _setting("signature", str, "candidate check: signature or jaccard")
    min_shingles: int = _setting(5, int, "pages with fewer shingles are no_content")
    bucket_cap: int = _setting(64, int, "most pages kept per LSH bucket")
    ttl_hours: float = _setting(72.0, float, "how long a page stays indexed after its event time, by the clock; "
                                "0 = forever")
    boilerplate: bool = _setting(True, _bool, "learn and drop site-wide boilerplate")
    boilerplate_min_pages: int = _setting(2, int, "distinct contexts on a site that make a block boilerplate")
    drop_chrome: bool = _setting(True, _bool, "drop nav/aside/footer/form of HTML pages")
    max_page_bytes: int = _setting(DEFAULT_MAX_PAGE_BYTES, int, "larger input records are rejected")
    max_future_hours: float = _setting(24.0, float, "a published_at more than this many hours after the page's clock "
                                       "is ignored (a wrong year, a time-zone bug)")
    now: str = _setting("", str, "the clock of every page of a file (ISO 8601); empty: the file's own clock, from its dates")
    # -- the stream ---------------------------------------------------------------------------
    broker: str = _setting("", str, "Kafka bootstrap servers, host:port[,host:port]; empty: start the embedded broker")
    app_id: str = _setting("stream-lsh", str, "consumer group, prefix of internal topics and state")
    input_topic: str = _setting("pages", str, "topic of input pages and retractions")
    queries_topic: str = _setting("dedup-queries", str, "topic of query-only probes")
    decisions_topic: str = _setting("dedup-decisions", str, "one decision per page, key = page id")
    clusters_topic: str = _setting("dedup-clusters", str, "latest state of each cluster, key = cluster id")
    unique_topic: str = _setting("unique-pages", str, "the original page of every page judged unique")
    answers_topic: str = _setting("dedup-answers", str, "answers to query-only probes, key = correlation id")
    dead_letters_topic: str = _setting("dedup-dead-letters", str, "inputs that could not be processed, with reason")
    input_partitions: int = _setting(8, int, "partitions of the input and query topics (when created here)")
    site_partitions: int = _setting(8, int, "partitions of the site stage (boilerplate learning, signing)")
    band_partitions: int = _setting(8, int, "partitions of the band tables")
    home_partitions: int = _setting(8, int, "partitions of page state (gather and decision)")
    batch_size: int = _setting(256, int, "most input messages per micro-batch")
    batch_wait_ms: float = _setting(10.0, float, "longest wait to fill a micro-batch of an internal stage, milliseconds")
    ingest_wait_ms: float = _setting(50.0, float, "longest wait to fill a micro-batch of input pages, milliseconds")
    fetch_wait_ms: int = _setting(10, int, "longest a worker's fetch waits for new records, milliseconds")
    order: str = _setting("clock", str, "which copy of a story is first: clock (the earliest (clock, id): the record "
                          "timestamp, whatever the interleaving of input partitions; 'event-time' is the same) or "
                          "arrival (the first to reach the index)")
    idle_ms: float = _setting(200.0, float, "clock order: an input partition quiet this long holds no page back")
    lateness_s: float = _setting(0.0, float, "clock order: how far the record timestamps of one input partition may "
                                 "go backwards, seconds")
    pending_alert_s: float = _setting(5.0, float, "a page undecided this long, on a wait that has not moved as long, "
                                      "is logged with what it waits for, seconds (keep it above the idle time)")
    data_dir: str = _setting("stream-lsh-data", str, "worker state directory (RocksDB); one per worker")
    web_port: int = _setting(0, int, "port of the worker's Faust web server; 0 = no web server")
    replication_factor: int = _setting(1, int, "replicas of every topic the app creates (3 on a production cluster)")
    min_insync_replicas: int | None = _setting(None, _optional_int, "min.insync.replicas of the topics it creates [broker's]")
    log_level: str = _setting("warning", str, "worker log level: debug, info, warning or error")
    snapshot_mb: float = _setting(16.0, float, "journal megabytes per stage partition before a state snapshot replaces them")

    def __post_init__(self) -> None:
        if self.max_page_bytes < 1:
            raise SettingsError(f"max_page_bytes must be positive, got {self.max_page_bytes} ({_where('max_page_bytes')})")
        if self.ttl_hours < 0:
            raise SettingsError(f"ttl_hours must be >= 0, got {self.ttl_hours} ({_where('ttl_hours')})")
        for name in ("input_partitions", "site_partitions", "band_partitions", "home_partitions", "batch_size",
                     "fetch_wait_ms", "replication_factor"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be >= 1, got {getattr(self, name)} ({_where(name)})")
        if self.min_insync_replicas is not None and not 1 <= self.min_insync_replicas <= self.replication_factor:
            raise SettingsError(f"min_insync_replicas must be between 1 and replication_factor "
                                f"({self.replication_factor}), got {self.min_insync_replicas} ({_where('min_insync_replicas')})")
        if not self.snapshot_mb > 0:
            raise SettingsError(f"snapshot_mb must be positive, got {self.snapshot_mb} ({_where('snapshot_mb')})")
        if self.order == "event-time":  # its name until clocks replaced published dates as the order
            object.__setattr__(self, "order", "clock")
        if self.order not in ("clock", "arrival"):
            raise SettingsError(f"order must be clock or arrival, got {self.order!r} ({_where('order')})")
        if not self.idle_ms > 0:
            raise SettingsError(f"idle_ms must be positive, got {self.idle_ms} ({_where('idle_ms')})")
        if not self.pending_alert_s > 0:
            raise SettingsError(f"pending_alert_s must be positive, got {self.pending_alert_s} ({_where('pending_alert_s')})")
        if self.max_future_hours < 0:
            raise SettingsError(f"max_future_hours must be >= 0, got {self.max_future_hours} ({_where('max_future_hours')})")
        self.now_ms()  # validates it
        for name in ("batch_wait_ms", "ingest_wait_ms", "lateness_s"):
            if getattr(self, name) < 0:
                raise SettingsError(f"{name} must be >= 0, got {getattr(self, name)} ({_where(name)})")
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            raise SettingsError(f"log_level must be debug, info, warning or error, got {self.log_level!r} "
                                f"({_where('log_level')})")
        if not self.app_id or not all(c.isalnum() or c in "-_." for c in self.app_id):
            raise SettingsError(f"app_id must be letters, digits, '-', '_' or '.', got {self.app_id!r} ({_where('app_id')})")
        try:
            self.dedup_config()
        except ValueError as error:
            raise SettingsError(f"invalid settings: {error}") from None

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> "Settings":
        """Defaults < ``STREAM_LSH_*`` environment < ``overrides`` (flags; None means not given)."""
        environ = os.environ if environ is None else environ
        _refuse_unknown_variables(environ, {ENV_PREFIX + spec.name.upper() for spec in fields(cls)})
        values: dict[str, Any] = {}
        for spec in fields(cls):
            raw = environ.get(ENV_PREFIX + spec.name.upper())
            if raw is not None:
                try:
                    values[spec.name] = spec.metadata["parse"](raw)
                except ValueError as error:
                    raise SettingsError(f"{ENV_PREFIX}{spec.name.upper()}={raw!r}: {error}") from None
        unknown = set(overrides) - {spec.name for spec in fields(cls)}
        if unknown:
            raise SettingsError(f"unknown settings: {', '.join(sorted(unknown))}")
        values.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**values)

    def to_environ(self) -> dict[str, str]:
        """These settings as ``STREAM_LSH_*`` variables (how ``run`` hands them to its workers)."""
        environ = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, tuple):
                text = ",".join(value)
            elif isinstance(value, bool):
                text = "true" if value else "false"
            elif value is None:
                text = "none"
            else:
                text = str(value)
            environ[ENV_PREFIX + spec.name.upper()] = text
        return environ

    def now_ms(self) -> int | None:
        """``now`` as a clock reading, None when not set."""
        if not self.now.strip():
            return None
        reading = read_date(self.now)
        if reading.seconds is None or reading.seconds < EARLIEST_DATE:
            raise SettingsError(f"now must be a date from 1990 on (ISO 8601, e.g. 2026-11-24T10:00:00Z), got "
                                f"{self.now!r} ({_where('now')})")
        return int(reading.seconds * 1000)

    def file_clock(self) -> FileClock:
        """The clock of a file read by ``dedup`` or sent by ``produce``: ``now`` if set, else the file's own."""
        return FileClock(max_future=self.max_future_hours * 3600.0, now_ms=self.now_ms())

    def dedup_config(self) -> DedupConfig:
        return DedupConfig(
            threshold=self.threshold,
            num_perm=self.num_perm,
            seed=self.seed,
            shingles=ShingleSpec(self.shingles, self.shingle_size),  # type: ignore[arg-type]  # validated there
            languages=self.languages,
            bands=self.bands,
            rows=self.rows,
            fp_weight=self.fp_weight,
            fn_weight=self.fn_weight,
            verify=self.verify,
            min_shingles=self.min_shingles,
            bucket_cap=self.bucket_cap,
            ttl=self.ttl_hours * 3600.0 if self.ttl_hours > 0 else None,
            boilerplate=self.boilerplate,
            boilerplate_min_pages=self.boilerplate_min_pages,
            drop_chrome=self.drop_chrome,
            max_future=self.max_future_hours * 3600.0,
        )

    @staticmethod
    def describe() -> list[tuple[str, str, str]]:
        """(environment variable, default, help) of every setting, for docs and --help."""
        return [(ENV_PREFIX + s.name.upper(), repr(s.default), s.metadata["help"]) for s in fields(Settings)]


def _where(name: str) -> str:
    return f"--{name.replace('_', '-')} or {ENV_PREFIX}{name.upper()}"
