"""The messages between the stages, as types, and their compact wire form.

Every message travels as a small JSON object whose ``k`` names its kind and whose other keys are
one or two letters (the internal topics carry several per page, so their size matters). This
module is where those keys are defined: each kind is a frozen dataclass with ``to_wire`` and
``from_wire``, and :func:`decode` turns a wire record into its type. A stage works on the types;
only the transport (:mod:`stream_lsh.stream.app`, :mod:`.local`, the journal) sees the wire.

The band stage (:mod:`.shard`) speaks these types; the other stages still build and read the
wire records themselves, and move over kind by kind (issue 13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .candidates import Candidate

__all__ = ["Ask", "BandAnswer", "BandMark", "Probe", "Retraction", "RetractionAtHome", "decode"]

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
    exact: tuple[str, int, float | None] | None  # (id, its home, its event time)
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
            None if exact is None else (exact[0], exact[1], exact[2]),
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
        )


@dataclass(frozen=True)
class RetractionAtHome:
    """A retraction passed on to the page's home by the band partition that tells it."""

    KIND: ClassVar[str] = "delete"
    id: str
    clock: int

    def to_wire(self) -> Wire:
        return {"k": self.KIND, "id": self.id, "c": self.clock}


Message = Probe | Retraction | BandMark | BandAnswer | Ask | RetractionAtHome

_TO_BANDS: dict[str, Any] = {Probe.KIND: Probe, Retraction.KIND: Retraction, BandMark.KIND: BandMark}


def decode(wire: Wire) -> Probe | Retraction | BandMark:
    """A record for a band partition as its type; another kind is refused (it was routed wrong)."""
    kind = _TO_BANDS.get(wire.get("k", ""))
    if kind is None:
        raise ValueError(f"a band partition got a record of kind {wire.get('k')!r}")
    decoded: Probe | Retraction | BandMark = kind.from_wire(wire)
    return decoded
