"""Stage 2, at the site partition: boilerplate learning, then shingles, signature and band keys.

Pages are routed here by site because the boilerplate learner works per site and in arrival
order: a site's pages pass through one partition, in the order they came in, as in batch. The set
of known boilerplate blocks is shared by all sites (prose shared by a network of outlets is learnt
once), so a block one partition flags is broadcast to the others (``flags`` records).

A signed page is *registered* at its home partition (where its decision will be made) and probes
every band partition that owns one of its band keys or its content hash. Registrations are
``first``: they are durable before any probe is sent, so a home that is asked about a page it
does not know can be sure the page is gone, not on its way.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from ..core.boilerplate import BoilerplateLearner
from ..core.clock import EventTime
from ..core.prepare import PreparedPage, Preparer, SignedPage
from .messages import BandMark, Probe
from .order import InputMarks, encode_mark
from .outbox import Outbox, Stage
from .routing import Layout

__all__ = ["Signer"]


class Signer:
    """One site partition: its learner, and the signing of its pages."""

    def __init__(
        self,
        preparer: Preparer,
        layout: Layout,
        partition: int,
        *,
        inputs: int | None = None,
        lateness_ms: int = 0,
    ) -> None:
        self.preparer = preparer
        self.layout = layout
        self.partition = partition
        config = preparer.config
        self.learner = (
            BoilerplateLearner(min_pages=config.boilerplate_min_pages) if config.boilerplate else None
        )
        # with ``inputs`` (input partitions), watermarks: see stream_lsh.pipeline.order
        self.marks = InputMarks(inputs, lateness_ms) if inputs is not None else None
        self.sent: list[Any] | None = None  # the last release point forwarded, and who held it back

    def snapshot(self) -> dict[str, Any]:
        """The learner's state (and watermarks): everything this partition remembers between pages."""
        state: dict[str, Any] = {"learner": None if self.learner is None else self.learner.state()}
        if self.marks is not None:
            state["marks"] = self.marks.state()
            state["sent"] = self.sent
        return state

    def restore(self, state: dict[str, Any]) -> None:
        if self.learner is not None and state["learner"] is not None:
            self.learner.load_state(state["learner"])
        if self.marks is not None:
            self.marks.load(state["marks"])
            self.sent = state["sent"]

    def handle(self, records: Sequence[dict[str, Any]]) -> Outbox:
        out = Outbox()
        flagged: list[int] = []
        prepared: list[tuple[dict[str, Any], PreparedPage]] = []
        for record in records:
            if record["k"] == "flags":
                if self.learner is not None:
                    self.learner.flag(record["f"])
                continue
            if record["k"] == "wm":
                if self.marks is not None:
                    self.marks.update(record["src"], record["w"], record.get("idle", False))
                continue
            if record["k"] == "owner":
                if self.marks is not None:
                    self.marks.withdraw(record["src"])
                continue
            page, newly = self._prepare(record)
            prepared.append((record, page))
            flagged.extend(newly)
        signed = self.preparer.sign([page for _, page in prepared])
        for (record, _), signed_page in zip(prepared, signed):
            self._route(record, signed_page, out)
        if self.marks is not None:
            self._forward_mark(out)
        if flagged:
            for partition in range(self.layout.sites):
                if partition != self.partition:
                    out.send(Stage.SITES, partition, {"k": "flags", "f": flagged}, first=True)
        return out

    def _forward_mark(self, out: Outbox) -> None:
        """After the batch's probes: the release point of the input partitions (see
        :class:`.order.InputMarks`) to every band partition, with the input partitions that hold
        it back (``by``: for reports of pages that wait)."""
        assert self.marks is not None
        point = self.marks.release_point()
        by = self.marks.holding_back()
        wire = encode_mark(point)
        if [wire, by] == self.sent:
            return
        self.sent = [wire, by]
        for partition in range(self.layout.bands):
            out.send(Stage.BANDS, partition, BandMark(self.partition, wire, tuple(by)).to_wire())

    def _prepare(self, record: dict[str, Any]) -> tuple[PreparedPage, list[int]]:
        """The kernel's text steps with this partition's learner (pages teach it, queries do not)."""
        learn_for_site = record["site"] if record["k"] == "page" else None
        return self.preparer.prepare(
            record["id"],
            record.get("lang"),
            record["blocks"],
            clock_ms=record["c"],
            time=EventTime(record["ts"], record["di"]),
            body_hash=record["bh"],
            learner=self.learner,
            learn_for_site=learn_for_site,
        )

    def _route(self, record: dict[str, Any], page: SignedPage, out: Outbox) -> None:
        layout = self.layout
        page_id = record["id"]
        query = record["k"] == "query"
        home = layout.home(page_id)
        registration: dict[str, Any] = {
            "k": "reg",
            "id": page_id,
            "q": query,
            "c": record["c"],
            "ts": record["ts"],
            "di": record["di"],
            "bh": page.prepared.body_hash,
        }
        if not query:
            registration["raw"] = record["raw"]
        # Every band partition answers every delivery: those that hold none of its band keys get a
        # probe without keys, which applies a new version's replacement of the old one in clock
        # order there too, and makes the page's home hear from every band partition before it
        # decides (so that it has every question about an older version first; see Gather).
        by_partition: dict[int, list[list[int]]] = {partition: [] for partition in range(layout.bands)}
        signed = page.signature is not None and page.band_keys is not None
        exact_partition = None
        signature = None
        if signed:
            assert page.signature is not None and page.band_keys is not None
            for band, key in enumerate(page.band_keys.tolist()):
                by_partition[layout.band(key)].append([band, key])
            exact_partition = layout.band(page.prepared.content_hash)
            # one base64 string, not 128 JSON numbers: the probe goes to every band partition, and
            # encoding and decoding number lists was a sixth of a worker's time under steady load
            signature = base64.b64encode(page.signature.astype("<u4").tobytes()).decode("ascii")
        registration.update(targets=sorted(by_partition), nc=not signed)
        out.send(Stage.HOMES, home, registration, first=True)
        for partition, keys in by_partition.items():
            owns_hash = partition == exact_partition
            probe = Probe(
                page_id,
                query,
                home,
                record["c"],
                record["ts"],
                page.prepared.body_hash,
                signature if keys or owns_hash else None,
                tuple((band, key) for band, key in keys),
                page.prepared.content_hash if owns_hash else None,
            )
            out.send(Stage.BANDS, partition, probe.to_wire())
