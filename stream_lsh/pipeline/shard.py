"""Stage 3, at the band partition: the band table for the keys this partition owns.

Probes are applied one by one in the order they arrive (Kafka keeps it per partition), or, with
watermarks (``sources``), in (clock, id) order as the site partitions' marks release them
(:mod:`stream_lsh.pipeline.order`): look up the page's keys, verify every candidate against its
stored signature, answer the page's home, then insert the page. The band table is the kernel's
:class:`~stream_lsh.core.window.BandWindow`, batch's own: buckets with their cap, the window, the
exact-content map. The partition owning a page's content hash also answers the
exact-duplicate question (MMDS sec. 3.9.1).

Each candidate is reported with where it was first seen, ``(band, position in that bucket)``, so
the home can rebuild the candidate order batch uses across all partitions and break ties the same
way.

Redelivery is harmless: a probe for a page already held with the same body is answered again and
inserted nothing; with another body it replaces the old version. The clock of the probes moves
the window, as in batch: a page leaves when the clock passes its event time plus ``ttl``; so
applied in clock order, every band partition holds exactly the pages batch's index holds when it
meets the same page. Each answer carries this clock (``wc``), which tells the homes how far every
band partition has come (they keep a decided page as long as a band partition can still name it).

:meth:`snapshot` and :meth:`restore` carry the whole state as plain JSON-friendly data, so the
stream can make it durable (:mod:`stream_lsh.pipeline.journal`) without pickle.
"""

from __future__ import annotations

import base64
import heapq
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..core.clock import clock_of_record
from ..core.verification import Verification, estimate
from ..core.window import BandWindow
from .candidates import Candidate, Exact, needed
from .messages import (
    Ask,
    BandAnswer,
    BandClock,
    BandMark,
    BandMessage,
    Probe,
    Retraction,
    RetractionAtHome,
)
from .order import Mark, ReleasePoints, decode_mark, encode_mark
from .outbox import Outbox, Stage
from .telemetry import Gauges
from .waits import Wait, clock_text

__all__ = ["Shard"]


@dataclass
class _Entry:
    signature: np.ndarray
    keys: list[int]
    content_hash: int | None
    body_hash: int
    event_time: float | None  # None: never expires
    home: int


def _latest(clock_ms: int | None) -> Mark | None:
    """Every page at ``clock_ms`` or before: the mark after any id at that clock."""
    return None if clock_ms is None else (clock_ms, "\U0010ffff")


def _signature(encoded: str) -> np.ndarray:
    """A signature as the signer sends it: base64 of little-endian uint32 values."""
    return np.frombuffer(base64.b64decode(encoded), dtype="<u4").astype(np.uint32)


class Shard:
    """One band partition."""

    stage: ClassVar[str] = Stage.BANDS

    def __init__(
        self,
        partition: int,
        *,
        bucket_cap: int,
        ttl: float | None,
        rule: Verification,
        sources: int | None = None,
        homes: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.partition = partition
        # with ``homes``, every home hears this partition's clock after each batch (BandClock)
        self.homes = homes
        self._told: Mark | None = None  # the mark the homes last heard from here
        # when the held probes last moved (not state: for reports of stuck waits, see .waits)
        self._monotonic = clock
        self._moved_at = clock()
        self._stall_reported = False
        self._held_back_by: dict[int, list[int]] = {}  # site partition -> input partitions holding it back
        self.rule = rule  # candidates it matches are asked about (see _ask_homes)
        # with ``sources`` (site partitions), probes are applied in (clock, id) order as the site
        # partitions' watermarks release them: see stream_lsh.pipeline.order
        self.marks = ReleasePoints(sources) if sources is not None else None
        self.released: Mark | None = None  # every probe up to here has been applied
        self.held: list[tuple[int, str, int, Probe | Retraction]] = []  # a heap of probes waiting
        self._held_sequence = 0
        self._held_since: dict[int, float] = {}  # held sequence -> when it came (not state: a metric)
        self.late = 0  # probes applied at once because they came after the watermark (not state: a metric)
        self.window: BandWindow[_Entry] = BandWindow(bucket_cap=bucket_cap, ttl=ttl)

    @property
    def entries(self) -> dict[str, _Entry]:
        return self.window.entries

    @property
    def clock_ms(self) -> int | None:
        """The newest clock applied: it moves the window."""
        return self.window.clock_ms

    def __len__(self) -> int:
        return len(self.window)

    def handle(self, messages: Sequence[BandMessage]) -> Outbox:
        out = Outbox()
        late = self.late
        for message in messages:
            if isinstance(message, BandMark):
                self._watermark(message, out)
            elif self._holds(message):
                if not self.held:
                    self._moved()
                self._held_sequence += 1
                self._held_since[self._held_sequence] = self._monotonic()
                heapq.heappush(self.held, (message.clock, message.id, self._held_sequence, message))
            else:
                self._apply(message, out)
        out.tally.late_probes = self.late - late
        self._tell_clock(out)
        return out

    def _tell_clock(self, out: Outbox) -> None:
        """Tell every home how far this partition has applied the probes, when that moved: under
        watermarks, the release point (every probe up to it is applied, in order); in arrival
        order, which promises no order, the newest clock. A home's decided frontier rests on
        every band partition's (see :class:`.gather.Gather`)."""
        if self.homes is None:
            return
        mark = self.released if self.marks is not None else _latest(self.clock_ms)
        if mark is None or (self._told is not None and mark <= self._told):
            return
        self._told = mark
        for home in range(self.homes):
            out.send(Stage.HOMES, home, BandClock(self.partition, *mark))

    def _apply(self, message: Probe | Retraction, out: Outbox) -> None:
        """A probe, or a retraction: batch removes the page as it stands at that line. One band
        partition passes the retraction on to the page's home after its answers to every delivery
        before it, so the home retracts the right one (straight from ingest it could overtake a
        delivery's registration)."""
        if isinstance(message, Probe):
            self._probe(message, out)
            return
        self.window.remove(message.id)
        if message.tell == self.partition:
            out.send(Stage.HOMES, message.home, RetractionAtHome(message.id, message.clock))

    def _holds(self, message: Probe | Retraction) -> bool:
        """Whether a probe (or a retraction) waits for the watermark: not queries, nor late ones."""
        if self.marks is None or message.query:
            return False
        if self.released is None or (message.clock, message.id) > self.released:
            return True
        self.late += 1
        return False

    def _watermark(self, message: BandMark, out: Outbox) -> None:
        if self.marks is None:
            return
        self.marks.update(message.source, message.mark)
        self._held_back_by[message.source] = list(message.held_back_by)
        low = self.marks.low()
        if low is None or (self.released is not None and low <= self.released):
            return
        self.released = low
        self._moved()
        while self.held and (self.held[0][0], self.held[0][1]) <= low:
            _, _, sequence, held = heapq.heappop(self.held)
            self._held_since.pop(sequence, None)
            self._apply(held, out)

    def _moved(self) -> None:
        self._moved_at = self._monotonic()
        self._stall_reported = False

    def stalled(self, bound: float) -> list[Wait]:
        """The oldest held probe, once, if the release point has not moved for ``bound`` seconds
        while probes wait: with the site partitions that hold it back, and their input partitions."""
        waited = self._monotonic() - self._moved_at
        if not self.held or self._stall_reported or waited <= bound or self.marks is None:
            return []
        self._stall_reported = True
        clock, page_id, _, _ = self.held[0]
        sites = self.marks.holding_back()
        inputs = sorted({source for site in sites for source in self._held_back_by.get(site, [])})
        released = "nothing yet" if self.released is None else f"clock {clock_text(self.released[0])}"
        cause = (
            f"the watermark: {len(self.held)} probes held, released up to {released}; site partitions "
            f"{_listed(sites)} hold it back"
            + (f" (waiting for input partitions {_listed(inputs)})" if inputs else "")
        )
        return [Wait("bands", self.partition, page_id, clock, waited, cause)]

    def gauges(self) -> Gauges:
        """What this partition holds now, for the metrics: pages indexed, probes held, and how long
        the oldest held probe has waited (since it came, or since this state was loaded)."""
        oldest = next(iter(self._held_since.values()), None) if self.held else None
        return Gauges(
            window_pages=len(self.window),
            waiting=len(self.held),
            oldest_wait_s=None if oldest is None else max(0.0, self._monotonic() - oldest),
        )

    def snapshot(self) -> dict[str, Any]:
        """The whole state; buckets keep their order (it breaks ties) and the expiry heap its layout."""
        state = self._snapshot()
        if self.homes is not None:
            state["told"] = encode_mark(self._told)
        if self.marks is not None:
            state.update(
                marks=self.marks.state(),
                released=encode_mark(self.released),
                held=[
                    {
                        "mark": encode_mark((clock, page_id)),
                        "sequence": sequence,
                        "message": message.to_wire(),
                    }
                    for clock, page_id, sequence, message in self.held
                ],
                held_sequence=self._held_sequence,
            )
        return state

    def _snapshot(self) -> dict[str, Any]:
        """The window's entries as named columns (one list per field: they are many, and a
        field name per entry would be a tenth of the snapshot), in the order they were indexed."""
        entries = self.entries.values()
        return {
            "entries": {
                "id": list(self.entries),
                "signature": [
                    base64.b64encode(e.signature.astype("<u4").tobytes()).decode("ascii") for e in entries
                ],
                "keys": [e.keys for e in entries],
                "content_hash": [e.content_hash for e in entries],
                "body_hash": [e.body_hash for e in entries],
                "event_time": [e.event_time for e in entries],
                "home": [e.home for e in entries],
            },
            **self.window.tables(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Replace the state with one made by :meth:`snapshot`."""
        columns = state["entries"]
        rows = zip(
            columns["id"],
            columns["signature"],
            columns["keys"],
            columns["content_hash"],
            columns["body_hash"],
            columns["event_time"],
            columns["home"],
            strict=True,
        )
        entries = {
            page_id: _Entry(_signature(signature), keys, content_hash, body_hash, event_time, home)
            for page_id, signature, keys, content_hash, body_hash, event_time, home in rows
        }
        self.window.load(entries, state)
        self._told = decode_mark(state.get("told"))
        if self.marks is not None:
            self.marks.load(state["marks"])
            self.released = decode_mark(state["released"])
            self.held = []
            for held in state["held"]:
                clock, page_id = decode_mark(held["mark"])  # type: ignore[misc]
                wire = held["message"]
                message = Probe.from_wire(wire) if wire["k"] == Probe.KIND else Retraction.from_wire(wire)
                self.held.append((clock, page_id, held["sequence"], message))
            self._held_sequence = state["held_sequence"]
            loaded = self._monotonic()
            self._held_since = dict.fromkeys(sorted(sequence for _, _, sequence, _ in self.held), loaded)

    def _probe(self, probe: Probe, out: Outbox) -> None:
        page_id, query = probe.id, probe.query
        if not query:  # first, as in batch: a redelivery after its page left the window is a new page
            self.window.advance(clock_of_record(probe.clock))
        known = None if query else self.entries.get(page_id)
        # a probe with neither keys nor content hash here holds nothing: it only replaces an old version
        insert = not query and (bool(probe.keys) or probe.content_hash is not None)
        if known is not None:
            if known.body_hash == probe.body_hash:
                insert = False  # a redelivery: answer again, change nothing
            else:
                self.window.remove(page_id)  # a new version replaces the old one
        signature = None if probe.signature is None else _signature(probe.signature)
        exact = self._exact(probe.content_hash, page_id)
        candidates = self._candidates(probe.keys, signature, page_id)
        verified = sum(bool(self.rule.match(c.similarity, c.contained)) for c in candidates)
        out.tally.verified += verified
        out.tally.rejected += len(candidates) - verified
        answer = BandAnswer(
            page_id, query, self.partition, probe.clock, probe.body_hash, self.clock_ms, exact, candidates
        )
        out.send(Stage.HOMES, probe.home, answer)
        self._ask_homes(probe, exact, candidates, out)
        if insert:
            assert signature is not None
            entry = _Entry(
                signature,
                [key for _, key in probe.keys],
                probe.content_hash,
                probe.body_hash,
                probe.event_time,
                probe.home,
            )
            out.tally.evicted += self.window.insert(page_id, entry)

    def _ask_homes(
        self,
        probe: Probe,
        exact: Exact | None,
        candidates: tuple[Candidate, ...],
        out: Outbox,
    ) -> None:
        """Ask the home of every verified candidate (and of the exact copy) whether it is earlier
        than the probing page, on the page's behalf.

        Asked from here, not from the page's home once all its bands are in: this partition's
        messages to a home stay in order, so a home always gets every question this partition
        causes about a page before this partition's answers report a clock past that page's
        window. A home may forget a decided page once every band partition's clock has passed its
        window, and can never be asked about it after that (asked from the page's home, the
        question could come later and find the candidate gone, where batch still had it).
        """
        for candidate, need in needed(candidates, exact, self.rule).items():
            ask = Ask(
                candidate,
                probe.id,
                probe.home,
                probe.query,
                probe.clock,
                probe.body_hash,
                need.similarity,
                self.partition,
                self.clock_ms,
                need.containment,
            )
            out.send(Stage.HOMES, need.home, ask)

    def _exact(self, content_hash: int | None, page_id: str) -> Exact | None:
        match = self.window.exact(content_hash)
        if match is None or match == page_id:
            return None
        entry = self.entries[match]
        return Exact(match, entry.home, entry.event_time)

    def _candidates(
        self, keys: tuple[tuple[int, int], ...], signature: np.ndarray | None, page_id: str
    ) -> tuple[Candidate, ...]:
        """Pages sharing a bucket with the probe, with their resemblance estimated from their
        stored signatures, where each was met first (band, position in its bucket) and its home."""
        seen = self.window.lookup(keys)
        seen.pop(page_id, None)
        if not seen:
            return ()
        ids = list(seen)
        entries = self.entries
        assert signature is not None  # a probe with keys carries its signature
        jaccard, containment = estimate(signature, np.stack([entries[c].signature for c in ids]))
        return tuple(
            Candidate(
                candidate,
                similarity,
                *seen[candidate],
                entries[candidate].home,
                entries[candidate].event_time,
                contained,
            )
            for candidate, similarity, contained in zip(ids, jaccard, containment, strict=True)
        )


def _listed(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers)) or "none"
