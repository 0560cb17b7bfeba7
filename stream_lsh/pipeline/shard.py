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
from typing import Any

import numpy as np

from ..core.clock import clock_of_record
from ..core.minhash import agreement
from ..core.window import BandWindow
from .candidates import needed
from .order import Mark, ReleasePoints, decode_mark, encode_mark
from .outbox import Outbox, Stage
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


def _signature(encoded: str) -> np.ndarray:
    """A signature as the signer sends it: base64 of little-endian uint32 values."""
    return np.frombuffer(base64.b64decode(encoded), dtype="<u4").astype(np.uint32)


class Shard:
    """One band partition."""

    def __init__(
        self,
        partition: int,
        *,
        bucket_cap: int,
        ttl: float | None,
        threshold: float,
        sources: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.partition = partition
        # when the held probes last moved (not state: for reports of stuck waits, see .waits)
        self._monotonic = clock
        self._moved_at = clock()
        self._stall_reported = False
        self._held_back_by: dict[int, list[int]] = {}  # site partition -> input partitions holding it back
        self.threshold = threshold  # candidates at or above it are asked about (see _ask_homes)
        # with ``sources`` (site partitions), probes are applied in (clock, id) order as the site
        # partitions' watermarks release them: see stream_lsh.pipeline.order
        self.marks = ReleasePoints(sources) if sources is not None else None
        self.released: Mark | None = None  # every probe up to here has been applied
        self.held: list[tuple[int, str, int, dict[str, Any]]] = []  # a heap of probes waiting
        self._held_sequence = 0
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

    def handle(self, records: Sequence[dict[str, Any]]) -> Outbox:
        out = Outbox()
        for record in records:
            if record["k"] in ("probe", "delete"):
                if self._holds(record):
                    if not self.held:
                        self._moved()
                    self._held_sequence += 1
                    heapq.heappush(self.held, (record["c"], record["id"], self._held_sequence, record))
                else:
                    self._apply(record, out)
            elif record["k"] == "wm":
                self._watermark(record, out)
            else:
                raise ValueError(f"a band partition got a record of kind {record['k']!r}")
        return out

    def _apply(self, record: dict[str, Any], out: Outbox) -> None:
        """A probe, or a retraction: batch removes the page as it stands at that line. One band
        partition passes the retraction on to the page's home after its answers to every delivery
        before it, so the home retracts the right one (straight from ingest it could overtake a
        delivery's registration)."""
        if record["k"] == "probe":
            self._probe(record, out)
            return
        self.window.remove(record["id"])
        if record["tell"] == self.partition:
            out.send(Stage.HOMES, record["home"], {"k": "delete", "id": record["id"], "c": record["c"]})

    def _holds(self, record: dict[str, Any]) -> bool:
        """Whether a probe (or a retraction) waits for the watermark: not queries, nor late ones."""
        if self.marks is None or record.get("q"):
            return False
        if self.released is None or (record["c"], record["id"]) > self.released:
            return True
        self.late += 1
        return False

    def _watermark(self, record: dict[str, Any], out: Outbox) -> None:
        if self.marks is None:
            return
        self.marks.update(record["src"], record["w"])
        self._held_back_by[record["src"]] = record.get("by", [])
        low = self.marks.low()
        if low is None or (self.released is not None and low <= self.released):
            return
        self.released = low
        self._moved()
        while self.held and (self.held[0][0], self.held[0][1]) <= low:
            self._apply(heapq.heappop(self.held)[3], out)

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

    def snapshot(self) -> dict[str, Any]:
        """The whole state; buckets keep their order (it breaks ties) and the expiry heap its layout."""
        state = self._snapshot()
        if self.marks is not None:
            state.update(
                marks=self.marks.state(),
                released=encode_mark(self.released),
                held=[[encode_mark((t, i)), n, r] for t, i, n, r in self.held],
                held_sequence=self._held_sequence,
            )
        return state

    def _snapshot(self) -> dict[str, Any]:
        return {
            "entries": [
                [
                    page_id,
                    base64.b64encode(e.signature.astype("<u4").tobytes()).decode("ascii"),
                    e.keys,
                    e.content_hash,
                    e.body_hash,
                    e.event_time,
                    e.home,
                ]
                for page_id, e in self.entries.items()
            ],
            **self.window.tables(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Replace the state with one made by :meth:`snapshot`."""
        entries = {
            page_id: _Entry(_signature(signature), keys, content_hash, body_hash, event_time, home)
            for page_id, signature, keys, content_hash, body_hash, event_time, home in state["entries"]
        }
        self.window.load(entries, state)
        if self.marks is not None:
            self.marks.load(state["marks"])
            self.released = decode_mark(state["released"])
            self.held = [(*decode_mark(m), n, r) for m, n, r in state["held"]]  # type: ignore[misc]
            self._held_sequence = state["held_sequence"]

    def _probe(self, record: dict[str, Any], out: Outbox) -> None:
        page_id, query = record["id"], bool(record["q"])
        if not query:  # first, as in batch: a redelivery after its page left the window is a new page
            self.window.advance(clock_of_record(record["c"]))
        known = None if query else self.entries.get(page_id)
        # a probe with neither keys nor content hash here holds nothing: it only replaces an old version
        insert = not query and (bool(record["keys"]) or record["ch"] is not None)
        if known is not None:
            if known.body_hash == record["bh"]:
                insert = False  # a redelivery: answer again, change nothing
            else:
                self.window.remove(page_id)  # a new version replaces the old one
        signature = None if record["sig"] is None else _signature(record["sig"])
        exact = self._exact(record["ch"], page_id)
        candidates = self._candidates(record["keys"], signature, page_id)
        out.send(
            Stage.HOMES,
            record["home"],
            {
                "k": "res",
                "id": page_id,
                "q": query,
                "b": self.partition,
                "c": record["c"],
                "bh": record["bh"],
                "wc": self.clock_ms,
                "ex": exact,
                "cands": candidates,
            },
        )
        self._ask_homes(record, exact, candidates, out)
        if insert:
            assert signature is not None
            self._insert(page_id, record, signature)

    def _ask_homes(
        self, record: dict[str, Any], exact: list[Any] | None, candidates: list[list[Any]], out: Outbox
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
        for candidate, (home, similarity) in needed(candidates, exact, self.threshold).items():
            out.send(
                Stage.HOMES,
                home,
                {
                    "k": "ask",
                    "id": candidate,
                    "from": record["id"],
                    "home": record["home"],
                    "q": bool(record["q"]),
                    "c": record["c"],
                    "fbh": record["bh"],
                    "sim": similarity,
                    "b": self.partition,
                    "wc": self.clock_ms,
                },
            )

    def _exact(self, content_hash: int | None, page_id: str) -> list[Any] | None:
        match = self.window.exact(content_hash)
        if match is None or match == page_id:
            return None
        entry = self.entries[match]
        return [match, entry.home, entry.event_time]

    def _candidates(
        self, keys: list[list[int]], signature: np.ndarray | None, page_id: str
    ) -> list[list[Any]]:
        seen = self.window.lookup((band, key) for band, key in keys)
        seen.pop(page_id, None)
        if not seen:
            return []
        ids = list(seen)
        entries = self.entries
        assert signature is not None  # a probe with keys carries its signature
        similarities = agreement(signature, np.stack([entries[c].signature for c in ids])).tolist()
        result = []
        for candidate, similarity in zip(ids, similarities):
            entry = entries[candidate]
            band, position = seen[candidate]
            result.append([candidate, similarity, band, position, entry.home, entry.event_time])
        return result

    def _insert(self, page_id: str, record: dict[str, Any], signature: np.ndarray) -> None:
        entry = _Entry(
            signature,
            [key for _, key in record["keys"]],
            record["ch"],
            record["bh"],
            record["ts"],
            record["home"],
        )
        self.window.insert(page_id, entry)


def _listed(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers)) or "none"
