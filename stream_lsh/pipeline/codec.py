"""The one codec between the stages' typed messages and bytes.

The Faust app, the in-process pipeline and the journal all go through it: a batch of messages for
one stage partition is one Kafka message (a JSON array of wire records, see :mod:`.messages`),
and a journal segment holds such batches exactly as they were received. Kinds are named per
stage (``wm`` means one thing to a site partition and another to the decide partition), so
decoding needs the stage the bytes are for; a record that stage never receives is
a :class:`~stream_lsh.errors.ProtocolError`, never silently skipped.

Snapshots are plain JSON objects (each stage's ``snapshot()`` names its fields); this module
only turns them into bytes and back, so that one library choice (orjson) lives here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from ..errors import ProtocolError
from .messages import (
    InputMark,
    Message,
    OwnerChange,
    PageToSign,
    ReleaseMark,
    Retraction,
    SignedForDecision,
    Wire,
)
from .outbox import Stage

__all__ = [
    "decode",
    "decode_segment",
    "dump_state",
    "encode",
    "encode_within",
    "from_wire",
    "load_state",
    "segments",
    "wire_size",
]

_KINDS: dict[str, dict[str, Any]] = {
    Stage.SITES: {
        "page": PageToSign,
        "query": PageToSign,
        Retraction.KIND: Retraction,
        InputMark.KIND: InputMark,
        OwnerChange.KIND: OwnerChange,
    },
    Stage.DECIDE: {
        SignedForDecision.KIND: SignedForDecision,
        Retraction.KIND: Retraction,
        ReleaseMark.KIND: ReleaseMark,
    },
}
_STAGE_NAMES = {Stage.SITES: "site", Stage.DECIDE: "decide"}


def encode(messages: Sequence[Message]) -> bytes:
    """One batch of messages for a stage partition, as the bytes of one Kafka message."""
    return orjson.dumps([message.to_wire() for message in messages])


def encode_within(messages: Sequence[Message], max_bytes: int) -> list[bytes]:
    """One batch as few records as the limit allows (:mod:`.limits`): each record is what
    :func:`encode` makes of a run of the messages, in order, and no longer than ``max_bytes`` unless it
    holds a single message that is longer on its own (the input refuses pages that could be)."""
    whole = encode(messages)
    if len(whole) <= max_bytes:
        return [whole]
    return _arrays([orjson.dumps(message.to_wire()) for message in messages], max_bytes)


def _arrays(items: Sequence[bytes], max_bytes: int) -> list[bytes]:
    """JSON values (bytes) as JSON arrays of runs of them, in order, each at most ``max_bytes``
    long unless it holds a single value that is longer on its own."""
    arrays: list[bytes] = []
    run: list[bytes] = []
    size = 1  # the closing bracket
    for item in items:
        if run and size + len(item) + 1 > max_bytes:
            arrays.append(b"[" + b",".join(run) + b"]")
            run, size = [], 1
        run.append(item)
        size += len(item) + 1  # the bracket or comma before it
    if run:
        arrays.append(b"[" + b",".join(run) + b"]")
    return arrays


def wire_size(message: Message) -> int:
    """Bytes of one message in a batch record (without the comma that separates it)."""
    return len(orjson.dumps(message.to_wire()))


def decode(stage: str, data: bytes) -> list[Message]:
    """The messages of one batch made by :func:`encode`, for a partition of ``stage``."""
    try:
        wires = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ProtocolError(
            f"a {_STAGE_NAMES[stage]} partition got a record that is not JSON: {error}"
        ) from None
    if not isinstance(wires, list):
        raise ProtocolError(f"a {_STAGE_NAMES[stage]} partition got {type(wires).__name__}, not a batch")
    return [from_wire(stage, wire) for wire in wires]


def from_wire(stage: str, wire: Wire) -> Message:
    """One wire record for a partition of ``stage`` as its type."""
    kind = _KINDS[stage].get(wire.get("k", "")) if isinstance(wire, dict) else None
    if kind is None:
        found = wire.get("k") if isinstance(wire, dict) else wire
        raise ProtocolError(f"a {_STAGE_NAMES[stage]} partition got a record of kind {found!r}")
    try:
        message: Message = kind.from_wire(wire)
    except (KeyError, TypeError, ValueError) as error:
        raise ProtocolError(
            f"a {_STAGE_NAMES[stage]} partition got a {wire['k']!r} record it cannot read "
            f"({type(error).__name__}: {error})"
        ) from None
    return message


def segments(batches: Sequence[bytes], max_bytes: int, *, upto: int | None = None) -> list[bytes]:
    """Batches made by :func:`encode`, as they were received, in journal segments of at most
    ``max_bytes`` each (one that is longer on its own is a segment by itself).

    ``upto``: the offset of the last input record these batches hold. The last segment names it
    (``{"upto": N, "batches": [...]}``, a plain array otherwise), so that a journal whose rows stop
    part-way through the segments of one micro-batch never claims to cover that micro-batch."""
    arrays = _arrays(batches, max_bytes)
    if upto is not None and arrays:
        arrays[-1] = b'{"upto":%d,"batches":%b}' % (upto, arrays[-1])
    return arrays


def decode_segment(stage: str, data: bytes) -> tuple[list[list[Message]], int | None]:
    """The batches of a journal segment made by :func:`segments`, each as its messages, and the
    input offset the segment covers up to (None when it does not say)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ProtocolError(f"a journal segment of the {stage} stage is not JSON: {error}") from None
    upto = None
    if isinstance(value, dict):
        upto, value = value["upto"], value["batches"]
    return [[from_wire(stage, wire) for wire in batch] for batch in value], upto


def dump_state(state: dict[str, Any]) -> bytes:
    """A stage's snapshot as bytes (the journal splits them into chunks)."""
    return orjson.dumps(state)


def load_state(data: bytes) -> dict[str, Any]:
    state: dict[str, Any] = orjson.loads(data)
    return state
