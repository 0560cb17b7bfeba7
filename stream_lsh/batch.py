"""Batch mode: JSON lines of pages in, one decision per page out, in input order.

The I/O shell around :class:`~stream_lsh.core.dedup.Deduplicator`. Bad input never stops a run
and is never lost: a line that cannot be processed goes to the rejects sink with its line number,
a reason and the line itself, and processing continues.

With :class:`SpreadAlerts`, the decisions also feed a :class:`~stream_lsh.core.spread.SpreadTracker`
in decision order, and the story-spread alerts it fires are written as JSON lines as they fire.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from .core.dedup import DUPLICATE, NO_CONTENT, UNIQUE, Decision, Deduplicator, PreparedPage
from .core.page import Page
from .core.prepare import SignedPage
from .core.record import DEFAULT_MAX_PAGE_BYTES, Delete, Rejected, parse_line, read_lines
from .core.spread import Alert, SpreadTracker
from .core.spread_feed import follow_decision, follow_retraction
from .core.text import FLATTENED_WORDS
from .signing import signers

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "BatchSummary",
    "DecisionRecords",
    "RejectSink",
    "Rejected",
    "SpreadAlerts",
    "parse_line",
    "run_batch",
]

#: A cluster with more pages of one site than this is worth a warning (see BatchSummary.warnings).
CROWDED_CLUSTER = 5
DEFAULT_BATCH_SIZE = 256  # pages per micro-batch: large enough to amortise numpy calls, small in memory
MAX_BATCH_BYTES = 8_000_000  # ... and a bound in bytes, so that a run of huge pages stays small too


@dataclass
class BatchSummary:
    """Counts of one run; ``clusters`` counts clusters with at least two pages."""

    pages: int = 0
    unique: int = 0
    duplicates: int = 0
    no_content: int = 0
    rejected: int = 0
    deleted: int = 0
    seconds: float = 0.0
    alerts: int | None = None  # alerts written (None: not asked for)
    cluster_sizes: Counter[str] = field(default_factory=Counter)
    dates_ignored: Counter[str] = field(
        default_factory=Counter
    )  # pages whose published_at was not used, by reason
    flattened: int = 0  # pages whose text held a whole article on one line
    notices: Counter[str] = field(default_factory=Counter)  # no_content pages that are notices, by kind
    # pages of one site in one cluster: many suggest a site's pages matching through its chrome
    site_clusters: Counter[tuple[str, str]] = field(default_factory=Counter)

    @property
    def clusters(self) -> int:
        return sum(1 for size in self.cluster_sizes.values() if size > 1)

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    def count(self, decision: Decision, *, site: str = "", flattened: bool = False) -> None:
        self.pages += 1
        self.flattened += flattened
        if decision.cluster_id is not None and site:
            self.site_clusters[decision.cluster_id, site] += 1
        if decision.status == UNIQUE:
            self.unique += 1
        elif decision.status == DUPLICATE:
            self.duplicates += 1
        elif decision.status == NO_CONTENT:
            self.no_content += 1
            if decision.notice is not None:
                self.notices[decision.notice] += 1
        if decision.cluster_id is not None:
            self.cluster_sizes[decision.cluster_id] += 1

    def format(self) -> str:
        return (
            f"pages {self.pages:,} | unique {self.unique:,} | duplicates {self.duplicates:,} | "
            f"clusters {self.clusters:,} | no_content {self.no_content:,}"
            + (f" ({_notices(self.notices)})" if self.notices else "")
            + f" | rejected {self.rejected:,}"
            + (f" | deleted {self.deleted:,}" if self.deleted else "")
            + (f" | alerts {self.alerts:,}" if self.alerts is not None else "")
            + (f" | dates ignored {_reasons(self.dates_ignored)}" if self.dates_ignored else "")
            + f" | {self.pages_per_second:,.0f} pages/s ({self.seconds:.2f} s)"
        )

    def warnings(self) -> list[str]:
        """What about the input a user should look at, each with what to do (empty: nothing)."""
        found = []
        if self.flattened:
            share = self.flattened / self.pages
            found.append(
                f"{self.flattened:,} pages ({share:.0%}) hold a whole article on one line (one block "
                f"of over {FLATTENED_WORDS} words is most of their text), as flattening extractors "
                "deliver it: they are split into sentences, so that site chrome flattened into the line "
                "can still be learnt; if your extractor can keep paragraphs (one per line, or <p> in "
                "HTML), let it"
            )
        crowded = [(n, site) for (_, site), n in self.site_clusters.items() if n > CROWDED_CLUSTER]
        if crowded:
            most, site = max(crowded)
            found.append(
                f"{len(crowded):,} clusters hold more than {CROWDED_CLUSTER} pages of one site (the "
                f"largest {most:,} of {site}): one story rarely has that many versions at one outlet, "
                "so those pages may be matching through what the site prints around its stories; "
                "give every page its site (source or url) so that its chrome is learnt, and look "
                "at a few of them"
            )
        return found


def _reasons(counts: Counter[str]) -> str:
    return (
        f"{sum(counts.values()):,} ("
        + ", ".join(f"{reason} {n:,}" for reason, n in sorted(counts.items()))
        + ")"
    )


def _notices(counts: Counter[str]) -> str:
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(counts.items()))
    return f"{sum(counts.values()):,} notices: {kinds}"


class DecisionRecords:
    """A write-only byte sink for :func:`run_batch` that keeps the decision records in memory
    (for scoring runs: ``eval``, the quality grid, the quality tests)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, data: bytes) -> int:
        self.records.append(orjson.loads(data))
        return len(data)

    def flush(self) -> None:
        pass


class SpreadAlerts:
    """The spread of clusters in a batch run: the tracker the decisions feed, and where the alerts
    it fires are written (None: followed but not written, so that a ``--state`` file stays in step
    with its index in a run without ``--alerts``).

    The decisions feed it by the rule the stream's decider follows too
    (:mod:`stream_lsh.core.spread_feed`).
    """

    def __init__(self, tracker: SpreadTracker, out: IO[bytes] | DecisionRecords | None = None) -> None:
        self.tracker = tracker
        self.out = out
        self.fired = 0

    def decided(self, page: Page, prepared: PreparedPage, decision: Decision, ttl: float | None) -> None:
        """Follow one decision (:func:`~stream_lsh.core.spread_feed.follow_decision`); ``ttl``: the
        index's window, seconds (None: forever)."""
        self._write(
            follow_decision(
                self.tracker,
                decision,
                site=page.site,
                clock_ms=prepared.clock_ms,
                event_time=prepared.time.seconds,
                ttl=ttl,
            )
        )

    def retracted(self, page_id: str) -> None:
        """A page left the index: it leaves its cluster."""
        follow_retraction(self.tracker, page_id)

    def _write(self, alerts: list[Alert]) -> None:
        if self.out is None:
            return
        for alert in alerts:
            self.out.write(orjson.dumps(alert.to_dict()) + b"\n")
            self.fired += 1


class RejectSink:
    """Writes rejected lines as JSON lines; the file is created only when something is rejected."""

    def __init__(self, opener: Callable[[], IO[bytes]]) -> None:
        self._opener = opener
        self._file: IO[bytes] | None = None
        self.written = 0
        self.ids: set[str] = set()  # of the rejected lines that name one

    def write(self, line_number: int, rejected: Rejected, raw: bytes) -> None:
        if self._file is None:
            self._file = self._opener()
        record = {
            "line": line_number,
            "code": rejected.code,
            "reason": rejected.reason,
            "id": rejected.page_id,
            "raw": raw.decode("utf-8", "backslashreplace"),
        }
        self._file.write(orjson.dumps(record) + b"\n")
        self.written += 1
        if rejected.page_id is not None:
            self.ids.add(rejected.page_id)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def run_batch(
    lines: Iterable[bytes],
    dedup: Deduplicator,
    *,
    out: IO[bytes] | DecisionRecords,
    rejects: RejectSink,
    unique_out: IO[bytes] | None = None,
    alerts: SpreadAlerts | None = None,
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_line: Callable[[int], None] | None = None,
    jobs: int = 1,
    learnt: bool = True,
) -> BatchSummary:
    """Process JSON lines in order; see the module doc. ``on_line`` gets each line's byte length.

    Pages are decided in micro-batches of ``batch_size`` (the decisions do not depend on it; only
    the speed does), and written in input order. Every line ticks the engine's file clock
    (:class:`~stream_lsh.core.clock.FileClock`), as ``stream-lsh produce`` does for the same file.
    ``alerts``: follow the spread of clusters and write the alerts that fire (see the module doc).
    ``jobs``: processes that prepare and sign the pages (:mod:`.signing`; 1: this one). The
    decisions do not depend on it, and the engine's learner ends up the same, unless ``learnt``
    is False (nothing saves the engine's state or uses the engine after: handing back a learner
    that can be large is spared) or the run stops on an error or an interrupt (then what the
    processes learnt is lost, as a killed run's is).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    summary = BatchSummary()
    pending: list[tuple[Page, bytes, int | None]] = []
    pending_bytes = 0
    started = time.perf_counter()
    ignored_before = Counter(dedup.dates_ignored)
    signing = signers(dedup, jobs)
    in_flight: deque[list[tuple[Page, bytes, int | None]]] = deque()

    def flush(*, drain: bool = False) -> None:
        """Hand the pending pages to the signers; decide the batches they have signed, all of them
        with ``drain``, else those beyond what they may sign ahead."""
        nonlocal pending, pending_bytes
        if pending:
            signing.submit([page for page, _, _ in pending], [clock for _, _, clock in pending])
            in_flight.append(pending)
            pending, pending_bytes = [], 0
        while len(in_flight) > (0 if drain else signing.ahead):
            _decide(in_flight.popleft(), signing.signed(), dedup, summary, out, unique_out, alerts)

    def measured(source: Iterable[bytes]) -> Iterable[bytes]:
        for raw in source:
            on_line(len(raw))  # type: ignore[misc]  # only used when given
            yield raw

    completed = False
    try:
        for line in read_lines(measured(lines) if on_line is not None else lines, max_page_bytes):
            clock_ms = dedup.file_clock.tick(line.date, line.site)
            parsed = line.parsed
            if isinstance(parsed, Rejected):
                summary.rejected += 1
                rejects.write(line.number, parsed, line.raw)
            elif isinstance(parsed, Delete):  # a retraction applies after every page before it
                flush(drain=True)
                summary.deleted += dedup.remove(parsed.id)
                if alerts is not None:
                    alerts.retracted(parsed.id)
            else:
                pending.append((parsed, line.raw, clock_ms))
                pending_bytes += len(line.raw)
                if len(pending) >= batch_size or pending_bytes >= MAX_BATCH_BYTES:
                    flush()
        flush(drain=True)
        completed = True
    finally:  # what processes stopped early learnt is not handed back: a half-read run saves none
        signing.close(learnt=learnt and completed)
    summary.seconds = time.perf_counter() - started
    summary.dates_ignored = dedup.dates_ignored - ignored_before
    if alerts is not None and alerts.out is not None:
        summary.alerts = alerts.fired
    return summary


def _decide(
    pending: list[tuple[Page, bytes, int | None]],
    signed: list[SignedPage],
    dedup: Deduplicator,
    summary: BatchSummary,
    out: IO[bytes] | DecisionRecords,
    unique_out: IO[bytes] | None,
    alerts: SpreadAlerts | None,
) -> None:
    decisions = dedup.decide_signed(signed)
    for signed_page, decision, (page, raw, _) in zip(signed, decisions, pending, strict=True):
        prepared = signed_page.prepared
        summary.count(decision, site=page.site, flattened=prepared.flattened)
        out.write(orjson.dumps(decision.to_dict()) + b"\n")
        if unique_out is not None and decision.fullest_so_far and not decision.replayed:
            unique_out.write(raw + b"\n")
        if alerts is not None:
            alerts.decided(page, prepared, decision, dedup.index.ttl)
