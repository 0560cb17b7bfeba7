"""Stage 3, the one decide partition: batch's engine, fed signed pages in (clock, id) order.

Why one partition: deciding needs the whole window in one order, and the engine's step per page
(probe the buckets, verify, apply the rule, index) costs tens of microseconds, far less than
spreading it over partitions and settling their races did. So the window, its clusters and their
spread live here, in a :class:`~stream_lsh.core.dedup.Deduplicator`, and every page is decided by
the same code that decides it in batch: ``decide_signed`` for pages, ``remove`` for retractions,
:mod:`stream_lsh.core.spread_feed` for the spread. Batch and the stream agree by construction.

Order (:mod:`.order`): every site partition sends its signed pages, the retractions routed
through it, and then its release point. A page or retraction waits here (*held*,
:mod:`.holding`) until the smallest release point of all site partitions reaches its (clock, id);
then everything released is applied in (clock, id) order, as batch applies a file's lines. One at
or below what was released already is *late*, and is applied on arrival. Queries are never held:
they read the window as it is.

The same input record can come twice: read again after a crash before its offset was committed,
or sent again by a site partition that restarts (it sends a batch's outputs before it journals
the batch). A delivery already applied (the same page, clock and body), or an older one than
the page's last, is dropped: its decision went out when it was applied. One still held is held
once. A *redelivery* (the same page sent again, as a new record) is the engine's to answer.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np

from ..core.banding import Banding
from ..core.clock import EventTime
from ..core.config import DedupConfig
from ..core.decision import Decision
from ..core.dedup import Deduplicator, export_state, import_state
from ..core.names import sketch_from
from ..core.prepare import PreparedPage, SignedPage
from ..core.scheme import Scheme
from ..core.spread import STATE_FORMAT as SPREAD_FORMAT
from ..core.spread import AlertRules, SpreadTracker
from ..core.spread_feed import follow_decision, follow_retraction
from ..stores.disk_index import DEFAULT_CACHE_BYTES, DiskIndex, Row
from . import codec
from .holding import Holding
from .messages import DecideMessage, ReleaseMark, Retraction, SignedForDecision, pack_array, unpack_array
from .order import ReleasePoints
from .outbox import Outbox, Stage
from .telemetry import DecisionTiming, Gauges
from .waits import Wait

__all__ = ["Decider"]

Applied = SignedForDecision | Retraction
RECENT_MEMBERS = 20  # members a cluster record lists, newest last
REMEMBERED_GONE = 50_000  # deliveries remembered of pages that have left the window
# the rows kept beside a window on disk
_SPREAD, _DELIVERED, _HELD, _DECIDER = "spread/", "delivered/", "held/", "decider"


class Decider:
    """The decide partition (see the module doc).

    Args:
        config: the engine's settings (the scheme, the window, the rule).
        sources: the number of site partitions, to apply pages in (clock, id) order under their
            release points; None applies them in arrival order.
        alerts: the story-spread rules (None: clusters are followed for their records, no alerts).
        clock: seconds, for how long pages have been held (reports of stuck waits).
        window: a directory to keep the window in (:class:`~stream_lsh.stores.DiskIndex`, with the
            spread, deliveries and held pages as rows beside it; :meth:`take_rows`), opened as
            its rows left it; None keeps everything in memory (:meth:`snapshot`).
        cache_bytes: RocksDB's block cache of that directory.
    """

    stage: ClassVar[str] = Stage.DECIDE

    def __init__(
        self,
        config: DedupConfig,
        *,
        sources: int | None,
        alerts: AlertRules | None = None,
        clock: Callable[[], float] = time.monotonic,
        window: Path | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.disk: DiskIndex | None = None

        def open_window(scheme: Scheme, banding: Banding) -> DiskIndex:
            assert window is not None
            disk = DiskIndex(
                window, scheme, banding, bucket_cap=config.bucket_cap, ttl=config.ttl, cache_bytes=cache_bytes
            )
            disk.deferring = True  # the micro-batch's rows are the store's to write (take_rows)
            self.disk = disk
            return disk

        self.engine = Deduplicator(config, open_index=None if window is None else open_window)
        self.spread = SpreadTracker(alerts)  # its rules: None for no alerts
        self.points = ReleasePoints(sources) if sources is not None else None
        self.held: Holding[Applied] = Holding(_delivery, clock)
        # the last delivery (clock, body hash) applied of each page, oldest first: those of the
        # window's pages and of the last REMEMBERED_GONE that left it (see _applied_already)
        self.delivered: dict[str, tuple[int, int]] = {}
        self.newest: int | None = None  # the largest clock applied (arrival order's frontier)
        # with the window on disk: deliveries changed since the last rows (None: forgotten), and
        # how many were ever recorded (their order, which the rows keep)
        self._delivered_changes: dict[str, tuple[int, int, int] | None] = {}
        self._deliveries = 0
        if self.disk is not None:
            self.spread.track_changes()
            self.held.track_changes()
            self._load_rows(self.disk)
        # not state: who held the release point back, for reports of stuck waits (.waits)
        self._held_back_by: dict[int, list[int]] = {}

    # -- handling -------------------------------------------------------------------------------
    def replay(self, messages: Sequence[DecideMessage]) -> None:
        """:meth:`handle` for a journal's batch whose outputs were sent before (the window in
        memory, :class:`~.journal.Journal`): every step of deciding changes the window."""
        self.handle(messages)

    def handle(self, messages: Sequence[DecideMessage]) -> Outbox:
        out = Outbox()
        before = self._counts()
        for message in messages:
            if isinstance(message, ReleaseMark):
                self._release(message, out)
            elif isinstance(message, SignedForDecision) and message.query:
                self._answer(message, out)
            elif self._holds(message):
                self.held.hold(message)
            else:
                if self.points is not None and not (
                    isinstance(message, SignedForDecision) and self._applied_already(message)
                ):
                    # behind the release point, and news: decided after pages of later clocks, so
                    # its decision may differ from batch's (a redelivery changes nothing)
                    out.tally.late_ids.append(message.id)
                self._apply([message], out)
        out.tally.verified, out.tally.rejected, out.tally.evicted = (
            now - then for now, then in zip(self._counts(), before, strict=True)
        )
        return out

    def _counts(self) -> tuple[int, int, int]:
        """The engine's candidates verified and rejected, and bucket evictions, so far."""
        checks = self.engine.checks
        return checks["verified"], checks["rejected"], self.engine.index.evicted

    @property
    def late(self) -> int:
        """Pages and retractions that came at or below what was released already."""
        return self.held.late

    def _holds(self, message: Applied) -> bool:
        """Whether a page or retraction waits for the release point (not in arrival order, nor late)."""
        return self.points is not None and self.held.waits(message)

    def _release(self, mark: ReleaseMark, out: Outbox) -> None:
        if self.points is None:
            return
        self.points.update(mark.source, mark.mark)
        self._held_back_by[mark.source] = list(mark.held_back_by)
        low = self.points.low()
        ready = None if low is None else self.held.release(low)
        if ready is not None:
            self._apply(ready, out)

    def _apply(self, messages: list[Applied], out: Outbox) -> None:
        """Apply in order: runs of pages as one micro-batch of the engine, a retraction between them."""
        run: list[SignedForDecision] = []
        for message in messages:
            if isinstance(message, Retraction):
                self._decide(run, out)
                run = []
                self._retract(message, out)
            elif self._applied_already(message):
                continue
            else:
                run.append(message)
        self._decide(run, out)

    def _applied_already(self, page: SignedForDecision) -> bool:
        """A delivery this partition has applied already, or an older one than it applied: the
        same input record read again (a crash before its offset was committed) or a site
        partition's resend after a restart. Its decision went out when it was applied (outputs are
        sent before the state that holds them is journaled), so it is dropped: decided again, it
        would be judged against a window that has moved on, past its page's expiry perhaps, and
        an older version would replace the newer one."""
        known = self.delivered.get(page.id)
        if known is None:
            return False
        clock, body = known
        return page.clock < clock or (page.clock == clock and page.body_hash == body)

    def _decide(self, run: list[SignedForDecision], out: Outbox) -> None:
        if not run:
            return
        signed = [self._signed(page) for page in run]
        decisions = self.engine.decide_signed(signed)
        for page, prepared, decision in zip(run, signed, decisions, strict=True):
            self._decided(page, prepared.prepared, decision, out)
        self._clusters_out(out)
        self._forget_delivered()

    def _decided(
        self, page: SignedForDecision, prepared: PreparedPage, decision: Decision, out: Outbox
    ) -> None:
        self._saw(page.clock)
        if not decision.replayed:
            self.delivered.pop(page.id, None)  # to the end: the newest delivery
            self.delivered[page.id] = (page.clock, page.body_hash)
            if self.disk is not None:
                self._deliveries += 1
                self._delivered_changes[page.id] = (page.clock, page.body_hash, self._deliveries)
        alerts = follow_decision(
            self.spread,
            decision,
            site=page.site,
            clock_ms=prepared.clock_ms,
            event_time=prepared.time.seconds,
            ttl=self.engine.index.ttl,
        )
        if self.spread.rules is not None:
            out.alerts.extend((alert.key, alert.to_dict()) for alert in alerts)
        out.decisions.append((decision.id, decision.to_dict()))
        if decision.fullest_so_far and not decision.replayed and page.raw is not None:
            out.unique_pages.append((decision.id, page.raw.encode("utf-8")))
        out.tally.decided.append(DecisionTiming(page.received, page.event_time))

    def _retract(self, retraction: Retraction, out: Outbox) -> None:
        """As batch retracts at that line: the page leaves the window and its cluster."""
        self._saw(retraction.clock)
        self.engine.remove(retraction.id)
        follow_retraction(self.spread, retraction.id)
        self._clusters_out(out)

    def _saw(self, clock: int) -> None:
        self.newest = clock if self.newest is None else max(self.newest, clock)

    def _clusters_out(self, out: Outbox) -> None:
        """The new record of every cluster whose members changed (a tombstone for one left empty)."""
        for cluster_id in self.spread.take_touched():
            out.clusters.append((cluster_id, self.spread.record(cluster_id, RECENT_MEMBERS)))

    def _forget_delivered(self) -> None:
        """Remember the deliveries of the window's pages and of the last REMEMBERED_GONE pages that
        left it: a record read again comes seconds after the original, but in a backfill those
        seconds can carry the clock past the window."""
        excess = len(self.delivered) - len(self.engine.index) - REMEMBERED_GONE
        if excess > 0:
            index = self.engine.index
            for page_id in list(itertools.islice(self.delivered, 2 * excess)):
                if excess <= 0:
                    break
                if index.get(page_id) is None:
                    del self.delivered[page_id]
                    if self.disk is not None:
                        self._delivered_changes[page_id] = None
                    excess -= 1

    def _answer(self, query: SignedForDecision, out: Outbox) -> None:
        """A query's answer: the decision it would get now, with its cluster's spread."""
        decision = self.engine.query_signed(self._signed(query))
        answer = decision.to_dict()
        answer["correlation_id"] = answer.pop("id")
        if self.spread.rules is not None and decision.cluster_id is not None:
            spread = self.spread.spread(decision.cluster_id)
            answer["spread"] = None if spread is None else spread.to_dict()
        out.answers.append((query.id, answer))

    def _signed(self, page: SignedForDecision) -> SignedPage:
        """The engine's form of a signed page, from its wire form."""
        prepared = PreparedPage(
            id=page.id,
            lang=None,
            clock_ms=page.clock,
            time=EventTime(page.event_time, page.date_ignored),
            text="",
            content_hash=page.content_hash,
            body_hash=page.body_hash,
            headline=page.headline,
            notice=page.notice,
            listing=page.listing,
            site_headline=page.site_headline,
            site=page.site_key,
            part=page.part,
            names=sketch_from(
                unpack_array(page.names, "<u4", np.uint32),
                page.name_count,
                unpack_array(page.slots, "<u4", np.uint32),
            ),
        )
        return SignedPage(
            prepared,
            unpack_array(page.signature, "<u4", np.uint32),
            unpack_array(page.band_keys, "<u8", np.uint64),
            unpack_array(page.shingles, "<u8", np.uint64),
            page.opening,
            page.short,
            page.sentence_openings,
        )

    # -- what the guard and the metrics read -----------------------------------------------------
    def stalled(self, bound: float) -> list[Wait]:
        """The oldest held page, once, if the release point has not moved for ``bound`` seconds
        while pages wait: with the site partitions that hold it back, and their input partitions."""
        stuck = None if self.points is None else self.held.stuck(bound)
        if stuck is None or self.points is None:
            return []
        clock, page_id, waited = stuck
        sites = self.points.holding_back()
        inputs = sorted({source for site in sites for source in self._held_back_by.get(site, [])})
        cause = f"{self.held.waiting_text()}; site partitions {_listed(sites)} hold it back" + (
            f" (waiting for input partitions {_listed(inputs)})" if inputs else ""
        )
        return [Wait(Stage.DECIDE, 0, page_id, clock, waited, cause)]

    def gauges(self) -> Gauges:
        """Pages in the window, pages held for the release point and how long the oldest has waited,
        and how far every alert is out (see :class:`.telemetry.Gauges`)."""
        return Gauges(
            window_pages=len(self.engine.index),
            waiting=len(self.held),
            oldest_wait_s=self.held.longest_wait(),
            alerts_frontier_ms=None if self.spread.rules is None else self._frontier(),
        )

    def _frontier(self) -> float | None:
        """Every record before it has its alerts out: under release points, everything released
        (``clock + 0.5`` when the release point names a page at its clock); in arrival order, what
        arrived."""
        if self.points is None:
            return None if self.newest is None else self.newest + 0.5
        if self.held.released is None:
            return None
        clock, page = self.held.released
        return clock + 0.5 if page else float(clock)

    # -- durable form, with the window on disk: rows -------------------------------------------------
    def take_rows(self) -> list[Row]:
        """Every row the micro-batches since the last call changed: the window's (the engine's
        store), and beside it one row per changed cluster, delivery and held record, and one for
        the release points. Written in one atomic write (:meth:`DiskIndex.write_rows`), they leave
        the directory as this partition's state now is."""
        disk = self._disk()
        values: list[tuple[str, Any]] = [(f"{_SPREAD}{key}", row) for key, row in self.spread.take_changed()]
        values += [(f"{_DELIVERED}{page_id}", value) for page_id, value in self._delivered_changes.items()]
        values += [
            (f"{_HELD}{sequence:016x}", None if record is None else record.to_wire())
            for sequence, record in self.held.take_changes()
        ]
        values.append(
            (
                _DECIDER,
                {
                    "points": None if self.points is None else self.points.state(),
                    "newest": self.newest,
                    "holding": self.held.marks(),
                    "horizon": self.spread.horizon,
                    "deliveries": self._deliveries,
                },
            )
        )
        self._delivered_changes = {}
        return disk.take_rows() + disk.state_rows(values)

    def _load_rows(self, disk: DiskIndex) -> None:
        """This partition's state as its directory's rows left it (nothing: a new partition)."""
        row = disk.read_state(_DECIDER)
        if row is None:
            return
        clusters = [stored for _, stored in disk.read_states(_SPREAD)]
        self.spread.load_state({"format": SPREAD_FORMAT, "horizon": row["horizon"], "clusters": clusters})
        self.spread.track_changes()
        if self.points is not None and row["points"] is not None:
            self.points.load(row["points"])
        held = [
            (int(sequence, 16), cast(Applied, codec.from_wire(Stage.DECIDE, wire)))
            for sequence, wire in disk.read_states(_HELD)
        ]
        self.held.load_rows(row["holding"], held)
        deliveries = sorted(disk.read_states(_DELIVERED), key=lambda item: item[1][2])
        self.delivered = {page_id: (clock, body) for page_id, (clock, body, _) in deliveries}
        self._deliveries = row["deliveries"]
        self.newest = row["newest"]

    def _disk(self) -> DiskIndex:
        if self.disk is None:
            raise ValueError("this decide partition keeps its window in memory (a snapshot, not rows)")
        return self.disk

    def close(self) -> None:
        """Close the window's directory, writing nothing pending (its rows were not made durable)."""
        if self.disk is not None:
            self.disk.close()

    # -- durable form, with the window in memory: a snapshot ---------------------------------------
    def snapshot(self) -> dict[str, Any]:
        header, arrays = export_state(self.engine)
        return {
            "engine": header,
            "arrays": {name: _pack(values) for name, values in arrays.items()},
            "spread": self.spread.state(),
            "points": None if self.points is None else self.points.state(),
            "delivered": [[page_id, clock, body] for page_id, (clock, body) in self.delivered.items()],
            "newest": self.newest,
        } | self.held.state()

    def restore(self, state: dict[str, Any]) -> None:
        self.engine = Deduplicator(self.engine.config)
        import_state(self.engine, state["engine"], {k: _unpack(v) for k, v in state["arrays"].items()})
        self.spread = SpreadTracker(self.spread.rules)
        self.spread.load_state(state["spread"])
        if self.points is not None and state["points"] is not None:
            self.points.load(state["points"])
        self.held.load(state, lambda wire: cast(Applied, codec.from_wire(Stage.DECIDE, wire)))
        self.delivered = {page_id: (clock, body) for page_id, clock, body in state["delivered"]}
        self.newest = state["newest"]


def _delivery(message: Applied) -> tuple[object, ...] | None:
    """A held page's delivery (a site partition's resend is held once); a retraction has none."""
    if isinstance(message, SignedForDecision):
        return (message.id, message.clock, message.body_hash)
    return None


def _pack(values: np.ndarray) -> list[Any]:
    """An array of the engine's state as its dtype, shape and bytes (the messages' codec)."""
    return [values.dtype.str, list(values.shape), pack_array(values.ravel(), values.dtype.str)]


def _unpack(packed: list[Any]) -> np.ndarray:
    dtype, shape, data = packed
    values = unpack_array(data, dtype, np.dtype(dtype).type)
    assert values is not None  # _pack writes a string
    values.shape = tuple(shape)  # a fresh array (astype): its own to shape
    return values


def _listed(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers)) if numbers else "none"
