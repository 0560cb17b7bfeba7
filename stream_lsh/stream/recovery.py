"""Table recovery that reads a changelog to its true end, even on the embedded broker.

Faust restores a table by reading its changelog partitions up to the end offsets the broker
reports (ListOffsets, latest), then pauses them (``faust/tables/recovery.py``, ``_build_highwaters``).
The embedded broker (Tansu) reports the *base offset of the partition's last record batch* + 1
instead of the last offset + 1, so when the last batch holds several records, recovery stops
early and the rows in the rest of that batch are silently missing from the table (measured: 1,820
of 2,000 rows restored; docs/notes/faust-on-tansu.md, section 3).

The fix corrects only the end offsets that recovery uses: starting from the reported end - 1, a
private, group-less consumer reads forward until a fetch comes back empty, and the end is where it
stopped. On Apache Kafka the read-forward finds nothing past the reported end, which is then kept,
so the correction is harmless there; it costs one extra consumer start and a short poll per
recovery. Other users of end offsets (consumer lag, the monitor) are not corrected.

The end of every recovery has a second defect, on any broker (faust-streaming#596): faust resumes
the stream partitions, *then* seeks them to their committed offsets, *then* resumes flow control,
which empties every agent's queue. Records fetched in between reach the queues and are dropped there,
while the consumer already counts them as read: it never delivers them again, and later acks commit
past them. A worker that starts or restarts with a backlog loses inputs that way (measured: pages that
never got a decision after a kill -9). :meth:`SafeRecovery.on_recovery_completed` suspends flow
control first, so records fetched in that window wait in faust's conductor until the seek and the
emptying are done, and then reach their streams.

:func:`read_changelog` reads one changelog partition whole, from its start to its true end, by a
consumer of its own: the store restores a partition's rows with it when its local copy lacks some
(:mod:`.state`).

Use::

    app = faust.App(..., TableManager=SafeTableManager)
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from faust.exceptions import ConsistencyError
from faust.tables import TableManager
from faust.tables.recovery import Recovery
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth, server_list
from faust.types import TP, AppT
from faust.types.transports import ConsumerT

from ..errors import BrokerError, ExitCode

__all__ = ["SafeRecovery", "SafeTableManager", "private_consumer", "read_changelog", "true_end_offsets"]

log = logging.getLogger(__name__)


def private_consumer(app: AppT, purpose: str, **overrides: Any) -> AIOKafkaConsumer:
    """A group-less consumer of the app's cluster, with the app's credentials, that reads what
    faust's own consumer reads (``read_committed`` in transactions) and starts at the earliest
    offset when asked for one out of range (records deleted meanwhile)."""
    conf, transport = app.conf, app.transport
    settings: dict[str, Any] = {
        "bootstrap_servers": server_list(transport.url, transport.default_port),  # type: ignore[attr-defined]
        "client_id": f"{conf.broker_client_id}-{purpose}",
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "isolation_level": "read_committed" if app.in_transaction else "read_uncommitted",
        "max_partition_fetch_bytes": conf.consumer_max_fetch_size,
        "request_timeout_ms": int(conf.broker_request_timeout * 1000),
        **credentials_to_aiokafka_auth(conf.broker_credentials, conf.ssl_context),
    }
    return AIOKafkaConsumer(**(settings | overrides))


async def true_end_offsets(
    app: AppT, reported: Mapping[TP, int | None], *, idle_ms: int = 250, timeout: float = 30.0
) -> dict[TP, int | None]:
    """The end offsets (last offset + 1) of ``reported``'s partitions, found by reading forward.

    ``reported`` maps partitions to the end offsets the broker gave. For every partition with a
    non-empty reported end E, a consumer without a group starts at E - 1 (the start of the last
    batch on Tansu, the last record on Kafka) and reads until every partition has been read past E
    and one poll of ``idle_ms`` brings nothing. The result is never below the reported end; a
    partition reported as empty (0 or None) is left as it is. If the read-forward fails or takes
    longer than ``timeout`` seconds, the ends found so far are returned and a warning is logged.
    """
    ends: dict[TP, int | None] = dict(reported)
    todo = {tp: end for tp, end in reported.items() if end}
    if not todo:
        return ends
    consumer = private_consumer(app, "end-offsets", fetch_max_wait_ms=50)
    partitions = {TopicPartition(tp.topic, tp.partition): tp for tp in todo}

    async def read_forward() -> None:
        await consumer.start()
        consumer.assign(list(partitions))
        for ktp, tp in partitions.items():
            consumer.seek(ktp, todo[tp] - 1)
        while True:
            fetched = await consumer.getmany(timeout_ms=idle_ms)
            for ktp, records in fetched.items():
                if records:
                    tp = partitions[ktp]
                    ends[tp] = max(ends[tp] or 0, records[-1].offset + 1)
            # positions also move over transaction markers, which yield no records
            positions = {tp: await consumer.position(ktp) for ktp, tp in partitions.items()}
            for tp, position in positions.items():
                ends[tp] = max(ends[tp] or 0, position)
            if not any(fetched.values()) and all(positions[tp] >= todo[tp] for tp in todo):
                return

    try:
        await asyncio.wait_for(read_forward(), timeout)
    except (KafkaError, OSError, asyncio.TimeoutError) as error:
        log.warning(
            "Could not read changelog partitions to their end (%r); recovery may stop at %r", error, ends
        )
    finally:
        await consumer.stop()
    corrected = {tp: (todo[tp], ends[tp]) for tp in todo if ends[tp] != todo[tp]}
    if corrected:
        log.warning("Broker under-reported changelog end offsets, corrected (reported, true): %r", corrected)
    return ends


async def read_changelog(
    app: AppT, tp: TP, *, stalled_s: float
) -> AsyncIterator[list[tuple[bytes, bytes | None, int]]]:
    """Every record of changelog partition ``tp`` from its earliest offset to its true end (see
    :func:`true_end_offsets`), in order, as lists of (key, value, offset); a value of None is a
    tombstone. Read by a consumer of its own, so it works whatever faust's consumer is doing.

    Raises :class:`~stream_lsh.errors.BrokerError` when no record comes for ``stalled_s`` seconds
    before the end is reached (the broker is gone, or the partition was truncated meanwhile)."""
    ktp = TopicPartition(tp.topic, tp.partition)
    consumer = private_consumer(app, "restore")
    await consumer.start()
    try:
        consumer.assign([ktp])
        await consumer.seek_to_beginning(ktp)
        reported = (await consumer.end_offsets([ktp]))[ktp]
        end = (await true_end_offsets(app, {tp: reported}))[tp] or 0
        loop = asyncio.get_running_loop()
        last_progress = loop.time()
        while await consumer.position(ktp) < end:
            fetched = (await consumer.getmany(ktp, timeout_ms=500)).get(ktp, [])
            if fetched:
                last_progress = loop.time()
                yield [(record.key, record.value, record.offset) for record in fetched]
            elif loop.time() - last_progress > stalled_s:
                raise BrokerError(
                    f"reading changelog {tp.topic}[{tp.partition}] stalled at offset "
                    f"{await consumer.position(ktp)} of {end} for {stalled_s:g} s"
                )
    finally:
        await consumer.stop()


class _TrueEnds:
    """A view of faust's consumer whose ``highwaters`` are the true ends; everything else passes through."""

    def __init__(self, consumer: ConsumerT, app: AppT) -> None:
        self._consumer = consumer
        self._app = app

    async def highwaters(self, *partitions: TP) -> Mapping[TP, int | None]:
        return await true_end_offsets(self._app, await self._consumer.highwaters(*partitions))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


class SafeRecovery(Recovery):
    """Faust's recovery, with highwaters taken from the true changelog ends, and no input dropped
    when it hands the partitions back to the streams.

    faust calls ``_build_highwaters`` for the active partitions before reading them and for the
    standby partitions afterwards. Both go through this override; faust's own method still turns the
    ends into highwaters (end - 1, -1 when unknown) and logs them, so the convention stays faust's.

    ``expected_records`` is how many changelog records the latest recovery had to replay, for the
    metrics (what remains is faust's ``active_remaining_total()``).
    """

    expected_records: int = 0

    def _set_recovery_started(self) -> None:
        self.expected_records = self.active_remaining_total()
        super()._set_recovery_started()

    async def _build_highwaters(
        self, consumer: ConsumerT, tps: set[TP], destination: Counter[TP], title: str
    ) -> None:
        true_ends = cast(ConsumerT, _TrueEnds(consumer, self.app))
        await super()._build_highwaters(true_ends, tps, destination, title)

    async def crash(self, reason: BaseException) -> None:
        """A data directory ahead of its changelogs is refused in one line (exit 78), not with
        Faust's traceback: its state was built against other topics (deleted and created again,
        another cluster, an embedded broker since restarted) and cannot be trusted here."""
        if isinstance(reason, ConsistencyError):
            log.critical(
                "refusing to run: the state in %s is ahead of its changelog topics on this broker, so it was "
                "built against other topics (deleted and created again, another cluster, or an embedded "
                "broker that was restarted). Remove that directory to rebuild the state from the "
                "changelogs, or point the worker at the cluster it belongs to. (%s)",
                self.app.conf.datadir,
                reason,
            )
            logging.shutdown()
            os._exit(ExitCode.STATE_MISMATCH)
        await super().crash(reason)

    async def on_recovery_completed(self, generation_id: int = 0) -> None:
        """Faust's hand-over to the streams, with flow control suspended until faust resumes it.

        faust resumes the stream partitions, awaits the seek to their committed offsets, and only
        then resumes flow control, which clears every stream queue (see the module docstring).
        Suspended, flow control makes the conductor wait before it queues a fetched record, so a
        record fetched meanwhile is queued after the clearing instead of being cleared. The stream
        partitions were paused since the assignment, so no queue holds a record when this starts.
        If faust returns early (another rebalance began), flow stays suspended, as a revocation
        leaves it, until the next recovery resumes it.
        """
        self.app.flow_control.suspend()
        await super().on_recovery_completed(generation_id)


class SafeTableManager(TableManager):
    """faust's table manager with :class:`SafeRecovery`; pass ``TableManager=SafeTableManager``
    to ``faust.App``."""

    @property
    def recovery(self) -> Recovery:
        if self._recovery is None:
            self._recovery = SafeRecovery(self.app, self, beacon=self.beacon, loop=self.loop)
        return self._recovery
