"""Faust's Kafka consumer, with partitions that were never committed read again from their start
whenever Faust rewinds to the committed offsets.

Around every rebalance Faust drops records it has fetched but not delivered: the agents' queues are
emptied when flow resumes, and a fetch that straddles a new generation is cut short
(``faust/transport/consumer.py``, ``getmany``). The consumer's position has moved past them all the
same. Faust relies on one step to fetch them again: it seeks every assigned partition to its
committed offset (``perform_seek``). aiokafka's ``seek_to_committed`` seeks only where an offset
*was* committed (``if offset and offset > 0``), so a partition without one, or at 0, keeps its
position, and the records dropped there are never read. That is the state of every input partition
of a new app until its first commit: measured with two workers joining one after the other on
Apache Kafka, 1 run in 8 left a page undecided for good (its partition's position 1, nothing
delivered, nothing committed).

:class:`RewindingConsumer` seeks such partitions to their beginning instead, which is where the
consumer group starts reading them anyway (``auto_offset_reset=earliest``): what was dropped comes
again, and what had been delivered comes again as a repeat, which the stages ignore. Changelog
partitions are left alone: Faust positions them itself from the offsets stored with the tables.

**Records taken for partitions Faust does not read.** Faust asks aiokafka for the records of its
*active* partitions (assigned and not paused: a table's changelog partitions are paused until
recovery reads them), and hands aiokafka its own live set of them, from another thread. aiokafka
reads that set again each time it waits for records, and reads an empty set as "every partition".
So when recovery pauses the last active partition while a fetch waits (as it does when it has read
the active changelogs), aiokafka hands over everything it has buffered, the records of paused
partitions included; Faust drops those as not active, and aiokafka's position has moved past them.
A standby copy (a warm copy of a partition another worker owns) lost its first rows that way, and
a worker that later took the partition over from it refused to run ("no head row", exit 78;
tests/test_restart.py). :meth:`RewindingConsumer._getmany` hands aiokafka a copy of the set taken
when the fetch starts, and fetches nothing when it is empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from aiokafka import AIOKafkaConsumer, TopicPartition
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP
from faust.types.transports import ConsumerT

__all__ = ["RewindingConsumer", "RewindingTransport", "never_committed", "rewind"]


def never_committed(committed: Mapping[Any, int | None]) -> list[Any]:
    """The partitions of a ``seek_to_committed`` result that aiokafka did not seek: no offset, or 0."""
    return sorted(tp for tp, offset in committed.items() if not offset)


async def rewind(consumer: AIOKafkaConsumer, partitions: Iterable[TopicPartition]) -> None:
    """Seek ``partitions`` to their earliest offset (and drop what was fetched for them)."""
    partitions = list(partitions)
    if partitions:
        await consumer.seek_to_beginning(*partitions)


class RewindingConsumer(faust_aiokafka.Consumer):
    """Faust's aiokafka consumer whose seek to the committed offsets also rewinds the stream
    partitions that have none, and which never fetches for a partition Faust has paused (see the
    module docstring)."""

    async def _getmany(self, active_partitions: set[TP] | None, timeout: float) -> Any:
        """Faust's fetch, with a copy of the partitions to read (see the module docstring): records
        of a partition paused meanwhile stay in aiokafka's buffer until it is resumed."""
        if active_partitions is not None:
            active_partitions = set(active_partitions)
            if not active_partitions:
                return {}
        return await super()._getmany(active_partitions, timeout)

    async def seek_to_committed(self) -> Mapping[TP, int]:
        committed = await super().seek_to_committed()
        uncommitted = [tp for tp in never_committed(committed) if not self._is_changelog_tp(tp)]
        if uncommitted:
            thread = self._thread
            await thread.call_thread(rewind, thread._ensure_consumer(), uncommitted)
        return committed


class RewindingTransport(faust_aiokafka.Transport):
    """Faust's aiokafka transport, building :class:`RewindingConsumer` consumers; set it as
    ``app.transport`` before anything reads the app's topics."""

    Consumer: ClassVar[type[ConsumerT]] = RewindingConsumer
