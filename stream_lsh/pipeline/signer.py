"""Stage 2, at the site partition: boilerplate learning, then shingles, signature and band keys.

Pages are routed here by site because the boilerplate learner works per site and in arrival
order: a site's pages pass through one partition, in the order they came in, as in batch. The set
of known boilerplate blocks is shared by all sites (prose shared by a network of outlets is learnt
once), so a block one partition flags is broadcast to the others (``flags`` records).

Signed pages, and the retractions ingest routed here, go on to the one decide partition in the
order they came, followed by this partition's release point (:mod:`.order`): the decide
partition applies everything at or below the smallest release point of all site partitions, in
(clock, id) order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..core.boilerplate import BoilerplateLearner
from ..core.clock import EventTime
from ..core.prepare import PreparedPage, Preparer, SignedPage
from .messages import (
    Flags,
    InputMark,
    OwnerChange,
    PageToSign,
    ReleaseMark,
    Retraction,
    SignedForDecision,
    SiteMessage,
    pack_array,
)
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
        passed: list[Retraction | int] = []  # what goes on to decide, in order: retractions, pages by number
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
            elif isinstance(message, Retraction):
                passed.append(message)
            else:
                page, newly = self._prepare(message)
                passed.append(len(prepared))
                prepared.append((message, page))
                if newly:
                    flagged.setdefault(message.site, []).extend(newly)
                if self.learner is not None and not message.query:
                    out.tally.blocks_dropped.append(page.blocks_dropped)
        signed = self.preparer.sign([page for _, page in prepared])
        for item in passed:
            if isinstance(item, Retraction):
                out.send(Stage.DECIDE, 0, item)
            else:
                out.send(Stage.DECIDE, 0, _for_decision(prepared[item][0], signed[item]))
        if self.marks is not None:
            self._forward_mark(out)
        for site, blocks in flagged.items():
            for partition in range(self.layout.sites):
                if partition != self.partition:
                    out.send(Stage.SITES, partition, Flags(tuple(blocks), site), first=True)
        return out

    def _forward_mark(self, out: Outbox) -> None:
        """After the batch's pages: the release point of the input partitions (see
        :class:`.order.InputMarks`) to the decide partition, with the input partitions that hold
        it back (``by``: for reports of pages that wait)."""
        assert self.marks is not None
        point = self.marks.release_point()
        by = self.marks.holding_back()
        wire = encode_mark(point)
        if [wire, by] == self.sent:
            return
        self.sent = [wire, by]
        out.send(Stage.DECIDE, 0, ReleaseMark(self.partition, wire, tuple(by)))

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


def _for_decision(page: PageToSign, signed: SignedPage) -> SignedForDecision:
    """A signed page as the decide partition reads it (:class:`.messages.SignedForDecision`)."""
    prepared = signed.prepared
    return SignedForDecision(
        page.id,
        page.query,
        page.clock,
        page.event_time,
        page.date_ignored,
        prepared.body_hash,
        prepared.content_hash,
        pack_array(signed.signature, "<u4"),
        pack_array(signed.band_keys, "<u8"),
        pack_array(signed.shingles, "<u8"),
        None if page.query else page.raw,
        None if page.query else page.site or None,
        page.received,
        signed.opening,
        signed.short,
        signed.sentence_openings,
    )
