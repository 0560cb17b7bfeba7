"""A worker's claims about its input partitions: which are idle or caught up, and their withdrawal.

Clock order (:mod:`stream_lsh.pipeline.order`) holds every page until each input partition has
passed its clock, *or is idle*. Only the worker that reads an input partition can say it is idle,
and what it says must be true when the site partitions act on it: a claim that a partition is
quiet while records wait in it lets the others release past those records, which then come late.
So this module makes every claim from what the consumer fetched, and withdraws claims whenever
their truth is in doubt:

* a batch's marks say a partition is *caught up* when the batch held its last record as of the
  consumer's latest fetch (:meth:`InputClaims.caught_up`);
* a timer declares a partition *idle* when it has been quiet for the idle time and the worker has
  taken every record the broker had for it (:meth:`InputClaims.declare_idle`);
* a claim the consumer's latest fetch belies, records on the broker past what was taken, is
  withdrawn before the next batch's marks go out (:meth:`InputClaims.belied`): a burst after a
  quiet spell lands in every partition at once, and the partition fetched first would otherwise
  release past the others' records, which then come late;
* a revocation withdraws the claims of the partitions given up, and a stopping worker withdraws its
  own (:meth:`InputClaims.changed_hands`, :meth:`InputClaims.withdraw_on_stop`);
* every claim carries the consumer group generation it was made in, and at each assignment a
  worker withdraws every input partition's claims made in an earlier generation
  (:meth:`InputClaims.assigned`): those of partitions it takes over, and those of a worker that
  crashed and that the group still counts as a member until its session times out, which holds
  partitions nobody reads. Claims made since the rebalance by the partitions' owners stand.

Claims and withdrawals go out one at a time under one lock (:attr:`InputClaims.lock`), so that no
claim made before a withdrawal is sent after it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from faust.types import TP

from ..pipeline.ingest import Ingest, Message
from ..pipeline.outbox import Outbox
from .batch_failure import or_exit
from .idle import QuietInputs

__all__ = ["InputClaims", "fetched_within", "last_offsets"]

log = logging.getLogger(__name__)

MARKERS_AFTER_IDLE_TIMES = 10  # quiet this many idle times with all fetched: what is left are commit markers
WITHDRAW_WITHIN_S = 10.0  # a stopping worker's withdrawal of its idle claims waits at most this
ENDS_WITHIN_S = 2.0  # the end offsets of other workers' input partitions, asked with every batch


class InputClaims:
    """What this worker says about the input partitions it reads (see the module doc).

    Args:
        app: the worker's Faust app (its consumer and flow control are read when a claim is made).
        topic: the input topic.
        ingest: the ingest stage, which writes the claims as messages to the site partitions.
        send: sends an outbox (the app's, which awaits every send).
        inputs: the input topic's partitions.
        idle_s: how long a partition must be quiet to be declared idle.
        fetch_wait_s: the consumer's fetch wait: a fetch answered within the idle time plus this
            is recent enough to trust its high watermark.
    """

    def __init__(
        self,
        app: Any,
        topic: str,
        ingest: Ingest,
        send: Callable[[Outbox], Awaitable[None]],
        *,
        inputs: int,
        idle_s: float,
        fetch_wait_s: float,
    ) -> None:
        self.app, self.topic, self.ingest, self.send = app, topic, ingest, send
        self.inputs = inputs
        self.quiet = QuietInputs(idle_s)
        self._fresh_s = idle_s + fetch_wait_s
        self._log_starts: dict[TP, int] = {}  # each partition's log start, read once an assignment
        self.lock = asyncio.Lock()  # claims and withdrawals: one at a time, in order
        self.leaving = False  # stopping: claims withdrawn, none made again

    # -- a change of hands -----------------------------------------------------------------------
    def forget(self) -> None:
        """A revocation: what was heard of the partitions no longer holds."""
        self.quiet.forget()
        self._log_starts.clear()

    async def changed_hands(self, partitions: Collection[TP]) -> None:
        """Withdraw the idle claims of input partitions given up or taken over, before any record
        of the new assignment is read (pipeline/order.py): given up, at the revocation, which every
        member of the group goes through before anyone gets the new assignment; taken over, at the
        assignment, for an owner that left or crashed without a revocation."""
        inputs = {tp.partition for tp in partitions if tp.topic == self.topic}
        if inputs:
            await or_exit(self._withdraw(inputs))

    async def assigned(self, generation: int, inputs: int) -> None:
        """An assignment in group ``generation``: from now on this worker's claims carry it, and
        the claims of all ``inputs`` input partitions made in an earlier generation are withdrawn
        (:meth:`.order.InputMarks.withdraw`), before any record of the assignment is read.

        Why every partition, not only those taken over: a worker killed with kill -9 stays a
        member until its session times out, and a restarted worker joins beside it. On Tansu the
        group then gives the dead member half the input partitions, which nobody reads until the
        next rebalance, while their last claims, caught up, stand: the other partitions release
        past the records that pile up in them, and those come late. Measured with
        ``benchmarks/chaos_rounds.py --rounds keep:3`` on Tansu (one worker killed five times,
        data kept): 64-234 statuses of 2,000 differ from batch's, every one a later copy that
        founded the cluster. An owner that is alive makes its claims again in the new generation
        (a revocation before every assignment makes it forget what it declared), so its claims
        made since the rebalance are the ones that stand."""
        self.ingest.generation = generation
        await or_exit(self._withdraw(set(range(inputs)), before=generation))

    async def withdraw_on_stop(self, assigned: Collection[TP]) -> None:
        """A worker that stops withdraws the idle claims of its input partitions, as a revocation
        would: a stopping worker does not go through one, and the group may take a session timeout
        to notice that it left (Tansu does not rebalance when a member leaves). Until then a claim
        left standing let the other workers' partitions release past every record that piled up in
        this worker's partitions, which then came late: 38-53 of 872 duplicates decided unique in
        ../shared/repro/rebalance-handover. Called first thing when the app stops, before Faust stops
        reading (a claim made just before would otherwise stand while the worker waits for its
        streams to empty), under the lock, so no claim made before it is sent after it, and none is
        made after it."""
        self.leaving = True  # no claim from here on, even if the lock is not had
        inputs = {tp.partition for tp in assigned if tp.topic == self.topic}
        if not inputs:
            return
        try:  # a batch's sends hold the lock; against a broker that went away, not for ever
            await asyncio.wait_for(self._withdraw(inputs), WITHDRAW_WITHIN_S)
        except Exception:  # the next owner withdraws them when the group hands the partitions over
            log.warning(
                "could not withdraw the idle claims of input partitions %s before stopping", sorted(inputs)
            )

    async def _withdraw(self, inputs: set[int], before: int | None = None) -> None:
        """Tell every site partition that ``inputs`` changed hands (their idle claims no longer
        hold; with ``before``, those made in an earlier group generation), under the lock: no
        claim made before is sent after it."""
        async with self.lock:
            await self.send(self.ingest.changed_hands(inputs, before=before))

    # -- claims ----------------------------------------------------------------------------------
    def caught_up(self, messages: list[Message]) -> dict[int, int]:
        """Input partitions whose last record, as of the consumer's latest fetch, is in
        ``messages``, each to the offset its claim covers the records below (the fetch's high
        watermark, or past the last record if higher).

        The high watermark of a fetch response is exact, on Tansu too (only its ListOffsets
        under-reports). One that is stale (records arrived since) makes a partition look caught up
        too early; the offset the claim carries lets the site partitions see that
        (:meth:`ends_elsewhere`).
        """
        if not self.ingest.marks_caught_up or self.leaving:
            return {}
        found = {}
        for partition, offset in last_offsets(messages).items():
            highwater = self._highwater(partition)
            if highwater is not None and offset + 1 >= highwater:
                found[partition] = max(offset + 1, highwater)
        return found

    async def ends_elsewhere(self) -> dict[int, int] | None:
        """The end offsets of the input partitions this worker does not read, asked now, after
        its batch was fetched; None when it reads them all, or the broker did not answer in time.

        Why: another worker's claim that its partition is caught up is as old as that worker's
        last fetch. A record stored in the partition since, with a clock below this batch's
        records, is not covered by it: the site partitions compare the claim's offset with these
        ends and hold the release point for it (:class:`~stream_lsh.pipeline.order.InputMarks`).
        On Tansu, whose ListOffsets gives the base offset of the last record batch plus one, an
        end still passes every claim made before that batch was stored, which is all this needs.
        """
        if not self.ingest.marks_caught_up or self.leaving:
            return None
        try:
            mine = {tp.partition for tp in self.app.consumer.assignment() if tp.topic == self.topic}
        except Exception:
            return None
        others = [TP(self.topic, partition) for partition in range(self.inputs) if partition not in mine]
        if not others:
            return None
        try:
            ends = await asyncio.wait_for(self.app.consumer.highwaters(*others), ENDS_WITHIN_S)
        except Exception:  # no evidence: the claims stand, as before these were asked
            return None
        return {tp.partition: int(end) for tp, end in ends.items() if end is not None}

    async def withdraw_belied(self, messages: list[Message]) -> None:
        """Withdraw, before the marks of ``messages`` go out, the claims of this worker's other
        input partitions that the consumer's latest fetch belies (:meth:`belied`). Called under
        :attr:`lock`, with the batch."""
        belied = await self.belied(messages)
        if belied:
            log.info("input partitions %s have records again: their idle claims are withdrawn", belied)
            self.quiet.undeclare(belied)
            await or_exit(self.send(self.ingest.changed_hands(belied)))

    async def belied(self, messages: list[Message]) -> set[int]:
        """Input partitions claimed idle or caught up, outside ``messages``, for which the consumer's
        latest fetch says the broker holds records past those taken.

        Seen in tests/test_broker_outages.py: the first 150 pages decided, every partition caught
        up; then a burst is stored in all four at once, and the batch of the partition fetched
        first carried a mark past pages of another partition still claimed caught up: the site
        partitions released past them, and four pages came late, one decided with a later page
        among its candidates. A high watermark from an answer that is not recent still counts:
        those records were there then, and have not been taken."""
        if self.leaving:
            return set()
        found = set()
        for partition in self.quiet.declared - set(last_offsets(messages)):
            try:
                if await self._records_left(TP(self.topic, partition)):
                    found.add(partition)
            except Exception:
                continue  # no evidence: the claim stands
        return found

    def heard(self, messages: list[Message], caught_up: Mapping[int, int]) -> None:
        """A batch of the input was read: its partitions are not quiet, except those its marks
        declare idle (``caught_up``: to the offsets their claims cover)."""
        self.quiet.heard(last_offsets(messages), self.ingest.idle_after(messages, caught_up), caught_up)

    def sent(self, messages: list[Message]) -> None:
        """A batch's sends are done: its partitions' quiet starts again from now, so that a batch
        whose sends waited out an outage does not leave them counted quiet for all that time,
        with records queued behind it (:meth:`_records_left`)."""
        self.quiet.restart(last_offsets(messages))

    async def declare_idle(self) -> None:
        """Clock order: tell the site partitions which of this worker's input partitions are
        quiet, so that they hold no page back (an empty partition would otherwise hold back all).

        Flow control is checked again before each partition: a claim's send can wait out a
        broker outage, and the rebalance the outage causes happens meanwhile. So is quiet: a batch
        may have taken the partition's records while this waited for the lock."""
        if not self.app.flow_control.is_active():
            return  # a rebalance or a recovery: records may be fetched and not yet delivered
        assigned = {tp.partition for tp in self.app.consumer.assignment() if tp.topic == self.topic}
        for partition in self._to_declare(assigned):
            async with self.lock:
                if self.leaving or not self.app.flow_control.is_active():
                    return
                if partition not in self._to_declare(assigned):
                    continue  # a batch took its records while this waited for the lock
                taken = await self._all_taken(partition)
                if taken is not None:
                    self.quiet.declare(partition, taken)
                    await or_exit(self.send(self.ingest.idle(partition, taken)))

    def _to_declare(self, assigned: set[int]) -> list[int]:
        """Assigned input partitions to claim idle if every record is taken: quiet ones not
        declared since they were last heard from, and declared ones whose claim the high watermark
        has outgrown (:meth:`.idle.QuietInputs.outgrown`)."""
        return sorted(set(self.quiet.quiet(assigned)) | set(self.quiet.outgrown(assigned, self._highwater)))

    def _highwater(self, partition: int) -> int | None:
        """The high watermark of the consumer's latest fetch of an input partition; None before
        one, or when the consumer cannot say (no evidence: nothing is claimed on it)."""
        try:
            highwater = self.app.consumer.highwater(TP(self.topic, partition))
        except Exception:
            return None
        return None if highwater is None else int(highwater)

    async def _all_taken(self, partition: int) -> int | None:
        """The high watermark of the consumer's latest fetch of an input partition (exact on the
        embedded broker too), when this worker has taken every record the broker had for it then:
        the offset its idle claim covers the records below. Else None: not fetched yet, or not
        lately (:meth:`_fetched_lately`), or records left. Nothing taken since the assignment:
        counted from the offset reading started from.

        Not the consumer's position: records fetched but still queued for the agent are past it
        (seen: a partition declared idle with 93 records on their way, all of them then late). But
        a transactional producer's commit markers count in the high watermark and are never
        delivered: a partition whose records have all been fetched, none of them waiting for the
        agent, and that has been quiet for ten idle times, has nothing left but those."""
        tp = TP(self.topic, partition)
        if not self._fetched_lately(tp):
            return None
        highwater = self._highwater(partition)  # read before the check: a later one is not checked
        try:
            if highwater is None or await self._records_left(tp) is not False:
                return None
        except Exception:
            return None
        return highwater

    async def _records_left(self, tp: TP) -> bool | None:
        """Whether the broker held records of an input partition past those this worker has taken,
        at the consumer's latest fetch of it (None: no fetch answered yet). Nothing taken since the
        assignment: counted from the offset reading started from. A transactional producer's
        commit markers count in the high watermark and are never delivered: past ten quiet idle
        times with everything fetched and nothing waiting for the agent, nothing but those is left
        (see :meth:`_all_taken`). Quiet counts from the end of the last batch (:meth:`sent`), so
        a batch blocked by an outage does not make its partitions look quiet."""
        highwater = self.app.consumer.highwater(tp)
        if highwater is None:
            return None
        taken = self.quiet.taken(tp.partition)
        if taken is None:
            taken = await self._start_offset(tp)
        if taken >= highwater:
            return False
        if self._delivered_untaken(tp, taken):
            return True
        long_quiet = self.quiet.quiet_for(tp.partition) >= MARKERS_AFTER_IDLE_TIMES * self.quiet.idle
        return not (long_quiet and (await self.app.consumer.position(tp) or 0) >= highwater)

    def _delivered_untaken(self, tp: TP, taken: int) -> bool:
        """Whether Faust has handed the agent's stream records of ``tp`` that the agent has not
        taken yet: they are past the consumer's position, so only this tells them from commit
        markers. Seen in tests/test_broker_outages.py: after an outage, a partition whose records
        waited behind a batch blocked for 14 s was taken for one holding only markers, claimed
        idle, and its 7 records came late."""
        read = self.app.consumer._read_offset.get(tp)
        return read is not None and read + 1 > taken

    def _fetched_lately(self, tp: TP) -> bool:
        """Whether the broker answered a fetch of ``tp`` within the idle time plus one fetch wait,
        so that its high watermark says what the broker has now.

        A partition the worker cannot fetch is not quiet. While the brokers are down the high
        watermark is that of the last answer before they went, and the records they took after
        it have not been fetched: claimed idle, those records would come late when the brokers
        are back (seen in tests/test_broker_outages.py: a page decided with a later page among
        its candidates). In normal running a fetch answers every fetch wait, so this holds."""
        return fetched_within(self.app, tp, self._fresh_s)

    async def _start_offset(self, tp: TP) -> int:
        """Where reading an input partition started at the last assignment: its committed offset
        (Faust keeps it from the seek it makes then), or the log start if that is later.

        The committed offset is read afresh each time, never kept: after a rebalance Faust resumes
        the flow before it seeks, so a first look can come before the seek has set it. Kept from
        then (0), it made a partition whose two records the previous owner had handled look as if
        they were still to come, for good: never claimed idle, it held every later page back
        (tests/test_stream.py, pages fed one at a time to two workers on Apache Kafka)."""
        if tp not in self._log_starts:
            self._log_starts[tp] = int((await self.app.consumer.earliest_offsets(tp))[tp] or 0)
        start = self._known_start(tp)
        assert start is not None  # the log start is known now
        return start

    def _known_start(self, tp: TP) -> int | None:
        """Where reading started, from what is known without asking the broker: the committed
        offset (read afresh, see :meth:`_start_offset`) or the log start if later; None when
        neither is known yet."""
        committed = self.app.consumer._committed_offset.get(tp)
        earliest = self._log_starts.get(tp)
        if committed is None and earliest is None:
            return None
        return max(int(committed or 0), earliest or 0)

    # -- what the gauges read --------------------------------------------------------------------
    def lag(self, tp: TP) -> int:
        """Records of an input partition this worker has not taken yet, as of its latest fetch."""
        highwater = self._highwater(tp.partition)
        taken = self.quiet.taken(tp.partition)
        if taken is None:
            taken = self._known_start(tp)
        if highwater is None or taken is None:
            return 0
        return max(0, highwater - int(taken))


def fetched_within(app: Any, tp: TP, seconds: float) -> bool:
    """Whether the broker answered a fetch of ``tp`` within ``seconds``."""
    try:
        consumer = app.consumer._thread._ensure_consumer()
    except Exception:
        return False
    polled = consumer.last_poll_timestamp(tp)  # wall-clock ms of the latest answer, None before one
    return polled is not None and time.time() * 1000 - polled <= seconds * 1000


def last_offsets(messages: list[Message]) -> dict[int, int]:
    """The last offset of each partition in a batch."""
    last: dict[int, int] = {}
    for message in messages:
        last[message.partition] = max(last.get(message.partition, -1), message.offset)
    return last
