"""Stage 2, at the site partition: boilerplate learning, then shingles, signature and band keys.

Pages are routed here by site because the boilerplate learner works per site (:mod:`stream_lsh.
core.boilerplate`): a site's pages all pass through one partition. What a learner knows depends
on the order it reads its site's pages in, and a site's pages come from every input partition, in
an order that depends on timing. So pages and retractions wait here (:mod:`.holding`) for this
partition's release point (:mod:`.order`: the smallest mark of its input partitions, less the
lateness) and are learnt from and signed in (clock, id) order, the order batch reads them in: the
learner knows, for every page, what batch's learner knows for it, and the stream's text is
batch's. One that comes at or below what was released already (late) goes on at once. Queries
teach nothing and are never held.

Signed pages and retractions go on to the one decide partition in that order, followed by this
partition's release point: the decide partition applies everything at or below the smallest
release point of all site partitions, in (clock, id) order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

from ..core.boilerplate import BoilerplateLearner
from ..core.clock import EventTime
from ..core.prepare import PreparedPage, Preparer, SignedPage
from . import codec
from .holding import Holding
from .messages import (
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
from .waits import Wait

__all__ = ["Signer"]

Passed = PageToSign | Retraction  # what a site partition passes on to the decide partition


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
        clock: Callable[[], float] = time.monotonic,
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
        self.held: Holding[Passed] = Holding(_delivery, clock)  # clock: seconds, for reports of waits
        self.sent: list[Any] | None = None  # the last release point forwarded, and who held it back

    def snapshot(self) -> dict[str, Any]:
        """The learner's state, the watermarks and the pages held for them: everything this
        partition remembers between batches."""
        state: dict[str, Any] = {"learner": None if self.learner is None else self.learner.state()}
        if self.marks is not None:
            state["marks"] = self.marks.state()
            state["sent"] = self.sent
            state |= self.held.state()
        return state

    def gauges(self) -> Gauges:
        """What this partition holds now, for the metrics: the blocks its learner knows, and the
        pages waiting for its release point."""
        return Gauges(
            waiting=len(self.held),
            oldest_wait_s=self.held.longest_wait(),
            boilerplate_blocks=None if self.learner is None else self.learner.boilerplate_blocks,
        )

    def restore(self, state: dict[str, Any]) -> None:
        if self.learner is not None and state["learner"] is not None:
            self.learner.load_state(state["learner"])
        if self.marks is not None:
            self.marks.load(state["marks"])
            self.sent = state["sent"]
            self.held.load(state, lambda wire: cast(Passed, codec.from_wire(Stage.SITES, wire)))

    def handle(self, messages: Sequence[SiteMessage]) -> Outbox:
        return self._route(messages, sign=True)

    def replay(self, messages: Sequence[SiteMessage]) -> None:
        """:meth:`handle` without signing: a journal's batch handled again to rebuild the learner,
        the input marks and the held pages, whose outputs were sent before. Signing changes no
        state, and was a third to half of loading a site partition after a restart (about a fifth
        of a worker's recovery at 63,000 pages)."""
        self._route(messages, sign=False)

    def _route(self, messages: Sequence[SiteMessage], *, sign: bool) -> Outbox:
        out = Outbox()
        ready: list[Passed] = []  # in the order they go on
        for message in messages:
            if isinstance(message, InputMark):
                if self.marks is not None:  # (in arrival order, a mark left on the topic is moot)
                    self.marks.update(
                        message.source,
                        message.mark,
                        message.idle,
                        message.generation,
                        message.taken,
                        message.ends,
                    )
                    point = self.marks.release_point()
                    ready += (None if point is None else self.held.release(point)) or ()
            elif isinstance(message, OwnerChange):
                if self.marks is not None:
                    self.marks.withdraw(message.source, message.before)
            elif message.query or self.marks is None or not self.held.waits(message):
                ready.append(message)
            else:
                self.held.hold(message)
        self._pass_on(ready, out, sign=sign)
        if self.marks is not None:
            self._forward_mark(out)
        return out

    def _pass_on(self, ready: list[Passed], out: Outbox, *, sign: bool) -> None:
        """Teach the learner and sign the pages, in order, and send them on with the retractions
        (without ``sign``, only teach the learner)."""
        prepared = [self._prepare(page) for page in ready if isinstance(page, PageToSign)]
        if not sign:
            return
        signed = iter(self.preparer.sign(prepared))
        for record in ready:
            if isinstance(record, Retraction):
                out.send(Stage.DECIDE, 0, record)
                continue
            page = next(signed)
            out.send(Stage.DECIDE, 0, _for_decision(record, page))
            if self.learner is not None and not record.query:
                out.tally.blocks_dropped.append(page.prepared.blocks_dropped)

    def stalled(self, bound: float) -> list[Wait]:
        """The first held page, once, if this partition's release point has not moved for
        ``bound`` seconds while pages wait, with the input partitions that hold it back."""
        stuck = None if self.marks is None else self.held.stuck(bound)
        if stuck is None or self.marks is None:
            return []
        clock, page_id, waited = stuck
        inputs = ", ".join(map(str, self.marks.holding_back())) or "none"
        cause = f"{self.held.waiting_text()}; input partitions {inputs} hold it back"
        return [Wait(Stage.SITES, self.partition, page_id, clock, waited, cause)]

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

    def _prepare(self, page: PageToSign) -> PreparedPage:
        """The kernel's text steps with this partition's learner (pages teach it, queries do not)."""
        prepared, _ = self.preparer.prepare(
            page.id,
            page.lang,
            list(page.blocks),
            clock_ms=page.clock,
            time=EventTime(page.event_time, page.date_ignored),
            body_hash=page.body_hash,
            learner=self.learner,
            site=page.site,
            learn=not page.query,
            headline=page.headline,
            listing=page.listing,
            part=page.part,
            names=page.names or None,
            address=page.address,
            slots=page.slots or None,
        )
        return prepared


def _delivery(record: Passed) -> tuple[object, ...] | None:
    """A held page's delivery (the same input record read twice is held once); a retraction has none."""
    if isinstance(record, PageToSign):
        return (record.id, record.clock, record.body_hash)
    return None


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
        signed.headline,
        prepared.notice,
        prepared.listing,
        prepared.site_headline,
        prepared.site,
        prepared.part,
        pack_array(prepared.names.hashes, "<u4") if prepared.names.count else None,
        prepared.names.count,
        pack_array(prepared.names.slots, "<u4") if prepared.names.slots.size else None,
    )
