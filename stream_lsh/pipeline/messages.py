"""The messages between the stages, as types, and their compact wire form.

Every message travels as a small JSON object whose ``k`` names its kind and whose other keys are
one or two letters. This module is where those keys are defined: each kind is a frozen dataclass
with ``to_wire`` and ``from_wire``. Stages work on the types only; the transport (the Faust app,
the in-process pipeline, the journal) turns them into bytes and back with :mod:`.codec`, the one
place that knows which kinds each stage accepts.

Who sends what:

* ingest -> sites: :class:`PageToSign`, :class:`Retraction`, :class:`InputMark`,
  :class:`OwnerChange`;
* sites -> decide: :class:`SignedForDecision`, :class:`Retraction` (passed on, in order with the
  site partition's pages), :class:`ReleaseMark`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

__all__ = [
    "DecideMessage",
    "InputMark",
    "Message",
    "OwnerChange",
    "PageToSign",
    "ReleaseMark",
    "Retraction",
    "SignedForDecision",
    "SiteMessage",
    "Wire",
    "pack_array",
    "unpack_array",
]

Wire = dict[str, Any]


def pack_array(values: np.ndarray | None, dtype: str) -> str | None:
    """A numpy vector as base64 of its little-endian bytes: one JSON string, not a list of numbers
    (encoding and decoding number lists was a sixth of a worker's time under steady load)."""
    return None if values is None else base64.b64encode(values.astype(dtype).tobytes()).decode("ascii")


def unpack_array(text: str | None, dtype: str, into: type[np.generic]) -> np.ndarray | None:
    return None if text is None else np.frombuffer(base64.b64decode(text), dtype=dtype).astype(into)


@dataclass(frozen=True)
class Retraction:
    """A page retracted at ``clock``: from ingest to one site partition, which passes it on to
    the decide partition in order with its pages (so no release point can pass it first)."""

    KIND: ClassVar[str] = "delete"
    id: str
    clock: int

    query: ClassVar[bool] = False  # never a query: held in clock order like a page

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "id": self.id, "c": self.clock}

    @classmethod
    def from_wire(cls, wire: Wire) -> Retraction:
        return cls(wire["id"], wire["c"])


@dataclass(frozen=True)
class ReleaseMark:
    """A site partition's release point (an encoded mark, see :mod:`.order`), with the input
    partitions that hold it back (for reports of pages that wait)."""

    KIND: ClassVar[str] = "wm"
    source: int  # the site partition
    mark: list[Any] | None  # encode_mark's form
    held_back_by: tuple[int, ...] = ()

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "src": self.source, "w": self.mark, "by": list(self.held_back_by)}

    @classmethod
    def from_wire(cls, wire: Wire) -> ReleaseMark:
        return cls(wire["src"], wire["w"], tuple(wire.get("by", ())))


@dataclass(frozen=True)
class SignedForDecision:
    """A page (or a query) as its site partition signed it, for the decide partition: what the
    engine's decision step reads (:class:`stream_lsh.core.prepare.SignedPage`) and what the
    outputs need (the input line of a unique page, its site for its cluster's spread, when its
    record came in for the latency metric). Arrays travel as base64 (:func:`pack_array`);
    ``signature`` None: too few shingles to sign."""

    KIND: ClassVar[str] = "signed"
    id: str
    query: bool
    clock: int
    event_time: float | None
    date_ignored: str | None
    body_hash: int
    content_hash: int
    signature: str | None
    band_keys: str | None
    shingles: str | None = None  # only when verifying by exact Jaccard
    raw: str | None = None
    site: str | None = None
    received: int | None = None
    opening: int = 0  # its opening key, and whether it is short (core/opening.py)
    short: bool = False
    sentence_openings: tuple[int, ...] = ()  # the opening key at each sentence (core/roundup.py)
    headline: int = 0  # its headline key (core/headline.py)
    notice: str | None = None  # the kind of notice it is: it has no article (core/notice.py)
    listing: bool = False  # its text is a listing of stories (core/roundup.py)
    site_headline: int = 0  # its headline key at its site (core/headline.py)
    site_key: int = 0  # its site's key (core/page.py site_key)
    part: bool = False  # page 2 or later of an article (core/headline.py later_part)
    names: str | None = None  # the sketch of the names it gives (core/names.py), packed uint32
    name_count: int = 0
    slots: str | None = None  # the wording its names are set in (core/wording.py), packed uint32

    def to_wire(self) -> Wire:
        wire: Wire = {
            "k": self.KIND,
            "id": self.id,
            "q": self.query,
            "c": self.clock,
            "ts": self.event_time,
            "di": self.date_ignored,
            "bh": self.body_hash,
            "ch": self.content_hash,
            "sig": self.signature,
            "bk": self.band_keys,
        }
        for key, value in (("sh", self.shingles), ("raw", self.raw), ("s", self.site), ("rt", self.received)):
            if value is not None:
                wire[key] = value
        if self.opening:
            wire["op"] = self.opening
        if self.short:
            wire["os"] = True
        if self.sentence_openings:
            wire["po"] = list(self.sentence_openings)
        if self.headline:
            wire["hl"] = self.headline
        if self.notice is not None:
            wire["nt"] = self.notice
        if self.listing:
            wire["ls"] = True
        if self.site_headline:
            wire["hs"] = self.site_headline
        if self.site_key:
            wire["sk"] = self.site_key
        if self.part:
            wire["pt"] = True
        if self.name_count:
            wire["nm"], wire["nc"] = self.names, self.name_count
        if self.slots is not None:
            wire["ns"] = self.slots
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> SignedForDecision:
        return cls(
            wire["id"],
            bool(wire["q"]),
            wire["c"],
            wire["ts"],
            wire["di"],
            wire["bh"],
            wire["ch"],
            wire["sig"],
            wire["bk"],
            wire.get("sh"),
            wire.get("raw"),
            wire.get("s"),
            wire.get("rt"),
            wire.get("op", 0),  # absent from messages written before openings
            bool(wire.get("os", False)),
            tuple(wire.get("po", ())),  # absent from messages written before roundups
            wire.get("hl", 0),  # ... and before headlines
            wire.get("nt"),  # ... and before notices
            bool(wire.get("ls", False)),  # ... and before listings
            wire.get("hs", 0),  # ... and before headlines at their site
            wire.get("sk", 0),  # ... and before sites
            bool(wire.get("pt", False)),  # ... and before later pages of an article
            wire.get("nm"),  # ... and before names
            wire.get("nc", 0),
            wire.get("ns"),  # ... and before their wording
        )


# -- to and from the site stage ---------------------------------------------------------------


@dataclass(frozen=True)
class PageToSign:
    """A page (or a query) as ingest hands it to its site's partition: its text blocks, clock,
    event time and body hash; ``raw`` is the input line of a page (sent on when it is unique)."""

    id: str
    query: bool
    site: str
    lang: str | None
    clock: int
    event_time: float | None
    date_ignored: str | None
    body_hash: int
    blocks: tuple[str, ...]
    raw: str | None = None
    received: int | None = None  # the input record's timestamp, ms: for the decision latency metric
    headline: int = 0  # its headline key (core/headline.py)
    listing: bool = False  # a listing of stories, as extraction tells it (core/roundup.py)
    part: bool = False  # page 2 or later of an article (core/headline.py later_part)
    names: tuple[tuple[int, ...], ...] = ()  # each block's names, hashed (core/names.py)
    address: int = 0  # where it was fetched (core/page.py address_key); 0: unknown
    slots: tuple[tuple[int, ...], ...] = ()  # each block's slots: its names' wording (core/wording.py)

    @property
    def KIND(self) -> str:
        return "query" if self.query else "page"

    def to_wire(self) -> Wire:
        wire = {
            "k": self.KIND,
            "id": self.id,
            "site": self.site,
            "lang": self.lang,
            "c": self.clock,
            "ts": self.event_time,
            "di": self.date_ignored,
            "bh": self.body_hash,
            "blocks": list(self.blocks),
        }
        if self.raw is not None:
            wire["raw"] = self.raw
        if self.received is not None:
            wire["rt"] = self.received
        if self.headline:
            wire["hl"] = self.headline
        if self.listing:
            wire["ls"] = True
        if self.part:
            wire["pt"] = True
        if any(self.names):
            wire["nm"] = cast(Any, [list(names) for names in self.names])
        if self.address:
            wire["ad"] = self.address
        if any(self.slots):
            wire["sl"] = cast(Any, [list(slots) for slots in self.slots])
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> PageToSign:
        return cls(
            wire["id"],
            wire["k"] == "query",
            wire["site"],
            wire.get("lang"),
            wire["c"],
            wire["ts"],
            wire["di"],
            wire["bh"],
            tuple(wire["blocks"]),
            wire.get("raw"),
            wire.get("rt"),
            wire.get("hl", 0),  # absent from messages written before headlines
            bool(wire.get("ls", False)),  # ... and before extraction told listings
            bool(wire.get("pt", False)),  # ... and before later pages of an article
            tuple(tuple(names) for names in wire.get("nm", ())),  # ... and before names
            wire.get("ad", 0),  # ... and before addresses
            tuple(tuple(slots) for slots in wire.get("sl", ())),  # ... and before wording
        )


@dataclass(frozen=True)
class InputMark:
    """An input partition's mark after a batch (see :mod:`.order`); ``idle``: it is caught up and
    claims to hold nothing back until its next record. ``generation``: the consumer group
    generation its worker made an idle claim in (None: not known), which decides which
    withdrawals it outlives (:class:`OwnerChange`). ``taken``: with an idle claim, the offset
    below which its worker has taken every record of the partition (None: not known).
    ``ends``: end offsets of the input partitions other workers read, as the broker gave them
    after this batch was fetched: a claim whose ``taken`` is below one does not cover the records
    past it (:meth:`.order.InputMarks.update`)."""

    KIND: ClassVar[str] = "wm"
    source: int  # the input partition
    mark: list[Any] | None
    idle: bool = False
    generation: int | None = None
    taken: int | None = None
    ends: tuple[tuple[int, int], ...] = ()

    def to_wire(self) -> Wire:
        wire = {"k": self.KIND, "src": self.source, "w": self.mark}
        if self.idle:
            wire["idle"] = True
        if self.generation is not None:
            wire["g"] = self.generation
        if self.taken is not None:
            wire["o"] = self.taken
        if self.ends:
            wire["e"] = [list(end) for end in self.ends]
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> InputMark:
        ends = tuple((source, offset) for source, offset in wire.get("e", ()))
        return cls(wire["src"], wire["w"], bool(wire.get("idle", False)), wire.get("g"), wire.get("o"), ends)


@dataclass(frozen=True)
class OwnerChange:
    """An input partition may have changed hands: its idle claim is withdrawn until its owner
    reads it again. ``before``: only a claim made in an earlier group generation than this one
    (or in an unknown one) is withdrawn; None withdraws any claim."""

    KIND: ClassVar[str] = "owner"
    source: int
    before: int | None = None

    def to_wire(self) -> Wire:
        wire: Wire = {"k": self.KIND, "src": self.source}
        if self.before is not None:
            wire["before"] = self.before
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> OwnerChange:
        return cls(wire["src"], wire.get("before"))


SiteMessage = PageToSign | InputMark | OwnerChange | Retraction
DecideMessage = SignedForDecision | Retraction | ReleaseMark
Message = SiteMessage | DecideMessage
