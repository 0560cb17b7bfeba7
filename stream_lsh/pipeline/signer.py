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
from typing import Any, ClassVar

from ..core.boilerplate import BoilerplateLearner
from ..core.clock import EventTime
from ..core.prepare import PreparedPage, Preparer, SignedPage
from .messages import BandMark, Flags, InputMark, OwnerChange, PageToSign, Probe, Registration, SiteMessage
from .order import InputMarks, encode_mark
from .outbox import Outbox, Stage
from .routing import Layout
from .telemetry import Gauges

__all__ = ["Signer"]


class Signer:
    """One site partition: its learner, and the signing of its pages."""

    stage: ClassVar[str] = Stage.SITES

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

    def gauges(self) -> Gauges:
        """What this partition holds now, for the metrics: the blocks its learner knows."""
        return Gauges(boilerplate_blocks=None if self.learner is None else self.learner.boilerplate_blocks)

    def restore(self, state: dict[str, Any]) -> None:
        if self.learner is not None and state["learner"] is not None:
            self.learner.load_state(state["learner"])
        if self.marks is not None:
            self.marks.load(state["marks"])
            self.sent = state["sent"]

    def handle(self, messages: Sequence[SiteMessage]) -> Outbox:
        out = Outbox()
        flagged: dict[str, list[int]] = {}  # by the site they are boilerplate of
        prepared: list[tuple[PageToSign, PreparedPage]] = []
        for message in messages:
            if isinstance(message, Flags):
                if self.learner is not None:
                    self.learner.flag(message.fingerprints, message.site)
            elif isinstance(message, InputMark):
                if self.marks is not None:
                    self.marks.update(message.source, message.mark, message.idle)
            elif isinstance(message, OwnerChange):
                if self.marks is not None:
                    self.marks.withdraw(message.source)
            else:
                page, newly = self._prepare(message)
                prepared.append((message, page))
                if newly:
                    flagged.setdefault(message.site, []).extend(newly)
                if self.learner is not None and not message.query:
                    out.tally.blocks_dropped.append(page.blocks_dropped)
        signed = self.preparer.sign([page for _, page in prepared])
        for (message, _), signed_page in zip(prepared, signed):
            self._route(message, signed_page, out)
        if self.marks is not None:
            self._forward_mark(out)
        for site, blocks in flagged.items():
            for partition in range(self.layout.sites):
                if partition != self.partition:
                    out.send(Stage.SITES, partition, Flags(tuple(blocks), site), first=True)
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
            out.send(Stage.BANDS, partition, BandMark(self.partition, wire, tuple(by)))

    def _prepare(self, page: PageToSign) -> tuple[PreparedPage, list[int]]:
        """The kernel's text steps with this partition's learner (pages teach it, queries do not)."""
        return self.preparer.prepare(
            page.id,
            page.lang,
            list(page.blocks),
            clock_ms=page.clock,
            time=EventTime(page.event_time, page.date_ignored),
            body_hash=page.body_hash,
            learner=self.learner,
            site=page.site,
            learn=not page.query,
        )

    def _route(self, page: PageToSign, signed_page: SignedPage, out: Outbox) -> None:
        layout = self.layout
        page_id, query = page.id, page.query
        home = layout.home(page_id)
        # Every band partition answers every delivery: those that hold none of its band keys get a
        # probe without keys, which applies a new version's replacement of the old one in clock
        # order there too, and makes the page's home hear from every band partition before it
        # decides (so that it has every question about an older version first; see Gather).
        by_partition: dict[int, list[list[int]]] = {partition: [] for partition in range(layout.bands)}
        prepared = signed_page.prepared
        signed = signed_page.signature is not None and signed_page.band_keys is not None
        exact_partition = None
        signature = None
        if signed:
            assert signed_page.signature is not None and signed_page.band_keys is not None
            for band, key in enumerate(signed_page.band_keys.tolist()):
                by_partition[layout.band(key)].append([band, key])
            exact_partition = layout.band(prepared.content_hash)
            # one base64 string, not 128 JSON numbers: the probe goes to every band partition, and
            # encoding and decoding number lists was a sixth of a worker's time under steady load
            signature = base64.b64encode(signed_page.signature.astype("<u4").tobytes()).decode("ascii")
        registration = Registration(
            page_id,
            query,
            page.clock,
            page.event_time,
            page.date_ignored,
            prepared.body_hash,
            tuple(sorted(by_partition)),
            not signed,
            None if query else page.raw,
            page.received,
            None if query else page.site or None,
        )
        out.send(Stage.HOMES, home, registration, first=True)
        for partition, keys in by_partition.items():
            owns_hash = partition == exact_partition
            probe = Probe(
                page_id,
                query,
                home,
                page.clock,
                page.event_time,
                prepared.body_hash,
                signature if keys or owns_hash else None,
                tuple((band, key) for band, key in keys),
                prepared.content_hash if owns_hash else None,
            )
            out.send(Stage.BANDS, partition, probe)
