"""The engine's settings, and how input is read: batch and stream alike."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from ..core.clock import EARLIEST_DATE
from ..core.config import DedupConfig, Verify
from ..core.dates import read_date
from ..core.record import DEFAULT_MAX_PAGE_BYTES
from ..core.shingles import ShingleKind, ShingleSpec
from ..core.spread import AlertRules
from ..errors import SettingsError
from .declare import ENGINE, FILES, STREAM, setting
from .values import choice, parse_bool, parse_languages, parse_optional_float, parse_optional_int, where

_ENGINE = DedupConfig()  # the engine's defaults: the one source of them (the CLI's help reads them from here)
HOUR = 3600.0


@dataclass(frozen=True)
class EngineSettings:
    """The kernel's knobs (:class:`~stream_lsh.core.config.DedupConfig`), as operators give them."""

    threshold: float = setting(
        _ENGINE.threshold, float, "Jaccard similarity from which a page is a duplicate", (*ENGINE, "tune")
    )
    containment: float | None = setting(
        _ENGINE.containment,
        parse_optional_float,
        "containment (share of the smaller page found in the larger) from which a page is a "
        "duplicate; none: Jaccard similarity alone",
        (*ENGINE, "tune"),
    )
    num_perm: int = setting(_ENGINE.num_perm, int, "minhash signature length n", (*ENGINE, "tune"))
    seed: int = setting(_ENGINE.seed, int, "seed of token hashing and minhash functions", ENGINE)
    shingles: ShingleKind = setting(
        _ENGINE.shingles.kind,
        choice(ShingleKind, "shingle kind"),
        "shingle kind",
        ENGINE,
        engine=lambda s: {"shingles": ShingleSpec(s.shingles, s.shingle_size)},
    )
    shingle_size: int | None = setting(
        None,
        parse_optional_int,
        "shingle length k",
        ENGINE,
        shown="3; 9 for char",
        engine=lambda s: {},
    )
    lead_share: float = setting(
        _ENGINE.lead_share,
        float,
        "share of a page's shingles, from where its article begins, that count twice (its "
        "lead: copies share it, a page quoting another does not); 0 ignores position",
        ENGINE,
    )
    languages: tuple[str, ...] = setting(
        _ENGINE.languages, parse_languages, "stop-word languages, comma-separated", ENGINE
    )
    bands: int | None = setting(
        _ENGINE.bands,
        parse_optional_int,
        "LSH bands b",
        (*ENGINE, "tune"),
        shown="chosen from the threshold",
    )
    rows: int | None = setting(
        _ENGINE.rows,
        parse_optional_int,
        "rows per band r",
        (*ENGINE, "tune"),
        shown="chosen from the threshold",
    )
    fp_weight: float = setting(
        _ENGINE.fp_weight, float, "weight of false positives when choosing (b, r)", (*ENGINE, "tune")
    )
    fn_weight: float = setting(
        _ENGINE.fn_weight, float, "weight of false negatives when choosing (b, r)", (*ENGINE, "tune")
    )
    verify: Verify = setting(_ENGINE.verify, choice(Verify, "candidate check"), "candidate check", ENGINE)
    min_shingles: int = setting(
        _ENGINE.min_shingles,
        int,
        "pages with fewer shingles are never compared by similarity, only found by their opening or headline "
        "(else no_content)",
        ENGINE,
    )
    bucket_cap: int = setting(_ENGINE.bucket_cap, int, "most pages kept per LSH bucket", ENGINE)
    ttl_hours: float = setting(
        (_ENGINE.ttl or 0.0) / HOUR,
        float,
        "how long a page stays indexed after its event time, by the clock; 0 = forever",
        ENGINE,
        engine=lambda s: {"ttl": s.ttl_hours * HOUR if s.ttl_hours > 0 else None},
    )
    boilerplate: bool = setting(
        _ENGINE.boilerplate,
        parse_bool,
        "learn and drop site-wide boilerplate",
        ENGINE,
        switch="no-boilerplate",
    )
    boilerplate_min_pages: int = setting(
        _ENGINE.boilerplate_min_pages,
        int,
        "pages of a site with different content that make a block boilerplate",
        ENGINE,
    )
    drop_chrome: bool = setting(
        _ENGINE.drop_chrome,
        parse_bool,
        "drop nav/aside/footer, dialogs and form labels of HTML pages, and lists of headlines",
        ENGINE,
        switch="keep-chrome",
    )
    max_future_hours: float = setting(
        _ENGINE.max_future / HOUR,
        float,
        "a published_at more than this many hours after the page's clock is "
        "ignored (a wrong year, a time-zone bug)",
        (*ENGINE, "produce"),
        engine=lambda s: {"max_future": s.max_future_hours * HOUR},
    )
    state_cache_mb: int = setting(
        256,
        int,
        "memory for RocksDB's block cache of a window on disk (dedup --state-dir, the stream's decide "
        "partition), MiB",
        ("dedup", *STREAM),
    )
    alert_levels: str = setting(
        "3,10,30",
        str,
        "story-spread alert levels: N (N pages from N distinct sources) or PAGES:SOURCES, comma-separated",
        ("dedup", *STREAM),
    )
    alert_within_hours: float = setting(
        6.0,
        float,
        "hours of event time within which an alert level's pages must fall",
        ("dedup", *STREAM),
    )

    def __post_init__(self) -> None:
        if self.ttl_hours < 0:
            raise SettingsError(f"ttl_hours must be >= 0, got {self.ttl_hours} ({where('ttl_hours')})")
        if self.state_cache_mb < 1:
            raise SettingsError(
                f"state_cache_mb must be >= 1, got {self.state_cache_mb} ({where('state_cache_mb')})"
            )
        if self.max_future_hours < 0:
            raise SettingsError(
                f"max_future_hours must be >= 0, got {self.max_future_hours} ({where('max_future_hours')})"
            )
        try:
            self.config()
        except ValueError as error:
            raise SettingsError(f"invalid settings: {error}") from None
        if not (math.isfinite(self.alert_within_hours) and self.alert_within_hours > 0):
            raise SettingsError(
                f"alert_within_hours must be positive hours, got {self.alert_within_hours} "
                f"({where('alert_within_hours')})"
            )
        try:
            self.alert_rules()
        except ValueError as error:
            raise SettingsError(f"alert_levels: {error} ({where('alert_levels')})") from None

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
    """How input records are read: in batch and stream alike, and by how many processes in batch."""

    max_page_bytes: int = setting(
        DEFAULT_MAX_PAGE_BYTES, int, "larger input records are rejected", (*ENGINE, "produce")
    )
    now: str = setting(
        "",
        str,
        "the clock of every page of a file (ISO 8601); empty: the file's own clock, from its dates",
        FILES,
        shown="the file's own clock, from its dates",
    )
    jobs: int = setting(
        1,
        int,
        "processes that read and sign pages, each site's pages in one of them (the decisions do not "
        "depend on it); 0: one per core",
        ("dedup", "eval"),
    )

    def __post_init__(self) -> None:
        if self.max_page_bytes < 1:
            raise SettingsError(
                f"max_page_bytes must be positive, got {self.max_page_bytes} ({where('max_page_bytes')})"
            )
        self.now_ms()  # validates it
        if self.jobs < 0:
            raise SettingsError(f"jobs must be >= 0 (0: one per core), got {self.jobs} ({where('jobs')})")

    def now_ms(self) -> int | None:
        """``now`` as a clock reading, None when not set."""
        if not self.now.strip():
            return None
        reading = read_date(self.now)
        if reading.seconds is None or reading.seconds < EARLIEST_DATE:
            raise SettingsError(
                f"now must be a date from 1990 on (ISO 8601, e.g. 2026-11-24T10:00:00Z), got "
                f"{self.now!r} ({where('now')})"
            )
        return int(reading.seconds * 1000)
