"""Stage 4, at the home partition (by page id): gather, settle races, decide, emit.

A page is *registered* here before any of its probes is sent, then every band partition it
probed answers with its candidates (already verified: each comes with its signature agreement).
Once all have answered, the page needs to know, for each candidate at or above the threshold
(and for an exact copy), whether that candidate is *earlier*:

* a **decided** candidate is earlier: it was decided before this page was;
* a candidate **in flight** (registered, not yet decided) is earlier if its ``(clock, id)``
  is smaller (the clock: its record's timestamp, the order batch and the band partitions use). Then this page waits for its decision (it will join its cluster). If it is larger,
  it is later: this page ignores it, and its home is told that this page is an earlier candidate
  for it, so the later one will wait for this one, whichever band partition saw whom first;
* a candidate its home no longer knows (expired, retracted) is gone.

The question goes to the candidate's home (an ``ask``; the answer is a ``tell``), or is answered
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

Queries (``q``) take the same path but are never indexed, never asked about, and get an answer
instead of a decision.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..core.dedup import DUPLICATE, NO_CONTENT, UNIQUE, Decision
from .outbox import Outbox, Stage
from .routing import Layout

__all__ = ["Gather"]

def _canon(clock: int, page_id: str) -> tuple[int, str]:
    """The order that settles races between pages in flight: clock, then id (see .order)."""
    return (clock, page_id)


@dataclass
class _Pending:
    id: str
    query: bool
    clock: int
    event_time: float | None
    date_ignored: str | None
    body_hash: int
    raw: str | None
    targets: set[int]
    results: dict[int, dict[str, Any]] = field(default_factory=dict)
    links: dict[str, list[Any]] = field(default_factory=dict)  # earlier pages in flight that saw this one
    status: dict[str, tuple[str, str | None, int | None]] = field(default_factory=dict)
    awaiting: set[str] = field(default_factory=set)
    resolved: bool = False  # all bands in, candidate statuses asked
    finished: bool = False  # decided (guards against a second decision from a late answer)
    delete_after: bool = False

    @property
    def canon(self) -> tuple[int, str]:
        return _canon(self.clock, self.id)


@dataclass
class _Done:
    event_time: float | None
    body_hash: int
    decision: Decision
    targets: list[int]
    cluster_home: int | None


@dataclass
class _Cluster:
    first: str
    live: set[str] = field(default_factory=set)  # members still indexed
    members: deque = field(default_factory=lambda: deque(maxlen=20))  # the newest ones, for the output
    updated_at: float | None = None


class Gather:
    """One home partition."""

    def __init__(self, partition: int, layout: Layout, *, threshold: float, ttl: float | None,
                 recent_members: int = 20) -> None:
        self.partition = partition
        self.layout = layout
        self.threshold = threshold
        self.ttl = ttl
        self.recent_members = recent_members
        self.pending: dict[str, _Pending] = {}
        self.queries: dict[str, _Pending] = {}
        self.done: dict[str, _Done] = {}
        self.clusters: dict[str, _Cluster] = {}
        self.waiters: dict[str, list[tuple[str, int, bool]]] = {}
        self.band_clocks: dict[int, int] = {}  # the clock each band partition reported last
        self.clock_ms: int | None = None  # the smallest of them, once all have reported: moves the window
        self._expiry: list[tuple[float, int, str | None, str]] = []  # (time, seq, cluster or None for a page, id)
        self._sequence = 0

    # -- durable form -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The whole state as plain data (see :mod:`stream_lsh.pipeline.journal`)."""
        return {
            "pending": [_pending_state(p) for p in self.pending.values()],
            "queries": [_pending_state(p) for p in self.queries.values()],
            "done": [[page_id, d.event_time, d.body_hash, d.decision.to_dict(), d.targets, d.cluster_home]
                     for page_id, d in self.done.items()],
            "clusters": [[cid, c.first, sorted(c.live), list(c.members), c.updated_at]
                         for cid, c in self.clusters.items()],
            "waiters": [[page_id, [list(w) for w in waiting]] for page_id, waiting in self.waiters.items()],
            "band_clocks": [[band, clock] for band, clock in self.band_clocks.items()],
            "clock": self.clock_ms,
            "expiry": [list(item) for item in self._expiry],
            "sequence": self._sequence,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Replace the state with one made by :meth:`snapshot`."""
        self.pending = {p.id: p for p in map(_pending_from, state["pending"])}
        self.queries = {p.id: p for p in map(_pending_from, state["queries"])}
        self.done = {page_id: _Done(event_time, body_hash, _decision_from(decision), targets, cluster_home)
                     for page_id, event_time, body_hash, decision, targets, cluster_home in state["done"]}
        self.clusters = {cid: _Cluster(first, set(live), deque(members, maxlen=self.recent_members), updated_at)
                         for cid, first, live, members, updated_at in state["clusters"]}
        self.waiters = {page_id: [tuple(w) for w in waiting] for page_id, waiting in state["waiters"]}  # type: ignore[misc]
        self.band_clocks = {band: clock for band, clock in state["band_clocks"]}
        self.clock_ms = state["clock"]
        self._expiry = [tuple(item) for item in state["expiry"]]  # type: ignore[misc]
        self._sequence = state["sequence"]

    # -- dispatch ---------------------------------------------------------------------------
    def handle(self, records: Sequence[dict[str, Any]]) -> Outbox:
        out = Outbox()
        for record in records:
            kind = record["k"]
            if kind == "reg":
                self._register(record, out)
            elif kind == "res":
                self._result(record, out)
            elif kind == "ask":
                self._ask(record, out)
            elif kind == "tell":
                self._tell(record, out)
            elif kind == "join":
                self._join(record, out)
            elif kind == "leave":
                self._leave(record["cl"], record["m"], out)
            elif kind == "delete":
                self._delete(record["id"], out)
            else:
                raise ValueError(f"a home partition got a record of kind {kind!r}")
        return out

    # -- registration and results ----------------------------------------------------------
    def _register(self, record: dict[str, Any], out: Outbox) -> None:
        page_id, query = record["id"], bool(record["q"])
        if query:
            pending = _Pending(page_id, True, record["c"], record["ts"], record["di"], record["bh"], None,
                               set(record["targets"]))
            if record["nc"]:
                out.answers.append((page_id, _answer(Decision(page_id, NO_CONTENT, None, date_ignored=record["di"]))))
            elif page_id not in self.queries:
                self.queries[page_id] = pending
            return
        done = self.done.get(page_id)
        if done is not None:
            if done.body_hash == record["bh"]:
                self._emit(done.decision, None, out)  # a redelivery: the same decision again
                return
            for partition in set(done.targets) - set(record["targets"]):  # the new version's probes replace the rest
                out.send(Stage.BANDS, partition, {"k": "remove", "id": page_id})
            self._forget(page_id, out)  # a new version replaces the old one
        current = self.pending.get(page_id)
        if current is not None and current.body_hash == record["bh"]:
            return  # registered twice while in flight
        pending = _Pending(page_id, False, record["c"], record["ts"], record["di"], record["bh"], record["raw"],
                           set(record["targets"]))
        if current is not None:
            pending.links = current.links
        if record["nc"]:
            self._finish(pending, Decision(page_id, NO_CONTENT, None, date_ignored=pending.date_ignored), None, out)
            return
        self.pending[page_id] = pending

    def _result(self, record: dict[str, Any], out: Outbox) -> None:
        self._band_clock(record["b"], record["wc"], out)
        table = self.queries if record["q"] else self.pending
        pending = table.get(record["id"])
        if pending is None or pending.body_hash != record["bh"] or record["b"] in pending.results:
            return  # decided already, or an answer for an older version, or a repeat
        pending.results[record["b"]] = record
        if len(pending.results) == len(pending.targets):
            self._resolve(pending, out)

    def _candidates(self, pending: _Pending) -> list[list[Any]]:
        """Candidates from every band partition, each once, in the order batch meets them."""
        best: dict[str, list[Any]] = {}
        for result in pending.results.values():
            for candidate in result["cands"]:
                known = best.get(candidate[0])
                if known is None or (candidate[2], candidate[3]) < (known[2], known[3]):
                    best[candidate[0]] = candidate
        for page_id, link in pending.links.items():
            best.setdefault(page_id, link)
        return sorted(best.values(), key=lambda c: (c[2], c[3]))

    def _exact(self, pending: _Pending) -> list[Any] | None:
        for result in pending.results.values():
            if result["ex"] is not None:
                return result["ex"]
        return None

    def _resolve(self, pending: _Pending, out: Outbox) -> None:
        """All bands are in: wait for the status of every verified candidate. The band partitions
        that found them have asked their homes already (see Shard._ask_homes); only pages met the
        other way round (links: an earlier page found this one first) are asked from here."""
        pending.resolved = True
        exact = self._exact(pending)
        wanted = {c[0]: (c[4], c[1]) for c in self._candidates(pending) if c[1] >= self.threshold}
        if exact is not None:
            wanted.setdefault(exact[0], (exact[1], 1.0))
        pending.awaiting.update(c for c in wanted if c not in pending.status)  # answers may have come already
        for candidate, (home, similarity) in wanted.items():
            if candidate in pending.links and candidate not in pending.status:
                self._ask_about(pending, candidate, home, similarity, out)
        self._maybe_decide(pending, out)

    def _ask_about(self, pending: _Pending, candidate: str, home: int, similarity: float, out: Outbox) -> None:
        pending.awaiting.add(candidate)
        ask = {"k": "ask", "id": candidate, "from": pending.id, "home": self.partition, "q": pending.query,
               "c": pending.clock, "sim": similarity}
        if home == self.partition:
            self._ask(ask, out)
        else:
            out.send(Stage.HOMES, home, ask)

    # -- questions between homes --------------------------------------------------------------
    def _ask(self, record: dict[str, Any], out: Outbox) -> None:
        """Another page (``from``) asks whether this page (``id``) is earlier than it: asked by a
        band partition on its behalf (with that partition's clock), or by its home for a link."""
        if "b" in record:
            self._band_clock(record["b"], record["wc"], out)
        page_id = record["id"]
        done = self.done.get(page_id)
        if done is not None:
            self._reply(record, "decided", done.decision.cluster_id, done.cluster_home, out)
            return
        pending = self.pending.get(page_id)
        if pending is None:
            self._reply(record, "gone", None, None, out)
        elif record["q"] or pending.canon < _canon(record["c"], record["from"]):
            waiter = (record["from"], record["home"], bool(record["q"]))
            waiting = self.waiters.setdefault(page_id, [])
            if waiter not in waiting:  # several band partitions ask for the same page
                waiting.append(waiter)
        else:  # the asker is earlier: it ignores this page, and this page must wait for it
            self._reply(record, "later", None, None, out)
            if record["from"] not in pending.links and record["from"] not in pending.status:
                pending.links[record["from"]] = [record["from"], record["sim"], 1 << 30, 0, record["home"], record["c"]]
                if pending.resolved and record["sim"] >= self.threshold:
                    self._ask_about(pending, record["from"], record["home"], record["sim"], out)

    def _reply(self, ask: dict[str, Any], status: str, cluster: str | None, cluster_home: int | None,
               out: Outbox) -> None:
        tell = {"k": "tell", "id": ask["from"], "q": ask["q"], "c": ask["id"], "st": status, "cl": cluster,
                "clh": cluster_home}
        if ask["home"] == self.partition:
            self._tell(tell, out)
        else:
            out.send(Stage.HOMES, ask["home"], tell)

    def _tell(self, record: dict[str, Any], out: Outbox) -> None:
        """A candidate's status; it may come before this page's bands are all in (the band
        partitions ask as they answer), and more than once (several of them ask)."""
        pending = (self.queries if record["q"] else self.pending).get(record["id"])
        candidate = record["c"]
        if pending is None or candidate in pending.status or (pending.resolved and candidate not in pending.awaiting):
            return
        pending.awaiting.discard(candidate)
        pending.status[candidate] = (record["st"], record["cl"], record["clh"])
        self._maybe_decide(pending, out)

    # -- the decision ---------------------------------------------------------------------------
    def _maybe_decide(self, pending: _Pending, out: Outbox) -> None:
        if pending.awaiting or not pending.resolved or pending.finished:
            return
        pending.finished = True
        decision, cluster_home = self._verdict(pending)
        self._finish(pending, dataclasses.replace(decision, date_ignored=pending.date_ignored), cluster_home, out)

    def _verdict(self, pending: _Pending) -> tuple[Decision, int | None]:
        """Batch's rule on what this page's band partitions and candidates' homes said: the
        decision, and the home of the cluster it joins or founds."""
        exact = self._exact(pending)
        page_id = pending.id
        if exact is not None and pending.status.get(exact[0], ("",))[0] == "decided":
            _, cluster, cluster_home = pending.status[exact[0]]
            return Decision(page_id, DUPLICATE, cluster, exact[0], 1.0, 1), cluster_home
        candidates = self._candidates(pending)
        eligible = [c for c in candidates if c[1] < self.threshold or pending.status.get(c[0], ("",))[0] == "decided"]
        if not eligible:
            return Decision(page_id, UNIQUE, self._new_cluster(pending), None, None, len(candidates)), self.partition
        best = max(eligible, key=lambda c: c[1])  # max() keeps the first of equals: the one batch meets first
        if best[1] >= self.threshold:
            _, cluster, cluster_home = pending.status[best[0]]
            return Decision(page_id, DUPLICATE, cluster, best[0], best[1], len(candidates)), cluster_home
        return Decision(page_id, UNIQUE, self._new_cluster(pending), None, best[1], len(candidates)), self.partition

    def _new_cluster(self, pending: _Pending) -> str | None:
        if pending.query:
            return None
        candidate, n = pending.id, 1
        while candidate in self.clusters:
            n += 1
            candidate = f"{pending.id}#{n}"
        return candidate

    def _finish(self, pending: _Pending, decision: Decision, cluster_home: int | None, out: Outbox) -> None:
        if pending.query:
            self.queries.pop(pending.id, None)
            out.answers.append((pending.id, _answer(decision)))
            self._notify(pending.id, decision, cluster_home, out)
            return
        self.pending.pop(pending.id, None)
        if decision.status != NO_CONTENT:
            self.done[pending.id] = _Done(pending.event_time, pending.body_hash, decision, sorted(pending.targets),
                                          cluster_home)
            self._schedule(pending.event_time, None, pending.id)
            self._cluster_add(decision.cluster_id, cluster_home, pending.id, pending.event_time, out)
        self._emit(decision, pending.raw, out)
        self._notify(pending.id, decision, cluster_home, out)
        if pending.delete_after:
            self._delete(pending.id, out)

    def _notify(self, page_id: str, decision: Decision, cluster_home: int | None, out: Outbox) -> None:
        for asker, home, query in self.waiters.pop(page_id, ()):
            status = "decided" if decision.status != NO_CONTENT else "gone"
            self._reply({"from": asker, "home": home, "q": query, "id": page_id}, status, decision.cluster_id,
                        cluster_home, out)

    @staticmethod
    def _emit(decision: Decision, raw: str | None, out: Outbox) -> None:
        out.decisions.append((decision.id, decision.to_dict()))
        if decision.status == UNIQUE and raw is not None:
            out.unique_pages.append((decision.id, raw.encode("utf-8")))

    # -- clusters -------------------------------------------------------------------------------
    def _cluster_add(self, cluster: str | None, home: int | None, member: str, event_time: float | None,
                     out: Outbox) -> None:
        record = {"k": "join", "cl": cluster, "m": member, "ts": event_time}
        if home == self.partition:
            self._join(record, out)
        elif home is not None:
            out.send(Stage.HOMES, home, record)

    def _join(self, record: dict[str, Any], out: Outbox) -> None:
        cluster_id, member = record["cl"], record["m"]
        cluster = self.clusters.get(cluster_id)
        if cluster is None:
            cluster = self.clusters[cluster_id] = _Cluster(first=member, members=deque(maxlen=self.recent_members))
        if member in cluster.live:
            return  # a repeated join (redelivery)
        cluster.live.add(member)
        cluster.members.append(member)
        if record["ts"] is not None:
            cluster.updated_at = max(cluster.updated_at or record["ts"], record["ts"])
        self._schedule(record["ts"], cluster_id, member)
        out.clusters.append((cluster_id, self._cluster_record(cluster_id, cluster)))

    def _leave(self, cluster_id: str, member: str, out: Outbox) -> None:
        cluster = self.clusters.get(cluster_id)
        if cluster is None or member not in cluster.live:
            return  # unknown, or retracted before it expired
        cluster.live.discard(member)
        if member in cluster.members:
            cluster.members.remove(member)
        if not cluster.live:
            del self.clusters[cluster_id]
            out.clusters.append((cluster_id, None))  # a tombstone: compaction forgets the cluster
        else:
            out.clusters.append((cluster_id, self._cluster_record(cluster_id, cluster)))

    @staticmethod
    def _cluster_record(cluster_id: str, cluster: _Cluster) -> dict[str, Any]:
        return {"cluster_id": cluster_id, "first": cluster.first, "size": len(cluster.live),
                "members": list(cluster.members), "updated_at": cluster.updated_at}

    # -- retraction and expiry --------------------------------------------------------------------
    def _delete(self, page_id: str, out: Outbox) -> None:
        pending = self.pending.get(page_id)
        if pending is not None:
            pending.delete_after = True  # decided first (others may be waiting for it), then retracted
            return
        if page_id in self.done:
            for partition in self.done[page_id].targets:
                out.send(Stage.BANDS, partition, {"k": "remove", "id": page_id})
            self._forget(page_id, out)

    def _forget(self, page_id: str, out: Outbox) -> None:
        done = self.done.pop(page_id)
        cluster = done.decision.cluster_id
        if cluster is None or done.cluster_home is None:
            return
        if done.cluster_home == self.partition:
            self._leave(cluster, page_id, out)
        else:
            out.send(Stage.HOMES, done.cluster_home, {"k": "leave", "cl": cluster, "m": page_id})

    def _schedule(self, event_time: float | None, cluster: str | None, page_id: str) -> None:
        """Expire a decided page (``cluster`` None) or a cluster's member at ``event_time + ttl``."""
        if self.ttl is not None and event_time is not None:
            self._sequence += 1
            heapq.heappush(self._expiry, (event_time, self._sequence, cluster, page_id))

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
        if self.ttl is None:
            return
        horizon = clock_ms / 1000.0 - self.ttl
        while self._expiry and self._expiry[0][0] < horizon:
            stamp, _, cluster, page_id = heapq.heappop(self._expiry)
            if cluster is None:
                done = self.done.get(page_id)
                if done is not None and done.event_time == stamp:
                    del self.done[page_id]  # its bands expire on their own, by the same rule
            elif cluster in self.clusters:
                self._leave(cluster, page_id, out)


def _pending_state(p: _Pending) -> list[Any]:
    return [p.id, p.query, p.clock, p.event_time, p.date_ignored, p.body_hash, p.raw, sorted(p.targets),
            [[band, result] for band, result in p.results.items()], [[k, v] for k, v in p.links.items()],
            [[k, list(v)] for k, v in p.status.items()], sorted(p.awaiting), p.resolved, p.finished, p.delete_after]


def _pending_from(state: list[Any]) -> _Pending:
    (page_id, query, clock, event_time, date_ignored, body_hash, raw, targets, results, links, status, awaiting,
     resolved, finished, delete_after) = state
    return _Pending(page_id, query, clock, event_time, date_ignored, body_hash, raw, set(targets),
                    {band: r for band, r in results},
                    {k: v for k, v in links}, {k: tuple(v) for k, v in status}, set(awaiting),  # type: ignore[misc]
                    resolved, finished, delete_after)


def _decision_from(record: dict[str, Any]) -> Decision:
    return Decision(record["id"], record["status"], record["cluster_id"], record["duplicate_of"],
                    record["similarity"], record["candidates"], record.get("date_ignored"))


def _answer(decision: Decision) -> dict[str, Any]:
    record = decision.to_dict()
    record["correlation_id"] = record.pop("id")
    return record
