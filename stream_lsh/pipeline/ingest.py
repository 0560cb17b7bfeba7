"""Stage 1, at the input partition: validate each message, extract its text, route it by site.

Stateless, so it may run on any worker and be replayed freely. Everything that cannot be
processed becomes a dead letter carrying the reason and where the message came from (topic,
partition, offset, size), never the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from ..core.dedup import Deduplicator
from ..core.page import Page
from ..core.record import Delete, Rejected, parse_query, parse_record
from .order import encode_mark, mark_of
from .outbox import Outbox, Stage
from .routing import Layout

__all__ = ["Message", "Ingest"]


@dataclass(frozen=True)
class Message:
    """One Kafka message as the stages see it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class Ingest:
    """Turns input messages into site-stage records (pages, queries) and home records (retractions)."""

    def __init__(self, engine: Deduplicator, layout: Layout, *, max_page_bytes: int, watermarks: bool = False,
                 lateness: float = 0.0) -> None:
        self.engine = engine
        self.layout = layout
        self.max_page_bytes = max_page_bytes
        self.watermarks = watermarks  # see stream_lsh.pipeline.order
        self.lateness = lateness

    @property
    def marks_caught_up(self) -> bool:
        """Whether the mark of a caught-up partition says it is idle after it: with watermarks and
        no lateness (a lateness lets the partition's later pages be older than its mark)."""
        return self.watermarks and not self.lateness

    def pages(self, messages: Sequence[Message], caught_up: Collection[int] = ()) -> Outbox:
        """Messages of the input topic: pages and retractions; then, with ``watermarks``, each input
        partition's mark to every site partition. ``caught_up``: the input partitions whose last
        record (when it was fetched) is in ``messages``; their marks say they are idle after them
        (see :attr:`marks_caught_up`)."""
        out = Outbox()
        marks: dict[int, tuple[float, str]] = {}
        for message in messages:
            parsed = self._parse(message, parse_record)
            if isinstance(parsed, Rejected):
                out.dead_letters.append(_dead_letter(message, parsed))
            elif isinstance(parsed, Delete):
                out.send(Stage.HOMES, self.layout.home(parsed.id), {"k": "delete", "id": parsed.id})
            else:
                page, raw = parsed
                record = self._page_record(page, "page")
                record["raw"] = raw.decode("utf-8")
                out.send(Stage.SITES, self.layout.site(record["site"]), record)
                if self.watermarks and record["ts"] is not None:
                    mark = (record["ts"] - self.lateness, "") if self.lateness else mark_of(record["ts"], page.id)
                    marks[message.partition] = max(marks.get(message.partition, mark), mark)
        for partition, mark in sorted(marks.items()):
            self._broadcast(partition, mark, out, idle_after=self.marks_caught_up and partition in caught_up)
        return out

    def idle(self, partition: int) -> Outbox:
        """What a timer sends for an input partition that is caught up and quiet: it holds nothing
        back until its next page."""
        out = Outbox()
        self._broadcast(partition, None, out)
        return out

    def _broadcast(self, partition: int, mark: tuple[float, str] | None, out: Outbox, idle_after: bool = False) -> None:
        record = {"k": "wm", "src": partition, "w": encode_mark(mark)}
        if idle_after:
            record["idle"] = True
        for site in range(self.layout.sites):
            out.send(Stage.SITES, site, record)

    def queries(self, messages: Sequence[Message]) -> Outbox:
        """Messages of the query topic: pages to look up without indexing them. The answer is
        keyed by the query's ``correlation_id`` (its ``id`` when it has none)."""
        out = Outbox()
        for message in messages:
            parsed = self._parse(message, parse_query)
            if isinstance(parsed, Rejected):
                out.dead_letters.append(_dead_letter(message, parsed))
                continue
            page, _ = parsed
            record = self._page_record(page, "query")
            out.send(Stage.SITES, self.layout.site(record["site"]), record)
        return out

    def _parse(self, message: Message, parse):  # type: ignore[no-untyped-def]
        raw = message.value
        if raw is None or not raw.strip():
            return Rejected("empty", "the message has no value")
        parsed = parse(raw.strip(), self.max_page_bytes)
        if isinstance(parsed, Page):
            return parsed, raw.strip()
        return parsed

    def _page_record(self, page: Page, kind: str) -> dict:
        engine = self.engine
        return {
            "k": kind,
            "id": page.id,
            "site": page.site,
            "lang": page.lang,
            "ts": engine.event_time(page),
            "bh": engine.body_hash(page),
            "blocks": engine.extract_blocks(page),
        }


def _dead_letter(message: Message, rejected: Rejected) -> tuple[str | None, dict]:
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
