"""Stage 4, at the home partition (by page id): gather, settle races, decide, emit.

A page is *registered* here before any of its probes is sent, then every band partition it
probed answers with its candidates (already measured: each comes with its Jaccard similarity
and containment, estimated from the signatures).
Once all have answered, the page needs to know, for each candidate that matches
(and for an exact copy), whether that candidate is *earlier*:

* a **decided** candidate is earlier: it was decided before this page was;
* a candidate **in flight** (registered, not yet decided) is earlier if its ``(clock, id)``
  is smaller (the clock: its record's timestamp, the order batch and the band partitions use).
  Then this page waits for its decision (it will join its cluster). If it is larger,
  it is later: this page ignores it, and its home is told that this page is an earlier candidate
  for it, so the later one will wait for this one, whichever band partition saw whom first;
* a candidate its home no longer knows (expired, retracted) is gone.

The question goes to the candidate's home (an :class:`~.messages.Ask`; the answer is a
:class:`~.messages.Tell`), or is answered
locally when both pages live here. Waiting only ever goes from a larger ``(clock, id)`` to a
smaller one, so there are no cycles: every page gets exactly one final decision, once all its
bands and all its candidates are in.

A decided page is kept until its event time is older than the window for *every* band partition
(the smallest clock they report with their answers): a band partition can name it as a candidate
until then, and the page's home must still know its cluster. Expiring it by this partition's own
clock could say "gone" about a page batch still holds.

The decision itself is batch's: the exact copy if there is one, else the most similar earlier
candidate, ties going to the candidate batch would have met first (first band, then oldest in its
bucket); else the page is unique and founds a cluster named after itself (``id#2``... if a live
cluster already has that name). Outputs: the decision, the original page when unique, and the
cluster's new state (sent to the cluster's home, which owns it).

Queries take the same path but are never indexed, never asked about, and get an answer
instead of a decision.
"""

from __future__ import annotations

import dataclasses
import heapq
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from ..core.clock import clock_of_record
from ..core.decision import DUPLICATE, NO_CONTENT, UNIQUE, Decision, Match, cluster_name, decide
from ..core.spread import AlertRules, Member, SpreadTracker
from ..core.verification import Verification
from .candidates import LINK_BAND, Candidate, Exact, Need, needed
from .messages import (
    AnswerVia,
    Ask,
    BandAnswer,
    BandClock,
    Frontier,
    HomeMessage,
    Join,
    Leave,
    Registration,
    RetractionAtHome,
    Standing,
    Tell,
)
from .outbox import Outbox, Stage
from .routing import Layout
from .telemetry import DecisionTiming, Gauges
from .waits import Wait, clock_text

__all__ = ["Gather"]


def _canon(clock: int, page_id: str) -> tuple[int, str]:
    """The order that settles races between pages in flight: clock, then id (see .order)."""
    return (clock, page_id)


class _Said(NamedTuple):
    """What a candidate's home said about it (a :class:`Tell`)."""

    standing: Standing
    cluster: str | None
    cluster_home: int | None


class _Waiter(NamedTuple):
    """A delivery (of a page or a query) that waits for another page's decision, and where to
    tell it."""

    id: str
    clock: int
    body_hash: int
    home: int
    query: bool

    @classmethod
    def of(cls, ask: Ask) -> _Waiter:
        return cls(ask.asker, ask.clock, ask.asker_body_hash, ask.asker_home, ask.query)


@dataclass
class _Delivery:
    """One delivery of a page (or a query) on its way to a decision: what its band partitions and
    its candidates' homes have said so far."""

    id: str
    query: bool
    clock: int  # its record's timestamp: with the id, names the delivery in every message about it
    event_time: float | None
    date_ignored: str | None
    body_hash: int
    raw: str | None
    targets: set[int]
    no_content: bool = False
    answers: dict[int, BandAnswer] = field(default_factory=dict)  # band partition -> its answer
    links: dict[str, Candidate] = field(default_factory=dict)  # earlier pages in flight that saw this one
    status: dict[str, _Said] = field(default_factory=dict)  # candidate -> what its home said
    awaiting: set[str] = field(default_factory=set)
    resolved: bool = False  # all bands in
    delete_after: int | None = None  # the clock of a retraction after it: retract it once it is decided
    repeats: int = 0  # the same delivery again while in flight: each gets the decision
    site: str | None = None  # its source, carried to its cluster's spread

    @property
    def canon(self) -> tuple[int, str]:
        return _canon(self.clock, self.id)

    @property
    def ready(self) -> bool:
        """Every band partition has answered and every candidate's status is known."""
        return self.resolved and not self.awaiting


@dataclass
class _Done:
    clock: int
    event_time: float | None
    body_hash: int
    decision: Decision
    targets: list[int]
    cluster_home: int | None
    until: int | None = None  # in the history: the clock of the new version or retraction that ended it


@dataclass
class _Cluster:
    first: str
    live: dict[str, float | None] = field(default_factory=dict)  # members still indexed -> their event time
    members: deque[Any] = field(default_factory=lambda: deque(maxlen=20))  # the newest ones, for the output
    updated_at: float | None = None


class Gather:
    """One home partition."""

    stage: ClassVar[str] = Stage.HOMES

    def __init__(
        self,
        partition: int,
        layout: Layout,
        *,
        rule: Verification,
        ttl: float | None,
        alerts: AlertRules | None = None,
        ordered: bool = True,
        recent_members: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.partition = partition
        # when waits began (not state: for reports of stuck waits, see .waits)
        self._monotonic = clock
        self._loaded_at = clock()
        self._since: dict[tuple[bool, str, int, int], float] = {}  # a delivery -> registered (or loaded)
        self._resolved_at: dict[
            tuple[bool, str, int, int], float
        ] = {}  # ... -> all its band partitions had answered
        self._band_heard: dict[int, float] = {}  # band partition -> its last answer here
        self._received: dict[tuple[bool, str, int, int], int] = {}  # a delivery -> its record's timestamp
        self._reported: set[tuple[bool, str, int, int]] = set()
        self.layout = layout
        self.rule = rule
        self.ttl = ttl
        self.recent_members = recent_members
        self.flight: dict[str, list[_Delivery]] = {}  # a page's deliveries in flight, in clock order
        self.queries: dict[str, _Delivery] = {}
        self.done: dict[str, _Done] = {}  # a page's last decided delivery
        # a page's decided deliveries since replaced or retracted, kept while a band partition may
        # still ask about them (a question about a page as it stood before: see _ask)
        self.history: dict[str, list[_Done]] = {}
        self.clusters: dict[str, _Cluster] = {}
        # a delivery (id, clock, body hash) -> the deliveries that wait for its decision
        self.waiters: dict[tuple[str, int, int], list[_Waiter]] = {}
        self.band_clocks: dict[int, int] = {}  # the clock each band partition reported last
        self.clock_ms: int | None = None  # the smallest of them, once all have reported: moves the window
        self._expiry: list[
            tuple[float, int, str | None, str]
        ] = []  # (time, seq, cluster or None for a page, id)
        self._sequence = 0
        self._ended: list[tuple[int, str]] = []  # the history by when it ended: (until, page id)
        # story spread (see _spread_ready): the clusters this home owns, fed in clock order
        self.spread = SpreadTracker(alerts) if alerts is not None else None
        # in clock order (watermarks), joins wait for the homes' frontiers; in arrival order, which
        # promises no order, they are applied as they come and no frontier is kept
        self.ordered = ordered
        self.band_applied: dict[int, tuple[int, str]] = {}  # band partition -> applied up to (BandClock)
        self.frontiers: dict[int, tuple[int, str]] = {}  # home partition -> decided before (Frontier)
        self._frontier_sent: tuple[int, str] | None = None  # the last frontier this home announced
        self._spread_queue: list[tuple[int, str, int, int, Join | Leave]] = []  # a heap, see _queue
        self._spread_sequence = 0

    # -- durable form -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The whole state, as named JSON-friendly fields (see :mod:`stream_lsh.pipeline.journal`)."""
        return {
            "flight": [_delivery_state(d) for deliveries in self.flight.values() for d in deliveries],
            "queries": [_delivery_state(d) for d in self.queries.values()],
            "done": [_done_state(page_id, d) for page_id, d in self.done.items()],
            "history": [_done_state(page_id, d) for page_id, past in self.history.items() for d in past],
            "clusters": [
                {
                    "id": cluster_id,
                    "first": c.first,
                    "live": sorted(c.live.items()),
                    "members": list(c.members),
                    "updated_at": c.updated_at,
                }
                for cluster_id, c in self.clusters.items()
            ],
            "waiters": [
                {
                    "id": page_id,
                    "clock": clock,
                    "body_hash": body_hash,
                    "waiting": [w._asdict() for w in waiting],
                }
                for (page_id, clock, body_hash), waiting in self.waiters.items()
            ],
            "band_clocks": [[band, clock] for band, clock in self.band_clocks.items()],
            "clock": self.clock_ms,
            "expiry": [
                {"at": at, "sequence": sequence, "cluster": cluster, "id": page_id}
                for at, sequence, cluster, page_id in self._expiry
            ],
            "sequence": self._sequence,
            "spread": None if self.spread is None else self.spread.state(),
            "band_applied": [[band, list(mark)] for band, mark in self.band_applied.items()],
            "frontiers": [[home, list(mark)] for home, mark in self.frontiers.items()],
            "spread_queue": [
                [event.to_wire(), sequence] for _, _, _, sequence, event in sorted(self._spread_queue)
            ],
            "spread_sequence": self._spread_sequence,
            "frontier_sent": None if self._frontier_sent is None else list(self._frontier_sent),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Replace the state with one made by :meth:`snapshot`."""
        self.flight = {}
        for delivery in map(_delivery_from, state["flight"]):
            self.flight.setdefault(delivery.id, []).append(delivery)
        self.queries = {d.id: d for d in map(_delivery_from, state["queries"])}
        self.done = {row["id"]: _done_from(row) for row in state["done"]}
        self.history = {}
        for row in state["history"]:
            self.history.setdefault(row["id"], []).append(_done_from(row))
        self.clusters = {
            row["id"]: _Cluster(
                row["first"],
                dict(row["live"]),
                deque(row["members"], maxlen=self.recent_members),
                row["updated_at"],
            )
            for row in state["clusters"]
        }
        self.waiters = {
            (row["id"], row["clock"], row["body_hash"]): [_Waiter(**w) for w in row["waiting"]]
            for row in state["waiters"]
        }
        self.band_clocks = {band: clock for band, clock in state["band_clocks"]}
        self.clock_ms = state["clock"]
        self._expiry = [
            (item["at"], item["sequence"], item["cluster"], item["id"]) for item in state["expiry"]
        ]
        self._sequence = state["sequence"]
        self._restore_spread(state)
        self._ended = sorted(
            (d.until, page_id) for page_id, past in self.history.items() for d in past if d.until is not None
        )

    def _restore_spread(self, state: dict[str, Any]) -> None:
        """The spread's part of :meth:`restore` (absent from state written before alerts)."""
        self.band_applied = {band: (mark[0], mark[1]) for band, mark in state.get("band_applied", ())}
        self.frontiers = {home: (mark[0], mark[1]) for home, mark in state.get("frontiers", ())}
        self._spread_sequence = state.get("spread_sequence", 0)
        sent = state.get("frontier_sent")
        self._frontier_sent = None if sent is None else (sent[0], sent[1])
        self._spread_queue = []
        for wire, sequence in state.get("spread_queue", ()):
            event: Join | Leave = Join.from_wire(wire) if wire["k"] == Join.KIND else Leave.from_wire(wire)
            assert event.clock is not None
            rank = 1 if isinstance(event, Join) else 0
            heapq.heappush(self._spread_queue, (event.clock, event.member, rank, sequence, event))
        if self.spread is not None:
            self.spread = SpreadTracker(self.spread.rules)
            if state.get("spread") is not None:
                self.spread.load_state(state["spread"])

    # -- dispatch ---------------------------------------------------------------------------
    def handle(self, messages: Sequence[HomeMessage]) -> Outbox:
        out = Outbox()
        for message in messages:
            if isinstance(message, Registration):
                self._register(message)
            elif isinstance(message, BandAnswer):
                self._answer_in(message, out)
            elif isinstance(message, Ask):
                self._ask(message, out)
            elif isinstance(message, Tell):
                self._tell(message, out)
            elif isinstance(message, Join):
                self._join(message, out)
            elif isinstance(message, Leave):
                self._leave(message.cluster, message.member, out)
                self._queue(message, out)
            elif isinstance(message, RetractionAtHome):
                self._delete(message.id, message.clock, out)
            elif isinstance(message, BandClock):
                self._band_applied(message.band_partition, (message.clock, message.page))
            elif isinstance(message, AnswerVia):
                self._answer_with_spread(message, out)
            elif isinstance(message, Frontier):
                self._frontier_in(message.home, (message.clock, message.page))
            else:
                raise TypeError(f"a home partition got {type(message).__name__}")
        if self.spread is not None and self.ordered:
            self._announce_frontier(out)
            self._spread_ready(out)
        return out

    # -- registration and results ----------------------------------------------------------
    def _register(self, registration: Registration) -> None:
        """A delivery of a page (or a query) is on its way: its probes follow this record.

        A redelivery gets the decision its page got while the page is in the window; a new
        version, or the page again after it left the window, is a new delivery, decided after
        those before it (as batch meets them, in clock order)."""
        page_id, query = registration.id, registration.query
        delivery = _Delivery(
            page_id,
            query,
            registration.clock,
            registration.event_time,
            registration.date_ignored,
            registration.body_hash,
            registration.raw,
            set(registration.targets),
            registration.no_content,
            site=registration.site,
        )
        if query:
            if page_id not in self.queries:
                self.queries[page_id] = delivery
                self._since[self._key(delivery)] = self._monotonic()
            return
        flight = self.flight.setdefault(page_id, [])
        same = next(
            (d for d in flight if d.clock == delivery.clock and d.body_hash == delivery.body_hash), None
        )
        if same is not None:
            same.repeats += 1  # this very delivery again (a producer's retry, a redelivered registration)
            return
        # even a redelivery of a decided page waits for its band partitions' answers: a retraction
        # before it reaches this home through one of them, before its answer (see _settle)
        flight.append(delivery)
        flight.sort(key=lambda d: d.clock)  # registrations may come out of order: decisions may not
        self._since[self._key(delivery)] = self._monotonic()
        if registration.received is not None:
            self._received[self._key(delivery)] = registration.received

    def _replays(self, done: _Done | None, delivery: _Delivery) -> bool:
        """Whether a delivery is a redelivery of a decided page still in the window: batch gives it
        that page's decision again."""
        return (
            done is not None
            and done.body_hash == delivery.body_hash
            and not self._left_window(done.event_time, delivery.clock)
        )

    def _answer_in(self, answer: BandAnswer, out: Outbox) -> None:
        """A band partition's answer for a delivery."""
        band = answer.band_partition
        self._band_clock(band, answer.band_clock, out)
        self._band_heard[band] = self._monotonic()
        delivery = self._delivery(answer.id, answer.clock, answer.body_hash, answer.query)
        if delivery is None or band in delivery.answers:
            return  # decided already, or a repeat
        delivery.answers[band] = answer
        if len(delivery.answers) == len(delivery.targets):
            self._resolve(delivery, out)

    def _delivery(self, page_id: str, clock: int, body_hash: int, query: bool) -> _Delivery | None:
        """The delivery in flight that messages naming (``page_id``, ``clock``, ``body_hash``) are
        about (two deliveries can share a record timestamp: a producer's batch on a broker that
        stamps log-append time)."""
        if query:
            delivery = self.queries.get(page_id)
            return delivery if delivery is not None and delivery.body_hash == body_hash else None
        return next(
            (d for d in self.flight.get(page_id, ()) if d.clock == clock and d.body_hash == body_hash), None
        )

    @staticmethod
    def _key(delivery: _Delivery) -> tuple[bool, str, int, int]:
        return (delivery.query, delivery.id, delivery.clock, delivery.body_hash)

    def _candidates(self, delivery: _Delivery) -> list[Candidate]:
        """Candidates from every band partition, each once, in the order batch meets them."""
        best: dict[str, Candidate] = {}
        for answer in delivery.answers.values():
            for candidate in answer.candidates:
                known = best.get(candidate.id)
                if known is None or (candidate.band, candidate.position) < (known.band, known.position):
                    best[candidate.id] = candidate
        for page_id, link in delivery.links.items():
            best.setdefault(page_id, link)
        return sorted(best.values(), key=lambda c: (c.band, c.position))

    @staticmethod
    def _exact(delivery: _Delivery) -> Exact | None:
        return next((a.exact for a in delivery.answers.values() if a.exact is not None), None)

    def _resolve(self, delivery: _Delivery, out: Outbox) -> None:
        """All bands are in: wait for the status of every verified candidate. The band partitions
        that found them have asked their homes already (see Shard._ask_homes); only pages met the
        other way round (links: an earlier page found this one first) are asked from here."""
        delivery.resolved = True
        self._resolved_at[self._key(delivery)] = self._monotonic()
        if not delivery.no_content:
            wanted = needed(self._candidates(delivery), self._exact(delivery), self.rule)
            delivery.awaiting.update(
                c for c in wanted if c not in delivery.status
            )  # answers may have come already
            for candidate, need in wanted.items():
                if candidate in delivery.links and candidate not in delivery.status:
                    self._ask_about(delivery, candidate, need, out)
        self._maybe_decide(delivery, out)

    def _ask_about(self, delivery: _Delivery, candidate: str, need: Need, out: Outbox) -> None:
        delivery.awaiting.add(candidate)
        ask = Ask(
            candidate,
            delivery.id,
            self.partition,
            delivery.query,
            delivery.clock,
            delivery.body_hash,
            need.similarity,
            containment=need.containment,
        )
        home = need.home
        if home == self.partition:
            self._ask(ask, out)
        else:
            out.send(Stage.HOMES, home, ask)

    # -- questions between homes --------------------------------------------------------------
    def _ask(self, ask: Ask, out: Outbox) -> None:
        """Another page (the asker, read at its clock) asks whether this page is earlier: asked by
        a band partition on its behalf (with that partition's clock), or by its home for a link.
        The answer is about the delivery the asker met: the latest one before it."""
        if ask.band_partition is not None:
            self._band_clock(ask.band_partition, ask.band_clock, out)
        page_id, asker = ask.id, _canon(ask.clock, ask.asker)
        flight = self.flight.get(page_id, [])
        done = self.done.get(page_id)
        met: _Delivery | _Done | None
        if ask.query:  # a query meets the latest of them
            met = flight[-1] if flight else done
        else:
            met = self._met(page_id, asker)
            if met is None and not flight:
                met = done  # only a later one is left: its decision is the best answer there is
        ended = met.until if isinstance(met, _Done) else met.delete_after if met is not None else None
        waiter = _Waiter.of(ask)
        if ended is not None and _canon(ended, page_id) < asker:
            self._reply(waiter, page_id, _Said(Standing.GONE, None, None), out)  # retracted before the asker
        elif isinstance(met, _Done):
            self._reply(
                waiter, page_id, _Said(Standing.DECIDED, met.decision.cluster_id, met.cluster_home), out
            )
        elif met is not None:
            waiting = self.waiters.setdefault((page_id, met.clock, met.body_hash), [])
            if waiter not in waiting:  # several band partitions ask for the same page
                waiting.append(waiter)
        elif flight:  # the asker is earlier than every delivery: it ignores this page, which waits for it
            self._reply(waiter, page_id, _Said(Standing.LATER, None, None), out)
            if not flight:
                return  # the reply, told at this home, let the page be decided: nothing waits now
            first = flight[0]
            if ask.asker not in first.links and ask.asker not in first.status:
                link = Candidate(
                    ask.asker, ask.similarity, LINK_BAND, 0, ask.asker_home, ask.clock, ask.containment
                )
                first.links[ask.asker] = link
                if first.resolved and self.rule.match(link.similarity, link.contained):
                    self._ask_about(first, ask.asker, Need(link.home, link.similarity, link.contained), out)
        else:
            self._reply(waiter, page_id, _Said(Standing.GONE, None, None), out)

    def _met(self, page_id: str, asker: tuple[int, str]) -> _Delivery | _Done | None:
        """The delivery of a page that a page read at ``asker`` met in its band partitions: the
        latest one before it, decided (perhaps replaced or retracted since) or in flight. Band
        partitions apply probes and retractions in clock order, so that is the one they held."""
        done = self.done.get(page_id)
        known = [
            *self.history.get(page_id, ()),
            *(() if done is None else (done,)),
            *self.flight.get(page_id, ()),
        ]
        return max(
            (d for d in known if _canon(d.clock, page_id) < asker), key=lambda d: d.clock, default=None
        )

    def _reply(self, waiter: _Waiter, candidate: str, said: _Said, out: Outbox) -> None:
        """Tell a waiting delivery what ``candidate``'s home (this one) says about it."""
        tell = Tell(waiter.id, waiter.clock, waiter.body_hash, waiter.query, candidate, *said)
        if waiter.home == self.partition:
            self._tell(tell, out)
        else:
            out.send(Stage.HOMES, waiter.home, tell)

    def _tell(self, tell: Tell, out: Outbox) -> None:
        """A candidate's standing, for the delivery that asked; it may come before that delivery's
        bands are all in (the band partitions ask as they answer), and more than once (several of
        them ask)."""
        delivery = self._delivery(tell.asker, tell.asker_clock, tell.asker_body_hash, tell.query)
        candidate = tell.candidate
        if (
            delivery is None
            or candidate in delivery.status
            or (delivery.resolved and candidate not in delivery.awaiting)
        ):
            return
        delivery.awaiting.discard(candidate)
        delivery.status[candidate] = _Said(tell.standing, tell.cluster, tell.cluster_home)
        self._maybe_decide(delivery, out)

    # -- the decision ---------------------------------------------------------------------------
    def _maybe_decide(self, delivery: _Delivery, out: Outbox) -> None:
        if not delivery.ready:
            return
        if delivery.query:
            if self.queries.get(delivery.id) is delivery:
                self._answer(delivery, *self._conclusion(delivery), out)
            return
        self._settle(delivery.id, out)

    def _settle(self, page_id: str, out: Outbox) -> None:
        """Decide a page's ready deliveries in clock order (a later one waits for the earlier: the
        last decision is the one the compacted topic keeps, and each replaces the one before)."""
        flight = self.flight.get(page_id, [])
        while flight and flight[0].ready:
            delivery = flight.pop(0)
            previous = self.done.get(page_id)
            if previous is not None and self._replays(previous, delivery):
                self._timed(delivery, out)
                self._forget_times(delivery)
                for _ in range(1 + delivery.repeats):
                    self._emit(previous.decision, None, out)
                self._notify(delivery, previous.decision, previous.cluster_home, out)
            else:
                if (
                    previous is not None
                ):  # replaced by a new version, or left the window: batch removes it first
                    self._forget(page_id, delivery.clock, out)
                self._finish(delivery, *self._conclusion(delivery), out)
            if delivery.delete_after is not None and page_id in self.done:
                # retracted after this delivery (the band partitions apply it themselves)
                self._forget(page_id, delivery.delete_after, out)
        if not flight:
            self.flight.pop(page_id, None)
            done = self.done.get(page_id)
            if (
                done is not None
                and self.clock_ms is not None
                and self._left_window(done.event_time, self.clock_ms)
            ):
                del self.done[page_id]  # expired while deliveries of it were in flight

    def _conclusion(self, delivery: _Delivery) -> tuple[Decision, int | None]:
        """A ready delivery's decision (batch's rule, :func:`stream_lsh.core.decision.decide`, on what
        its band partitions and its candidates' homes said) and the home of its cluster."""
        status = delivery.status
        exact = None if delivery.no_content else self._exact(delivery)
        candidates = [] if delivery.no_content else self._candidates(delivery)
        decision = decide(
            delivery.id,
            signed=not delivery.no_content,
            exact=None if exact is None else self._match(exact.id, 1.0, 1.0, status),
            candidates=[self._match(c.id, c.similarity, c.containment, status) for c in candidates],
            rule=self.rule,
            founds=None if delivery.query else cluster_name(delivery.id, self.clusters),
        )
        if decision.status == DUPLICATE:
            assert decision.duplicate_of is not None
            cluster_home = status[decision.duplicate_of].cluster_home
        else:
            cluster_home = self.partition if decision.status == UNIQUE else None
        return dataclasses.replace(decision, date_ignored=delivery.date_ignored), cluster_home

    @staticmethod
    def _match(page_id: str, similarity: float, containment: float | None, status: dict[str, _Said]) -> Match:
        """A candidate for the rule: its cluster if its home said it is decided (an earlier page),
        else None (later, gone, or not asked about: not a match)."""
        said = status.get(page_id)
        cluster = said.cluster if said is not None and said.standing is Standing.DECIDED else None
        return Match(page_id, similarity, cluster, containment)

    def _answer(self, query: _Delivery, decision: Decision, cluster_home: int | None, out: Outbox) -> None:
        """A query's answer: the decision a page would have got, and, when it matched a cluster,
        that cluster's spread, added by the cluster's home (where the spread lives)."""
        self._forget_times(query)
        self.queries.pop(query.id, None)
        answer = _answer(decision)
        cluster = decision.cluster_id
        if self.spread is None or cluster is None or cluster_home is None:
            out.answers.append((query.id, answer))
        elif cluster_home == self.partition:
            self._answer_with_spread(AnswerVia(cluster, answer), out)
        else:
            out.send(Stage.HOMES, cluster_home, AnswerVia(cluster, answer))
        self._notify(query, decision, cluster_home, out)

    def _answer_with_spread(self, via: AnswerVia, out: Outbox) -> None:
        """Add the cluster's spread as this home has applied it so far (None: none of its joins is
        applied yet, as for a cluster founded moments ago: see _spread_ready)."""
        spread = None if self.spread is None else self.spread.spread(via.cluster)
        answer = {**via.answer, "spread": None if spread is None else spread.to_dict()}
        out.answers.append((answer["correlation_id"], answer))

    def _finish(self, delivery: _Delivery, decision: Decision, cluster_home: int | None, out: Outbox) -> None:
        self._timed(delivery, out)
        self._forget_times(delivery)
        if decision.status != NO_CONTENT:
            self.done[delivery.id] = _Done(
                delivery.clock,
                delivery.event_time,
                delivery.body_hash,
                decision,
                sorted(delivery.targets),
                cluster_home,
            )
            self._schedule(delivery.event_time, None, delivery.id)
            self._cluster_add(decision.cluster_id, cluster_home, delivery, out)
        self._emit(decision, delivery.raw, out)
        for _ in range(delivery.repeats):
            self._emit(decision, None, out)  # the same decision again; the page is unique-out once
        self._notify(delivery, decision, cluster_home, out)

    def _timed(self, delivery: _Delivery, out: Outbox) -> None:
        """Tell the metrics when a delivery about to be decided entered the stream."""
        out.tally.decided.append(DecisionTiming(self._received.get(self._key(delivery)), delivery.event_time))

    def _forget_times(self, delivery: _Delivery) -> None:
        key = self._key(delivery)
        for times in (self._since, self._resolved_at, self._received):
            times.pop(key, None)
        self._reported.discard(key)

    def _notify(self, delivery: _Delivery, decision: Decision, cluster_home: int | None, out: Outbox) -> None:
        standing = Standing.DECIDED if decision.status != NO_CONTENT else Standing.GONE
        said = _Said(standing, decision.cluster_id, cluster_home)
        for waiter in self.waiters.pop((delivery.id, delivery.clock, delivery.body_hash), ()):
            self._reply(waiter, delivery.id, said, out)

    @staticmethod
    def _emit(decision: Decision, raw: str | None, out: Outbox) -> None:
        out.decisions.append((decision.id, decision.to_dict()))
        if decision.status == UNIQUE and raw is not None:
            out.unique_pages.append((decision.id, raw.encode("utf-8")))

    # -- the guard ------------------------------------------------------------------------------
    def gauges(self) -> Gauges:
        """What this home holds now, for the metrics: decided pages kept, deliveries (pages and
        queries) not yet decided, and how long the oldest of those has waited (since it was
        registered, or since this state was loaded)."""
        waiting = sum(len(deliveries) for deliveries in self.flight.values()) + len(self.queries)
        # deliveries loaded with the state have waited since the load at least
        since = list(self._since.values()) + ([self._loaded_at] if len(self._since) < waiting else [])
        oldest = min(since) if waiting else None
        return Gauges(
            window_pages=len(self.done),
            waiting=waiting,
            oldest_wait_s=None if oldest is None else max(0.0, self._monotonic() - oldest),
            alerts_frontier_ms=self._alerts_frontier(),
        )

    def _alerts_frontier(self) -> float | None:
        """How far every join and leave of this home's clusters is applied (see
        :class:`~.telemetry.Gauges`): the homes' common frontier ``(clock, page)``, as ``clock``
        when it is a delivery still undecided at that clock, or ``clock + 0.5`` when it lies just
        past a page every band partition applied (``page + "\\x00"``, :meth:`_decided_frontier`);
        the first event still queued, if that comes first."""
        if self.spread is None or len(self.frontiers) < self.layout.homes:
            return None
        clock, page = min(self.frontiers.values())
        frontier = clock + 0.5 if page.endswith("\x00") else float(clock)
        return min(frontier, self._spread_queue[0][0]) if self._spread_queue else frontier

    def stalled(self, bound: float) -> list[Wait]:
        """Pages undecided for more than ``bound`` seconds whose wait has not moved for as long,
        each reported once: waiting for band partitions that have said nothing here since, or,
        with every band in, for the decision of a candidate (band partitions apply probes in
        clock order, so that wait is only ever a few messages long)."""
        now = self._monotonic()
        waits = []
        in_flight = [d for deliveries in self.flight.values() for d in deliveries]
        for delivery in (*in_flight, *self.queries.values()):
            key = self._key(delivery)
            waited = now - self._since.get(key, self._loaded_at)
            if waited <= bound or key in self._reported:
                continue
            cause = self._stuck_on(delivery, now, bound)
            if cause is not None:
                self._reported.add(key)
                waits.append(Wait("homes", self.partition, delivery.id, delivery.clock, waited, cause))
        return waits

    def _stuck_on(self, delivery: _Delivery, now: float, bound: float) -> str | None:
        if not delivery.resolved:
            missing = sorted(delivery.targets - delivery.answers.keys())
            silent = [band for band in missing if now - self._band_heard.get(band, self._loaded_at) > bound]
            if missing and len(silent) == len(missing):
                listed = ", ".join(map(str, missing))
                return f"band partitions {listed} to answer (nothing from them here for {bound:g} s)"
            return None
        if now - self._resolved_at.get(self._key(delivery), self._loaded_at) <= bound:
            return None
        if not delivery.awaiting:
            earlier = next((d for d in self.flight.get(delivery.id, ()) if not d.ready), None)
            return (
                None
                if earlier is None
                else f"an earlier delivery of the same page (clock {clock_text(earlier.clock)})"
            )
        homes = needed(self._candidates(delivery), self._exact(delivery), self.rule)
        waiting = ", ".join(
            f"{candidate} (home {homes[candidate].home if candidate in homes else '?'})"
            for candidate in sorted(delivery.awaiting)
        )
        return f"the decision of earlier candidates: {waiting}"

    # -- clusters -------------------------------------------------------------------------------
    def _cluster_add(self, cluster: str | None, home: int | None, delivery: _Delivery, out: Outbox) -> None:
        if cluster is None or home is None:
            return
        join = Join(cluster, delivery.id, delivery.event_time, delivery.clock, delivery.site)
        if home == self.partition:
            self._join(join, out)
        else:
            out.send(Stage.HOMES, home, join)

    def _join(self, join: Join, out: Outbox) -> None:
        cluster_id, member, event_time = join.cluster, join.member, join.event_time
        cluster = self.clusters.get(cluster_id)
        if cluster is None:
            cluster = self.clusters[cluster_id] = _Cluster(
                first=member, members=deque(maxlen=self.recent_members)
            )
        if member in cluster.live and cluster.live[member] == event_time:
            return  # a repeated join (redelivery)
        fresh = member not in cluster.live
        cluster.live[member] = event_time  # a new version of a member rejoins with its own time
        if fresh:
            cluster.members.append(member)
        if event_time is not None:
            cluster.updated_at = max(cluster.updated_at or event_time, event_time)
        self._schedule(event_time, cluster_id, member)
        out.clusters.append((cluster_id, self._cluster_record(cluster_id, cluster)))
        self._queue(join, out)

    def _leave(self, cluster_id: str, member: str, out: Outbox) -> None:
        cluster = self.clusters.get(cluster_id)
        if cluster is None or member not in cluster.live:
            return  # unknown, or retracted before it expired
        del cluster.live[member]
        if member in cluster.members:
            cluster.members.remove(member)
        if not cluster.live:
            del self.clusters[cluster_id]
            out.clusters.append((cluster_id, None))  # a tombstone: compaction forgets the cluster
        else:
            out.clusters.append((cluster_id, self._cluster_record(cluster_id, cluster)))

    @staticmethod
    def _cluster_record(cluster_id: str, cluster: _Cluster) -> dict[str, Any]:
        return {
            "cluster_id": cluster_id,
            "first": cluster.first,
            "size": len(cluster.live),
            "members": list(cluster.members),
            "updated_at": cluster.updated_at,
        }

    # -- story spread -----------------------------------------------------------------------------
    def _queue(self, event: Join | Leave, out: Outbox) -> None:
        """A join or leave of a cluster this home owns, for its spread. Batch feeds the tracker in
        decision order, which is clock order; joins reach this home in the order other homes
        decide. So they wait here, in (clock, page, leave before join) order, until every home's
        decided frontier has passed them (:meth:`_spread_ready`). Events without a clock (sent by
        a worker from before alerts) apply at once."""
        if self.spread is None:
            return
        if event.clock is None or not self.ordered:
            self._spread_apply(event, out)
            return
        self._spread_sequence += 1
        rank = 1 if isinstance(event, Join) else 0  # a new version's leave goes before its join
        heapq.heappush(self._spread_queue, (event.clock, event.member, rank, self._spread_sequence, event))

    def _band_applied(self, band: int, mark: tuple[int, str]) -> None:
        known = self.band_applied.get(band)
        if known is None or mark > known:
            self.band_applied[band] = mark

    def _frontier_in(self, home: int, mark: tuple[int, str]) -> None:
        known = self.frontiers.get(home)
        if known is None or mark > known:
            self.frontiers[home] = mark

    def _decided_frontier(self) -> tuple[int, str] | None:
        """The mark before which every page this home will ever see is decided, and its joins and
        leaves sent: after what every band partition has applied (each applies probes in
        (clock, id) order, sending answers, questions and retractions as it goes, and it only
        gets a page's probes once the page's registration is here), and before every delivery
        still in flight here."""
        if len(self.band_applied) < self.layout.bands:
            return None
        clock, page = min(self.band_applied.values())
        frontier = (clock, page + "\x00")  # the first mark after (clock, page)
        for deliveries in self.flight.values():
            for delivery in deliveries:
                frontier = min(frontier, (delivery.clock, delivery.id))
        return frontier

    def _announce_frontier(self, out: Outbox) -> None:
        """Tell every home this home's frontier when it moved, after this batch's joins and leaves
        (the same partition's messages stay in order)."""
        frontier = self._decided_frontier()
        if frontier is None or (self._frontier_sent is not None and frontier <= self._frontier_sent):
            return
        self._frontier_sent = frontier
        for home in range(self.layout.homes):
            if home == self.partition:
                self._frontier_in(home, frontier)
            else:
                out.send(Stage.HOMES, home, Frontier(self.partition, *frontier))

    def _spread_ready(self, out: Outbox) -> None:
        """Apply the queued joins and leaves no earlier one can still overtake."""
        if len(self.frontiers) < self.layout.homes:
            return
        before = min(self.frontiers.values())
        queue = self._spread_queue
        while queue and (queue[0][0], queue[0][1]) < before:
            self._spread_apply(heapq.heappop(queue)[-1], out)

    def _spread_apply(self, event: Join | Leave, out: Outbox) -> None:
        """The tracker calls batch makes for one page (:class:`stream_lsh.batch.SpreadAlerts`)."""
        spread = self.spread
        assert spread is not None
        if isinstance(event, Leave):
            spread.leave(event.cluster, event.member)
            return
        if event.clock is not None and self.ttl is not None:
            spread.expire(event.clock / 1000.0 - self.ttl)
        member = Member(event.member, event.source, event.event_time)
        for alert in spread.join(event.cluster, member):
            out.alerts.append((alert.key, alert.to_dict()))

    # -- retraction and expiry --------------------------------------------------------------------
    def _delete(self, page_id: str, clock: int, out: Outbox) -> None:
        """A retraction at ``clock`` retracts the delivery of the page before it, as batch removes
        the page as it stands at that line; deliveries after it stay. (The band partitions drop
        the page themselves, in clock order: ingest sends them the retraction too.)"""
        earlier = [d for d in self.flight.get(page_id, ()) if d.clock < clock]
        if earlier:
            earlier[-1].delete_after = clock  # decided first (others may be waiting for it), then retracted
        elif page_id in self.done and self.done[page_id].clock < clock:
            self._forget(page_id, clock, out)

    def _forget(self, page_id: str, until: int, out: Outbox) -> None:
        """A decided page is replaced (by a delivery read at ``until``) or retracted (at ``until``):
        it leaves its cluster, and moves to the history until every band partition is past
        ``until`` (one may still ask about the page as it stood before)."""
        done = self.done.pop(page_id)
        done.until = until
        self.history.setdefault(page_id, []).append(done)
        heapq.heappush(self._ended, (until, page_id))
        cluster = done.decision.cluster_id
        if cluster is None or done.cluster_home is None:
            return
        if done.cluster_home == self.partition:
            self._leave(cluster, page_id, out)
            self._queue(Leave(cluster, page_id, until), out)
        else:
            out.send(Stage.HOMES, done.cluster_home, Leave(cluster, page_id, until))

    def _end_history(self, clock_ms: int) -> None:
        """Every band partition is past ``clock_ms``: none will ask about a page as it stood
        before a new version or retraction read by then."""
        while self._ended and self._ended[0][0] <= clock_ms:
            until, page_id = heapq.heappop(self._ended)
            past = [d for d in self.history.get(page_id, ()) if d.until != until]
            if past:
                self.history[page_id] = past
            else:
                self.history.pop(page_id, None)

    def _schedule(self, event_time: float | None, cluster: str | None, page_id: str) -> None:
        """Expire a decided page (``cluster`` None) or a cluster's member at ``event_time + ttl``."""
        if self.ttl is not None and event_time is not None:
            self._sequence += 1
            heapq.heappush(self._expiry, (event_time, self._sequence, cluster, page_id))

    def _left_window(self, event_time: float | None, timestamp_ms: int) -> bool:
        """Whether a page of ``event_time`` is older than the window at a delivery's clock (the
        band partitions evict it by then, whatever this home's lagging clock says)."""
        clock = clock_of_record(timestamp_ms)
        return (
            self.ttl is not None
            and clock is not None
            and event_time is not None
            and event_time < clock / 1000.0 - self.ttl
        )

    def _band_clock(self, band: int, clock_ms: int | None, out: Outbox) -> None:
        """A band partition's answer says how far its clock has come; once every band partition
        has spoken, the smallest of their clocks moves this home's window."""
        known = self.band_clocks.get(band)
        if clock_ms is None or (known is not None and clock_ms <= known):
            return
        self.band_clocks[band] = clock_ms
        if len(self.band_clocks) == self.layout.bands:
            self._advance(min(self.band_clocks.values()), out)

    def _advance(self, clock_ms: int, out: Outbox) -> None:
        if self.clock_ms is not None and clock_ms <= self.clock_ms:
            return
        self.clock_ms = clock_ms
        self._end_history(clock_ms)
        if self.ttl is None:
            return
        horizon = clock_ms / 1000.0 - self.ttl
        while self._expiry and self._expiry[0][0] < horizon:
            stamp, _, cluster, page_id = heapq.heappop(self._expiry)
            if cluster is None:
                done = self.done.get(page_id)
                if done is not None and done.event_time == stamp and page_id not in self.flight:
                    del self.done[page_id]  # its bands expire on their own, by the same rule
                # (with deliveries of the page in flight, each judges the window at its own clock,
                # and the page expires once they are settled: see _settle)
            elif cluster in self.clusters and self.clusters[cluster].live.get(page_id, stamp) == stamp:
                self._leave(cluster, page_id, out)  # unless the member rejoined since, with another time


def _delivery_state(d: _Delivery) -> dict[str, Any]:
    return {
        "id": d.id,
        "query": d.query,
        "clock": d.clock,
        "event_time": d.event_time,
        "date_ignored": d.date_ignored,
        "body_hash": d.body_hash,
        "raw": d.raw,
        "targets": sorted(d.targets),
        "no_content": d.no_content,
        "answers": [answer.to_wire() for answer in d.answers.values()],
        "links": [list(link) for link in d.links.values()],
        "status": [
            {
                "candidate": candidate,
                "standing": said.standing.value,
                "cluster": said.cluster,
                "cluster_home": said.cluster_home,
            }
            for candidate, said in d.status.items()
        ],
        "awaiting": sorted(d.awaiting),
        "resolved": d.resolved,
        "delete_after": d.delete_after,
        "repeats": d.repeats,
        "site": d.site,
    }


def _delivery_from(state: dict[str, Any]) -> _Delivery:
    answers = (BandAnswer.from_wire(wire) for wire in state["answers"])
    links = (Candidate(*row) for row in state["links"])
    return _Delivery(
        state["id"],
        state["query"],
        state["clock"],
        state["event_time"],
        state["date_ignored"],
        state["body_hash"],
        state["raw"],
        set(state["targets"]),
        state["no_content"],
        {answer.band_partition: answer for answer in answers},
        {link.id: link for link in links},
        {
            said["candidate"]: _Said(Standing(said["standing"]), said["cluster"], said["cluster_home"])
            for said in state["status"]
        },
        set(state["awaiting"]),
        state["resolved"],
        state["delete_after"],
        state["repeats"],
        state.get("site"),  # deliveries snapshotted before alerts have none
    )


def _done_state(page_id: str, d: _Done) -> dict[str, Any]:
    return {
        "id": page_id,
        "clock": d.clock,
        "event_time": d.event_time,
        "body_hash": d.body_hash,
        "decision": d.decision.to_dict(),
        "targets": d.targets,
        "cluster_home": d.cluster_home,
        "until": d.until,
    }


def _done_from(state: dict[str, Any]) -> _Done:
    return _Done(
        state["clock"],
        state["event_time"],
        state["body_hash"],
        Decision.from_dict(state["decision"]),
        state["targets"],
        state["cluster_home"],
        state["until"],
    )


def _answer(decision: Decision) -> dict[str, Any]:
    record = decision.to_dict()
    record["correlation_id"] = record.pop("id")
    return record
