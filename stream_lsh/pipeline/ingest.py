"""Stage 1, at the input partition: validate each message, extract its text, route it by site.

Stateless, so it may run on any worker and be replayed freely. Everything that cannot be
processed becomes a dead letter carrying the reason and where the message came from (topic,
partition, offset, size), never the body.

A page's clock is its record's timestamp (:mod:`stream_lsh.core.clock`); its event time comes
from its date and that clock, here, once, so that every later stage sees the same one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.clock import clock_of_record
from ..core.page import Page
from ..core.prepare import Preparer
from ..core.record import Delete, Rejected, parse_query, parse_record, unframe
from . import codec
from .limits import RecordLimit
from .messages import InputMark, OwnerChange, PageToSign, Retraction
from .order import Mark, encode_mark
from .outbox import Outbox, Stage
from .routing import Layout

__all__ = ["Ingest", "Message", "Undecodable"]


@dataclass(frozen=True)
class Undecodable:
    """A record batch of the input that the consumer could not decode (a codec it lacks, a corrupt
    payload): its offsets, and why. The consumer hands on one message per offset carrying it
    (:mod:`stream_lsh.stream.undecodable`)."""

    first_offset: int
    last_offset: int
    reason: str


@dataclass(frozen=True)
class Message:
    """One Kafka message as the stages see it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int = 0  # the record's timestamp: the page's clock
    undecodable: Undecodable | None = None  # in place of a record of a batch that could not be read
    received_ms: int | None = None  # the record's own timestamp, when a clock header overrides it (metrics)


class Ingest:
    """Turns input messages into site-stage records: pages, queries, retractions and marks."""

    def __init__(
        self,
        preparer: Preparer,
        layout: Layout,
        *,
        max_page_bytes: int,
        watermarks: bool = False,
        lateness: float = 0.0,
        limit: RecordLimit | None = None,
    ) -> None:
        """``limit``: the largest record the transport may write (:mod:`.limits`); a page whose
        record would be larger is a ``too_large`` dead letter. None: no limit (in-process)."""
        self.preparer = preparer
        self.layout = layout
        self.max_page_bytes = max_page_bytes
        self.watermarks = watermarks  # see stream_lsh.pipeline.order
        self.lateness = lateness
        self.limit = limit
        self.flattened = 0  # pages of the batch being read that held an article on one line
        # the consumer group generation of this worker's assignment, stamped on its idle claims
        # (None: not in a group, or not known); the worker sets it at each assignment
        self.generation: int | None = None

    @property
    def marks_caught_up(self) -> bool:
        """Whether the mark of a caught-up partition says it is idle after it: with watermarks and
        no lateness (a lateness lets the partition's later records be older than its mark)."""
        return self.watermarks and not self.lateness

    def idle_after(self, messages: Sequence[Message], caught_up: Collection[int]) -> set[int]:
        """The input partitions that :meth:`pages` declares idle after these messages: every
        partition of the batch sends a mark, and a caught-up one says it is idle after it."""
        if not self.marks_caught_up:
            return set()
        return {message.partition for message in messages} & set(caught_up)

    def pages(
        self,
        messages: Sequence[Message],
        caught_up: Collection[int] | Mapping[int, int] = (),
        ends: Mapping[int, int] | None = None,
    ) -> Outbox:
        """Messages of the input topic: pages and retractions; then, with ``watermarks``, each input
        partition's mark to every site partition. ``caught_up``: the input partitions whose last
        record (when it was fetched) is in ``messages``; their marks say they are idle after them
        (:meth:`idle_after`). As a mapping, to the offset below which every record was taken then
        (the fetch's high watermark). ``ends``: the end offsets of the input partitions that other
        workers read, asked after these messages were fetched; every mark carries them
        (:class:`.order.InputMarks`)."""
        out = Outbox()
        marks: dict[int, Mark] = {}
        for message in messages:
            if message.undecodable is not None:
                _undecodable(message, message.undecodable, out)
                continue  # no mark: its records' clocks are unknown
            parsed = self._page(message)
            if isinstance(parsed, Rejected):
                out.dead_letters.append(_dead_letter(message, parsed))
                page_id = parsed.page_id
            elif isinstance(parsed, Delete):
                self._retract(parsed.id, message.timestamp_ms, out)
                out.tally.retractions += 1
                page_id = parsed.id
            else:
                out.send(Stage.SITES, self.layout.site(parsed.site), parsed)
                out.tally.pages += 1
                page_id = parsed.id
            mark = (message.timestamp_ms, page_id or "")
            marks[message.partition] = max(marks.get(message.partition, mark), mark)
        out.tally.flattened, self.flattened = self.flattened, 0
        if self.watermarks:
            idle = self.idle_after(messages, caught_up)
            taken = caught_up if isinstance(caught_up, Mapping) else {}
            seen = tuple(sorted((ends or {}).items()))
            for partition, mark in sorted(marks.items()):
                claim = partition in idle
                self._broadcast(
                    partition,
                    mark,
                    out,
                    idle_after=claim,
                    taken=taken.get(partition) if claim else None,
                    ends=seen,
                )
        return out

    def _page(self, message: Message) -> PageToSign | Delete | Rejected:
        parsed = self._parse(message, parse_record)
        if isinstance(parsed, (Rejected, Delete)):
            return parsed
        page, raw = parsed
        return self._to_sign(page, message, raw=raw.decode("utf-8"))

    def _query(self, message: Message) -> PageToSign | Rejected:
        parsed = self._parse(message, parse_query)
        return parsed if isinstance(parsed, Rejected) else self._to_sign(parsed[0], message)

    def _retract(self, page_id: str, timestamp_ms: int, out: Outbox) -> None:
        """To one site partition, which passes it on to the decide partition in order with its
        pages; sent before the batch's marks, so no release point can pass it first."""
        out.send(Stage.SITES, self.layout.retraction_site(page_id), Retraction(page_id, timestamp_ms))

    def idle(self, partition: int, taken: int | None = None) -> Outbox:
        """What a timer sends for an input partition that is caught up and quiet: it holds nothing
        back until its next page. ``taken``: the offset below which every record was taken."""
        out = Outbox()
        self._broadcast(partition, None, out, taken=taken)
        return out

    def changed_hands(self, partitions: Collection[int], *, before: int | None = None) -> Outbox:
        """What a worker sends for input partitions that may have changed hands, before it reads
        any of them: their idle claims are withdrawn (:meth:`.order.InputMarks.withdraw`); with
        ``before``, a group generation, only claims made in an earlier one."""
        out = Outbox()
        if self.watermarks:
            for partition in sorted(partitions):
                for site in range(self.layout.sites):
                    out.send(Stage.SITES, site, OwnerChange(partition, before))
        return out

    def _broadcast(
        self,
        partition: int,
        mark: Mark | None,
        out: Outbox,
        idle_after: bool = False,
        taken: int | None = None,
        ends: tuple[tuple[int, int], ...] = (),
    ) -> None:
        claim = mark is None or idle_after
        input_mark = InputMark(
            partition, encode_mark(mark), idle_after, self.generation if claim else None, taken, ends
        )
        for site in range(self.layout.sites):
            out.send(Stage.SITES, site, input_mark)

    def queries(self, messages: Sequence[Message]) -> Outbox:
        """Messages of the query topic: pages to look up without indexing them. The answer is
        keyed by the query's ``correlation_id`` (its ``id`` when it has none)."""
        out = Outbox()
        for message in messages:
            if message.undecodable is not None:
                _undecodable(message, message.undecodable, out)
                continue
            query = self._query(message)
            if isinstance(query, Rejected):
                out.dead_letters.append(_dead_letter(message, query))
            else:
                out.send(Stage.SITES, self.layout.site(query.site), query)
                out.tally.queries += 1
        return out

    def _parse(self, message: Message, parse):  # type: ignore[no-untyped-def]
        raw = None if message.value is None else unframe(message.value)
        if raw is None or not raw.strip():
            return Rejected("empty", "the message has no value")
        parsed = parse(raw.strip(), self.max_page_bytes)
        if isinstance(parsed, Page):
            return parsed, raw.strip()
        return parsed

    def _to_sign(self, page: Page, message: Message, *, raw: str | None = None) -> PageToSign | Rejected:
        """A page for its site partition (a query without ``raw``): its clock is the record's
        timestamp, which orders pages (see .order); its event time moves the window. Rejected if
        that record would be over the limit."""
        preparer = self.preparer
        timestamp_ms = message.timestamp_ms
        time = preparer.event_time(page, clock_of_record(timestamp_ms))
        extracted = preparer.extract(page)
        self.flattened += extracted.flattened and raw is not None
        to_sign = PageToSign(
            page.id,
            raw is None,
            page.site,
            page.lang,
            timestamp_ms,
            time.seconds,
            time.date_ignored,
            preparer.body_hash(page),
            tuple(extracted.blocks),
            raw,
            message.received_ms if message.received_ms is not None else timestamp_ms,
            extracted.headline,
            extracted.listing,
            extracted.part,
            tuple(extracted.names or ()),
            extracted.address,
            tuple(extracted.slots or ()),
        )
        return self._too_large(to_sign) or to_sign

    def _too_large(self, to_sign: PageToSign) -> Rejected | None:
        limit = self.limit
        if limit is None:
            return None
        chars = len(to_sign.id) + len(to_sign.raw or "") + sum(len(block) for block in to_sign.blocks)
        if 6 * chars + 1024 <= limit.page_bytes:  # JSON takes at most 6 bytes a character (\u001f)
            return None
        size = codec.wire_size(to_sign)
        if limit.page_fits(size):
            return None
        return Rejected(
            "too_large",
            f"the page's record to its site partition would take {size:,} bytes, over the "
            f"{limit.page_bytes:,} that a limit of {limit.max_message_bytes:,} bytes a message leaves "
            "(STREAM_LSH_MAX_MESSAGE_BYTES)",
            to_sign.id,
        )


def _undecodable(message: Message, batch: Undecodable, out: Outbox) -> None:
    """One dead letter per undecodable batch, from the message of its last offset (which comes
    again if the batch is read again): the partition and the offset range it covers."""
    if message.offset == batch.last_offset:
        letter = _dead_letter(message, Rejected("undecodable_batch", batch.reason))
        letter[1].update(offset=batch.first_offset, last_offset=batch.last_offset)
        out.dead_letters.append(letter)


def _dead_letter(message: Message, rejected: Rejected) -> tuple[str | None, dict[str, Any]]:
    size = 0 if message.value is None else len(message.value)
    return rejected.page_id, {
        "reason": rejected.code,
        "detail": rejected.reason,
        "id": rejected.page_id,
        "topic": message.topic,
        "partition": message.partition,
        "offset": message.offset,
        "size": size,
    }
