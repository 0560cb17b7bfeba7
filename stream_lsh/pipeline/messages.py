"""The messages between the stages, as types, and their compact wire form.

Every message travels as a small JSON object whose ``k`` names its kind and whose other keys are
one or two letters (the internal topics carry several per page, so their size matters). This
module is where those keys are defined: each kind is a frozen dataclass with ``to_wire`` and
``from_wire``. Stages work on the types only; the transport (the Faust app, the in-process
pipeline, the journal) turns them into bytes and back with :mod:`.codec`, the one place that
knows which kinds each stage accepts.

Who sends what:

* ingest -> sites: :class:`PageToSign`, :class:`InputMark`, :class:`OwnerChange`; sites -> sites:
  :class:`Flags`;
* sites -> bands: :class:`Probe`, :class:`BandMark`; ingest -> bands: :class:`Retraction`;
* sites -> homes: :class:`Registration`; bands -> homes: :class:`BandAnswer`, :class:`Ask`,
  :class:`RetractionAtHome`; homes -> homes: :class:`Ask`, :class:`Tell`, :class:`Join`,
  :class:`Leave`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from .candidates import Candidate, Exact

__all__ = [
    "AnswerVia",
    "Ask",
    "BandAnswer",
    "BandClock",
    "BandMark",
    "BandMessage",
    "Flags",
    "Frontier",
    "HomeMessage",
    "InputMark",
    "Join",
    "Leave",
    "Message",
    "OwnerChange",
    "PageToSign",
    "Probe",
    "Registration",
    "Retraction",
    "RetractionAtHome",
    "SiteMessage",
    "Standing",
    "Tell",
    "Wire",
]

Wire = dict[str, Any]


@dataclass(frozen=True)
class Probe:
    """A delivery of a page (or a query) to one band partition: the band keys of it that
    partition owns, and the content hash where that partition owns it."""

    KIND: ClassVar[str] = "probe"
    id: str
    query: bool
    home: int  # the page's home partition
    clock: int  # the record's timestamp: with the id, it orders deliveries
    event_time: float | None
    body_hash: int
    signature: str | None  # base64 of little-endian uint32: sent only where keys or the hash are
    keys: tuple[tuple[int, int], ...]  # (band, key) pairs this partition owns
    content_hash: int | None

    def to_wire(self) -> Wire:
        return {
            "k": self.KIND,
            "id": self.id,
            "q": self.query,
            "home": self.home,
            "c": self.clock,
            "ts": self.event_time,
            "bh": self.body_hash,
            "sig": self.signature,
            "keys": [list(pair) for pair in self.keys],
            "ch": self.content_hash,
        }

    @classmethod
    def from_wire(cls, wire: Wire) -> Probe:
        return cls(
            wire["id"],
            bool(wire["q"]),
            wire["home"],
            wire["c"],
            wire["ts"],
            wire["bh"],
            wire["sig"],
            tuple((band, key) for band, key in wire["keys"]),
            wire["ch"],
        )


@dataclass(frozen=True)
class Retraction:
    """A page retracted at ``clock``, to every band partition; the ``tell`` partition passes it on
    to the page's home once it has answered every delivery before it."""

    KIND: ClassVar[str] = "delete"
    id: str
    clock: int
    home: int
    tell: int

    query: ClassVar[bool] = False  # never a query: held in clock order like a page's probe

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "id": self.id, "c": self.clock, "home": self.home, "tell": self.tell}

    @classmethod
    def from_wire(cls, wire: Wire) -> Retraction:
        return cls(wire["id"], wire["c"], wire["home"], wire["tell"])


@dataclass(frozen=True)
class BandMark:
    """A site partition's release point (an encoded mark, see :mod:`.order`), with the input
    partitions that hold it back (for reports of pages that wait)."""

    KIND: ClassVar[str] = "wm"
    source: int  # the site partition
    mark: list[Any] | None  # encode_mark's form
    held_back_by: tuple[int, ...] = ()

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "src": self.source, "w": self.mark, "by": list(self.held_back_by)}

    @classmethod
    def from_wire(cls, wire: Wire) -> BandMark:
        return cls(wire["src"], wire["w"], tuple(wire.get("by", ())))


@dataclass(frozen=True)
class BandAnswer:
    """A band partition's answer to one delivery: its verified candidates, the exact copy it
    knows, and how far its clock has come."""

    KIND: ClassVar[str] = "res"
    id: str
    query: bool
    band_partition: int
    clock: int
    body_hash: int
    band_clock: int | None
    exact: Exact | None
    candidates: tuple[Candidate, ...]

    def to_wire(self) -> Wire:
        return {
            "k": self.KIND,
            "id": self.id,
            "q": self.query,
            "b": self.band_partition,
            "c": self.clock,
            "bh": self.body_hash,
            "wc": self.band_clock,
            "ex": None if self.exact is None else list(self.exact),
            "cands": [list(candidate) for candidate in self.candidates],
        }

    @classmethod
    def from_wire(cls, wire: Wire) -> BandAnswer:
        exact = wire["ex"]
        return cls(
            wire["id"],
            bool(wire["q"]),
            wire["b"],
            wire["c"],
            wire["bh"],
            wire["wc"],
            None if exact is None else Exact(*exact),
            tuple(Candidate(*row) for row in wire["cands"]),
        )


@dataclass(frozen=True)
class Ask:
    """Is page ``id`` earlier than page ``asker`` (read at ``clock``)? Sent to ``id``'s home by a
    band partition on the asker's behalf (with that partition's clock), or by the asker's home."""

    KIND: ClassVar[str] = "ask"
    id: str
    asker: str
    asker_home: int
    query: bool
    clock: int
    asker_body_hash: int
    similarity: float
    band_partition: int | None = None
    band_clock: int | None = None
    containment: float | None = None  # None: sent before containment existed

    def to_wire(self) -> Wire:
        wire = {
            "k": self.KIND,
            "id": self.id,
            "from": self.asker,
            "home": self.asker_home,
            "q": self.query,
            "c": self.clock,
            "fbh": self.asker_body_hash,
            "sim": self.similarity,
        }
        if self.containment is not None:
            wire["con"] = self.containment
        if self.band_partition is not None:
            wire.update(b=self.band_partition, wc=self.band_clock)
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> Ask:
        return cls(
            wire["id"],
            wire["from"],
            wire["home"],
            bool(wire["q"]),
            wire["c"],
            wire["fbh"],
            wire["sim"],
            wire.get("b"),
            wire.get("wc"),
            wire.get("con"),
        )


@dataclass(frozen=True)
class RetractionAtHome:
    """A retraction passed on to the page's home by the band partition that tells it."""

    KIND: ClassVar[str] = "delete"
    id: str
    clock: int

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "id": self.id, "c": self.clock}

    @classmethod
    def from_wire(cls, wire: Wire) -> RetractionAtHome:
        return cls(wire["id"], wire["c"])


class Standing(str, Enum):
    """What a candidate's home says about it to a page that asked (see :class:`.gather.Gather`)."""

    DECIDED = "decided"  # decided before the asker: earlier; the asker may join its cluster
    LATER = "later"  # in flight and later than the asker: the asker ignores it
    GONE = "gone"  # expired or retracted before the asker was read


@dataclass(frozen=True)
class Tell:
    """The answer to an :class:`Ask`, sent to the asker's home: the candidate's standing for the
    asker's delivery (``asker``, ``asker_clock``, ``asker_body_hash``), and its cluster when it is
    decided."""

    KIND: ClassVar[str] = "tell"
    asker: str
    asker_clock: int
    asker_body_hash: int
    query: bool
    candidate: str
    standing: Standing
    cluster: str | None = None
    cluster_home: int | None = None

    def to_wire(self) -> Wire:
        return {
            "k": self.KIND,
            "id": self.asker,
            "ac": self.asker_clock,
            "abh": self.asker_body_hash,
            "q": self.query,
            "cand": self.candidate,
            "st": self.standing.value,
            "cl": self.cluster,
            "clh": self.cluster_home,
        }

    @classmethod
    def from_wire(cls, wire: Wire) -> Tell:
        return cls(
            wire["id"],
            wire["ac"],
            wire["abh"],
            bool(wire["q"]),
            wire["cand"],
            Standing(wire["st"]),
            wire["cl"],
            wire["clh"],
        )


@dataclass(frozen=True)
class Join:
    """A decided page joins a cluster (or rejoins it, as a new version): sent to the cluster's
    home, which owns the cluster's record. ``clock`` (the page's) and ``source`` (its site) are
    what the cluster's spread needs: joins are applied to it in clock order, as batch decides.
    Both are absent from joins written before alerts."""

    KIND: ClassVar[str] = "join"
    cluster: str
    member: str
    event_time: float | None
    clock: int | None = None
    source: str | None = None

    def to_wire(self) -> Wire:
        wire: Wire = {"k": self.KIND, "cl": self.cluster, "m": self.member, "ts": self.event_time}
        if self.clock is not None:
            wire["c"] = self.clock
        if self.source is not None:
            wire["s"] = self.source
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> Join:
        return cls(wire["cl"], wire["m"], wire["ts"], wire.get("c"), wire.get("s"))


@dataclass(frozen=True)
class Leave:
    """A member leaves its cluster (replaced by a new version, or retracted); ``clock`` is when:
    the new version's clock or the retraction's (absent from leaves written before alerts)."""

    KIND: ClassVar[str] = "leave"
    cluster: str
    member: str
    clock: int | None = None

    def to_wire(self) -> Wire:
        wire: Wire = {"k": self.KIND, "cl": self.cluster, "m": self.member}
        if self.clock is not None:
            wire["c"] = self.clock
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> Leave:
        return cls(wire["cl"], wire["m"], wire.get("c"))


@dataclass(frozen=True)
class BandClock:
    """How far a band partition has applied the probes, to every home: every probe (and
    retraction) up to the mark ``(clock, page)`` is applied there and its answers, questions and
    retractions sent, before this message. A home's decided frontier rests on every band
    partition's (:class:`Frontier`)."""

    KIND: ClassVar[str] = "bclock"
    band_partition: int
    clock: int
    page: str

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "b": self.band_partition, "c": self.clock, "p": self.page}

    @classmethod
    def from_wire(cls, wire: Wire) -> BandClock:
        return cls(wire["b"], wire["c"], wire["p"])


@dataclass(frozen=True)
class Frontier:
    """A home's decided frontier, to every home: every page of that home *before* the mark
    ``(clock, page)`` is decided, and its joins and leaves are sent (before this message, on the
    same partition). With every home's, a cluster's home applies joins and leaves in clock
    order, as batch does, and the story-spread alerts are batch's (:mod:`stream_lsh.core.spread`)."""

    KIND: ClassVar[str] = "frontier"
    home: int
    clock: int
    page: str

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "h": self.home, "c": self.clock, "p": self.page}

    @classmethod
    def from_wire(cls, wire: Wire) -> Frontier:
        return cls(wire["h"], wire["c"], wire["p"])


@dataclass(frozen=True)
class AnswerVia:
    """A query's answer on its way out through the home of the cluster it matched, which adds that
    cluster's spread (its pages and sources, :class:`stream_lsh.core.spread.Spread`)."""

    KIND: ClassVar[str] = "via"
    cluster: str
    answer: dict[str, Any]

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "cl": self.cluster, "a": self.answer}

    @classmethod
    def from_wire(cls, wire: Wire) -> AnswerVia:
        return cls(wire["cl"], wire["a"])


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
        )


@dataclass(frozen=True)
class Flags:
    """Block fingerprints one site partition's learner made boilerplate of ``site``, for the others
    (a block learnt at two sites is every site's). ``site`` None: of every site (flags written
    before boilerplate was kept per site)."""

    KIND: ClassVar[str] = "flags"
    fingerprints: tuple[int, ...]
    site: str | None = None

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "f": list(self.fingerprints), "s": self.site}

    @classmethod
    def from_wire(cls, wire: Wire) -> Flags:
        return cls(tuple(wire["f"]), wire.get("s"))


@dataclass(frozen=True)
class InputMark:
    """An input partition's mark after a batch (see :mod:`.order`); ``idle``: it is caught up and
    claims to hold nothing back until its next record."""

    KIND: ClassVar[str] = "wm"
    source: int  # the input partition
    mark: list[Any] | None
    idle: bool = False

    def to_wire(self) -> Wire:
        wire = {"k": self.KIND, "src": self.source, "w": self.mark}
        if self.idle:
            wire["idle"] = True
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> InputMark:
        return cls(wire["src"], wire["w"], bool(wire.get("idle", False)))


@dataclass(frozen=True)
class OwnerChange:
    """An input partition changed hands: its idle claim is withdrawn until its new owner reads it."""

    KIND: ClassVar[str] = "owner"
    source: int

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "src": self.source}

    @classmethod
    def from_wire(cls, wire: Wire) -> OwnerChange:
        return cls(wire["src"])


@dataclass(frozen=True)
class Registration:
    """A delivery announced at its page's home before any probe of it is sent: which band
    partitions will answer (``targets``), and whether the page could be signed at all."""

    KIND: ClassVar[str] = "reg"
    id: str
    query: bool
    clock: int
    event_time: float | None
    date_ignored: str | None
    body_hash: int
    targets: tuple[int, ...]
    no_content: bool
    raw: str | None = None
    received: int | None = None  # the input record's timestamp, ms: for the decision latency metric
    site: str | None = None  # the page's source, for its cluster's spread (None: a query, or unknown)

    def to_wire(self) -> Wire:
        wire = {
            "k": self.KIND,
            "id": self.id,
            "q": self.query,
            "c": self.clock,
            "ts": self.event_time,
            "di": self.date_ignored,
            "bh": self.body_hash,
        }
        if self.raw is not None:
            wire["raw"] = self.raw
        wire.update(targets=list(self.targets), nc=self.no_content)
        if self.received is not None:
            wire["rt"] = self.received
        if self.site:
            wire["s"] = self.site
        return wire

    @classmethod
    def from_wire(cls, wire: Wire) -> Registration:
        return cls(
            wire["id"],
            bool(wire["q"]),
            wire["c"],
            wire["ts"],
            wire["di"],
            wire["bh"],
            tuple(wire["targets"]),
            bool(wire["nc"]),
            wire.get("raw"),
            wire.get("rt"),
            wire.get("s"),
        )


SiteMessage = PageToSign | Flags | InputMark | OwnerChange
BandMessage = Probe | Retraction | BandMark
HomeMessage = (
    Registration
    | BandAnswer
    | Ask
    | Tell
    | Join
    | Leave
    | RetractionAtHome
    | BandClock
    | Frontier
    | AnswerVia
)
Message = SiteMessage | BandMessage | HomeMessage
