"""A record batch of the input that cannot be decoded becomes a dead letter, not a poison pill.

aiokafka decompresses and parses a batch when the consumer iterates it (``PartitionRecords``, in
``aiokafka/consumer/fetcher.py``). A batch it cannot read (a codec it lacks, a corrupt compressed
payload that the broker stored anyway) raises there, inside Faust's fetcher: the worker crashes,
the partition goes to the next worker, which crashes on the same batch, and the group is down.

Here the batches of the input topics are read whole before aiokafka iterates them. One that fails
is replaced by one marker record per offset it covers (no value, the :data:`UNDECODABLE_HEADER`
header saying which offsets and why), so the consumer's position moves past it as if it had been
read, and Faust acknowledges and commits its offsets without a gap. The ingest stage turns the
marker at the batch's last offset into one dead letter carrying the partition and the offset range;
the others are covered by it. Batches of other topics (internal, changelogs) are left as they
were: the app wrote them itself, and a failure there must stop the worker.

Use :func:`skip_undecodable_batches` once per process, before the consumer is built.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka.consumer import fetcher

from ..pipeline.ingest import Undecodable
from .topics import header_value

__all__ = ["UNDECODABLE_HEADER", "skip_undecodable_batches", "undecodable_of"]

UNDECODABLE_HEADER = "stream-lsh-undecodable"

_ORIGINAL = fetcher.PartitionRecords


def _header(batch: Undecodable) -> bytes:
    return orjson.dumps({"first": batch.first_offset, "last": batch.last_offset, "reason": batch.reason})


def undecodable_of(value: bytes | None, headers: Any) -> Undecodable | None:
    """The batch a marker record stands for; None for any other record (one with a value, or
    without a readable header). ``headers`` as Kafka clients give them: pairs or a mapping."""
    raw = None if value is not None else header_value(headers, UNDECODABLE_HEADER)
    if raw is None:
        return None
    try:
        fields = orjson.loads(raw)
        return Undecodable(int(fields["first"]), int(fields["last"]), str(fields["reason"]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class _Marker:
    """What aiokafka reads from a record, for one offset of an undecodable batch."""

    offset: int
    timestamp: int
    timestamp_type: int
    headers: tuple[tuple[str, bytes], ...]
    key: None = None
    value: None = None
    checksum: None = None


class _CheckedBatch:
    """A record batch read whole up front; if that fails, the markers of its offsets instead."""

    def __init__(self, batch: Any) -> None:
        self._batch = batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)

    def __iter__(self) -> Iterator[Any]:
        batch = self._batch
        try:
            return iter(list(batch))
        except Exception as error:  # a codec missing or failing, a corrupt record: any of them
            first, last = batch.base_offset, batch.next_offset - 1
            reason = f"{type(error).__name__}: {error}"[:500]
            header = ((UNDECODABLE_HEADER, _header(Undecodable(first, last, reason))),)
            stamp = getattr(batch, "max_timestamp", None) or getattr(batch, "first_timestamp", 0) or 0
            kind = getattr(batch, "timestamp_type", 0) or 0
            return iter([_Marker(offset, stamp, kind, header) for offset in range(first, last + 1)])


class _CheckedRecords:
    """A fetch response's records, handing out checked batches."""

    def __init__(self, records: Any) -> None:
        self._records = records

    def __getattr__(self, name: str) -> Any:
        return getattr(self._records, name)

    def has_next(self) -> bool:
        return bool(self._records.has_next())

    def next_batch(self) -> Any:
        batch = self._records.next_batch()
        return None if batch is None else _CheckedBatch(batch)


def _checking(topics: frozenset[str]) -> Callable[..., Any]:
    class CheckedPartitionRecords(_ORIGINAL):  # type: ignore[misc,valid-type]  # aiokafka has no hints
        def __init__(self, tp: Any, records: Any, *args: Any, **kwargs: Any) -> None:
            if tp.topic in topics:
                records = _CheckedRecords(records)
            super().__init__(tp, records, *args, **kwargs)

    return CheckedPartitionRecords


def skip_undecodable_batches(topics: Collection[str]) -> None:
    """Undecodable batches of ``topics`` become marker records (see the module docstring), in
    every aiokafka consumer of this process built from now on."""
    fetcher.PartitionRecords = _checking(frozenset(topics))
