"""QuietInputs: when a worker declares its input partitions idle (clock order)."""

from __future__ import annotations

from stream_lsh.stream.idle import QuietInputs


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def declare_quiet(quiet: QuietInputs, assigned: set[int]) -> list[int]:
    """What the worker's timer does when every quiet partition has nothing left on the broker."""
    found = quiet.quiet(assigned)
    for partition in found:
        quiet.declare(partition)
    return found


def test_a_partition_is_declared_once_per_quiet_spell():
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    assert declare_quiet(quiet, {0, 1}) == []  # just assigned: the spell starts now
    clock.now += 0.1
    quiet.heard({0: 5})
    clock.now += 0.15
    assert declare_quiet(quiet, {0, 1}) == [1]
    assert declare_quiet(quiet, {0, 1}) == []  # already declared
    clock.now += 0.1
    assert declare_quiet(quiet, {0, 1}) == [0]
    quiet.heard({1: 9})  # records again: a new spell
    clock.now += 0.2
    assert declare_quiet(quiet, {0, 1}) == [1]


def test_a_quiet_partition_stays_undeclared_until_the_caller_declares_it():
    """The worker declares a quiet partition only once nothing is left on the broker for it: until
    then it is offered again at every tick."""
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    quiet.quiet({0})
    clock.now += 0.3
    assert quiet.quiet({0}) == [0] and quiet.quiet({0}) == [0]
    quiet.declare(0)
    assert quiet.quiet({0}) == []


def test_a_claim_the_high_watermark_outgrew_is_offered_again_once_quiet():
    """A caught-up claim covers the offsets below its fetch's high watermark. A transactional
    producer's commit marker stored after that fetch moves the high watermark and is never
    delivered, so no batch claims the partition again; another worker's end offset then belies
    the claim, and the partition would hold every page back. The timer offers it again."""
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    quiet.heard({0: 9, 1: 4}, idle_after={0, 1}, covered={0: 10, 1: 5})
    highwater = {0: 10, 1: 6}  # partition 1: a commit marker after its records
    assert quiet.outgrown({0, 1}, highwater.get) == []  # not quiet yet
    clock.now += 0.25
    assert quiet.outgrown({0, 1}, highwater.get) == [1]
    quiet.declare(1, 6)
    assert quiet.outgrown({0, 1}, highwater.get) == []
    quiet.heard({1: 7})  # a record again: its batch's claim, if any, is the one that counts
    highwater[1] = 9
    clock.now += 0.25
    assert quiet.outgrown({0, 1}, highwater.get) == []  # not declared since
    quiet.undeclare({0})
    highwater[0] = 12
    assert quiet.outgrown({0, 1}, highwater.get) == []


def test_a_batch_whose_sends_waited_does_not_leave_its_partition_quiet():
    """Quiet starts again when a batch's sends are done: a batch that waited out a broker outage
    leaves its partition quiet from then, not from when it was taken (records queued behind it
    looked like commit markers, tests/test_broker_outages.py). A partition forgotten meanwhile (a
    revocation) stays forgotten."""
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    quiet.quiet({0, 1})
    quiet.heard({0: 5})
    clock.now += 14.0  # the batch's sends wait out the outage
    assert quiet.quiet_for(0) == 14.0
    quiet.restart([0])
    assert quiet.quiet_for(0) == 0.0 and quiet.quiet({0, 1}) == [1]
    quiet.forget()
    quiet.restart([0])
    assert 0 not in quiet.last and quiet.taken(0) is None


def test_how_far_each_partition_was_taken():
    quiet = QuietInputs(0.2, Clock())
    assert quiet.taken(3) is None
    quiet.heard({3: 41, 4: 7})
    quiet.heard({3: 40})  # a redelivery does not move it back
    assert (quiet.taken(3), quiet.taken(4)) == (42, 8)
    quiet.forget()
    assert quiet.taken(3) is None


def test_only_assigned_partitions_are_declared_and_a_rebalance_starts_over():
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    declare_quiet(quiet, {0})
    clock.now += 1
    assert declare_quiet(quiet, {0}) == [0]
    quiet.forget()
    assert declare_quiet(quiet, {0, 3}) == []
    clock.now += 0.2
    assert declare_quiet(quiet, {0, 3}) == [0, 3]


def test_a_partition_whose_mark_said_it_is_caught_up_is_not_declared_again():
    clock = Clock()
    quiet = QuietInputs(0.2, clock)
    declare_quiet(quiet, {0, 1})
    quiet.heard({0: 1, 1: 1}, idle_after={0})  # partition 0's mark said "idle after me"
    clock.now += 0.3
    assert declare_quiet(quiet, {0, 1}) == [1]
    quiet.heard({0: 2})  # 0 has records again and is not caught up: the timer watches it again
    clock.now += 0.3
    assert declare_quiet(quiet, {0, 1}) == [0]


# -- the hang of issue 10: a caught-up batch that carried no dated page ---------------------------

import orjson  # noqa: E402
import pytest  # noqa: E402

from stream_lsh.core.dedup import DedupConfig, Deduplicator  # noqa: E402
from stream_lsh.core.page import page_from_dict  # noqa: E402
from stream_lsh.pipeline.local import LocalPipeline  # noqa: E402
from stream_lsh.pipeline.order import InputMarks  # noqa: E402
from stream_lsh.pipeline.routing import Layout  # noqa: E402

STORY = (
    "The city council voted on Tuesday to expand the bus network to the northern suburbs, a plan that has "
    "been debated for more than a decade. Supporters said the new routes would cut travel times."
)
OTHER = (
    "A severe storm swept across the coast overnight, bringing down trees and power lines in several towns. "
    "Emergency services said that no one was hurt, but thousands of homes were left without power."
)
THIRD = (
    "The national team named three new players for the autumn matches, with the coach saying that he wanted "
    "to give younger players a chance before the tournament begins next summer in the south."
)
T = 1_795_514_400_000  # 2026-11-24T10:00:00Z, as a record timestamp


@pytest.mark.parametrize(
    "last_record",
    [
        orjson.dumps(
            {"id": "b", "text": STORY + " Again.", "published_at": "2099-01-01T00:00:00Z"}
        ),  # a wrong year
        orjson.dumps({"id": "b", "text": STORY + " Again."}),  # no date at all
        orjson.dumps({"id": "a", "op": "delete"}),  # a retraction
        b"{not json",  # a dead letter
    ],
)
def test_a_caught_up_batch_without_a_dated_page_still_releases_the_other_partitions(last_record):
    """Wired as the worker wires it (app.py: Ingest.idle_after -> QuietInputs.heard, the idle
    timer -> Ingest.idle). Before the fix, a caught-up batch of partition 0 that held no dated page
    sent no mark, yet the timer took partition 0 for declared idle: partition 1's page waited
    forever (what `run --until-idle` never finishing was)."""
    pipe = LocalPipeline(DedupConfig(), Layout(2), inputs=2)
    clock = Clock()
    quiet = QuietInputs(0.2, clock)

    def batch(value: bytes, partition: int, stamp: int, caught_up: bool) -> None:
        messages_caught_up = {partition} if caught_up else set()
        quiet.heard(
            {partition: stamp}, {partition} & messages_caught_up
        )  # what the agent does, per its marks
        pipe.feed([value], partition=partition, caught_up=messages_caught_up, timestamps=[stamp])

    batch(
        orjson.dumps({"id": "a", "text": STORY, "published_at": "2026-11-24T09:00:00Z"}),
        0,
        T,
        caught_up=False,
    )
    batch(last_record, 0, T + 1, caught_up=True)
    batch(
        orjson.dumps({"id": "c", "text": OTHER, "published_at": "2026-11-24T10:00:00Z"}),
        1,
        T + 2,
        caught_up=True,
    )
    pipe.run()
    for _ in range(50):  # ten quiet seconds of the idle timer
        clock.now += 0.2
        for partition in declare_quiet(quiet, {0, 1}):
            pipe.idle(partition)
        pipe.run()
    assert "c" in {value["id"] for _, value in pipe.outputs.decisions}
    assert not pipe.stages["decide"][0].held


# an earlier copy (b) in partition 0, a later one (c) in partition 1: batch makes b the founder
SWAP_PAGES = {
    "x": (OTHER, 0, T),
    "b": (STORY, 0, T + 2),
    "c": (STORY + " Again.", 1, T + 3),
    "y": (THIRD, 1, T + 4),
}


def feed_one(pipe: LocalPipeline, page_id: str, caught_up: bool) -> None:
    """One page of SWAP_PAGES, in its own ingest batch, caught up or not, and every stage run."""
    text, partition, stamp = SWAP_PAGES[page_id]
    pipe.feed(
        [orjson.dumps({"id": page_id, "text": text})],
        partition=partition,
        caught_up={partition} if caught_up else set(),
        timestamps=[stamp],
    )
    pipe.run()


@pytest.mark.parametrize("withdrawn", [False, True])
def test_an_idle_claim_is_withdrawn_when_its_partition_changes_hands(withdrawn):
    """Partition 0 is caught up (idle after its mark), then its owner stops; a copy of a story
    piles up in it unread while the other worker reads a later copy from partition 1. With the
    claim standing, the later copy is released and founds the cluster, and the earlier one comes
    late and joins it (a founder swap, as batch never decides); withdrawn when partition 0 changes
    hands, the later copy waits for partition 0's new owner."""
    pipe = LocalPipeline(DedupConfig(), Layout(2), inputs=2)
    pages = SWAP_PAGES

    def feed(page_id: str, caught_up: bool) -> None:
        feed_one(pipe, page_id, caught_up)

    feed("x", caught_up=True)  # partition 0: idle after x
    if withdrawn:
        pipe.changed_hands({0, 1})  # the rebalance: what each worker sends for the partitions it gave up
    feed("c", caught_up=False)  # partition 1, read by the worker that kept it (y moves its mark past c)
    feed("y", caught_up=False)
    feed("b", caught_up=True)  # partition 0, read by its new owner
    pipe.finish()
    pipe.run()
    got = {value["id"]: (value["status"], value["duplicate_of"]) for _, value in pipe.outputs.decisions}
    engine = Deduplicator()
    batch = {
        page_id: (d.status, d.duplicate_of)
        for page_id, d in (
            (i, engine.process(page_from_dict({"id": i, "text": pages[i][0]}))) for i in ("x", "b", "c", "y")
        )
    }
    assert batch["b"] == ("unique", None) and batch["c"] == ("duplicate", "b")
    if withdrawn:
        assert got == batch
    else:  # the control: the stale claim lets c overtake b
        assert got["c"] == ("unique", None) and got["b"] == ("duplicate", "c")


# -- the guard: a wait nothing ends is reported with its page and its cause ----------------------


def test_the_guard_names_the_page_and_the_input_partition_a_hung_watermark_waits_for():
    """Input partition 0 never speaks (and no timer declares it): partition 1's page is held at its
    site partition, which names the page and the input partition it waits for."""
    clock = Clock()
    pipe = LocalPipeline(DedupConfig(), Layout(2), inputs=2, clock=clock)
    pipe.feed(
        [orjson.dumps({"id": "c", "text": OTHER, "published_at": "2026-11-24T10:00:00Z"})],
        partition=1,
        caught_up={1},
        timestamps=[T],
    )
    pipe.run()
    clock.now += 4.0
    assert pipe.stalled(5.0) == []  # not yet
    clock.now += 2.0
    waits = pipe.stalled(5.0)
    [wait] = waits
    assert (
        wait.stage == "sites" and wait.page_id == "c" and "input partitions 0 hold it back" in wait.waits_for
    )
    assert "undecided for 6.0 s" in wait.describe() and "2026-11-24T10:00:00.000+00:00" in wait.describe()
    assert pipe.stalled(5.0) == []  # reported once
    pipe.idle(0)
    pipe.run()
    assert [value["id"] for _, value in pipe.outputs.decisions] == ["c"]


@pytest.mark.parametrize("withdrawn", [False, True])
def test_a_claim_of_an_earlier_generation_is_withdrawn_at_an_assignment_and_one_made_since_stands(withdrawn):
    """A worker killed with kill -9 stays a member of the group until its session times out, and
    may be left partition 0, which nobody then reads, its last claim (caught up, generation 1)
    standing. The restarted worker, assigned partition 1 in generation 2, withdraws the claims of
    every input partition made before generation 2: the later copy in partition 1 waits for
    partition 0 (the control: it overtakes the earlier copy piled up there). A claim that
    partition 0's owner makes in generation 2 stands, whenever the withdrawal comes: the
    partition holds nothing back."""
    pipe = LocalPipeline(DedupConfig(), Layout(2), inputs=2)

    def feed(page_id: str, caught_up: bool) -> None:
        feed_one(pipe, page_id, caught_up)

    pipe.ingest.generation = 1
    feed("x", caught_up=True)  # partition 0: idle after x, claimed in generation 1
    pipe.ingest.generation = 2  # the restart's assignment: partition 1 only, the dead member keeps 0
    if withdrawn:
        pipe.changed_hands({0, 1}, before=2)
    feed("c", caught_up=False)
    feed("y", caught_up=False)
    if withdrawn:
        assert "c" not in {value["id"] for _, value in pipe.outputs.decisions}  # waits for partition 0
    feed("b", caught_up=True)  # partition 0, once the group hands it over
    pipe.finish()
    pipe.run()
    got = {value["id"]: (value["status"], value["duplicate_of"]) for _, value in pipe.outputs.decisions}
    if withdrawn:
        assert got["b"] == ("unique", None) and got["c"] == ("duplicate", "b")
    else:  # the control: the dead member's claim lets c overtake b
        assert got["c"] == ("unique", None) and got["b"] == ("duplicate", "c")


def test_a_claim_made_in_the_current_generation_outlives_its_withdrawal():
    marks = InputMarks(2)
    marks.update(0, [T, "a"], idle_after=True, generation=3)
    marks.update(1, [T + 5, "b"])
    marks.withdraw(0, before=3)  # another member's withdrawal of claims before generation 3
    assert marks.release_point() == (T + 5, "")  # partition 0 still holds nothing back
    marks.withdraw(0, before=4)
    assert marks.release_point() == (T, "")
    marks.update(0, None, generation=4)  # a timer's claim in generation 4
    marks.withdraw(0)  # a revocation withdraws whatever its generation
    assert marks.release_point() == (T, "")
    again = InputMarks(2)
    marks.update(0, None, generation=4)
    again.load(marks.state())
    again.withdraw(0, before=4)
    assert again.release_point() == (T + 5, "")  # the claim's generation was saved with it


@pytest.mark.parametrize("ends_asked", [False, True])
def test_a_caught_up_claim_older_than_another_workers_batch_holds_for_the_records_stored_since(ends_asked):
    """Two workers, one input partition each, on a steady feed: every batch leaves its partition
    caught up. The earlier copy b is stored in partition 0 after its worker's last fetch (its claim
    covers offsets below 7), and the later copy c in partition 1 just after; partition 1's worker
    reads c first. Asked after its batch, the broker gives partition 0's end as 8: the claim no
    longer covers it, and c waits for b, as batch decides. Without the ends (the control), c is
    released past b, founds the cluster, and b comes late."""
    pipe = LocalPipeline(DedupConfig(), Layout(2), inputs=2)

    def feed(page_id: str, caught_up: dict[int, int], ends: dict[int, int] | None = None) -> None:
        text, partition, stamp = SWAP_PAGES[page_id]
        pipe.feed(
            [orjson.dumps({"id": page_id, "text": text})],
            partition=partition,
            caught_up=caught_up,
            timestamps=[stamp],
            ends=ends,
        )
        pipe.run()

    feed("x", caught_up={0: 7})  # partition 0's last record before b
    pipe.idle(1)  # partition 1 quiet
    feed("c", caught_up={1: 3}, ends={0: 8} if ends_asked else None)
    decided = {value["id"] for _, value in pipe.outputs.decisions}
    assert ("c" in decided) is not ends_asked
    feed("b", caught_up={0: 8})
    pipe.finish()
    pipe.run()
    got = {value["id"]: (value["status"], value["duplicate_of"]) for _, value in pipe.outputs.decisions}
    if ends_asked:
        assert got["b"] == ("unique", None) and got["c"] == ("duplicate", "b")
    else:
        assert got["c"] == ("unique", None) and got["b"] == ("duplicate", "c")


def test_an_end_offset_past_a_claim_belies_it_until_a_claim_covers_it():
    marks = InputMarks(2)
    marks.update(0, [T, "a"], idle_after=True, taken=7)
    marks.update(1, [T + 5, "c"], idle_after=True, taken=3, ends=[(0, 8)])
    assert marks.idle_now() == {1}
    assert marks.release_point() == (T, "")  # partition 0 holds at its last mark
    assert marks.holding_back() == [0]
    again = InputMarks(2)
    again.load(marks.state())
    assert again.release_point() == (T, "")  # the claims' offsets and the ends are saved
    again.load([row[:4] for row in marks.state()])  # rows saved before offsets: claims stand
    assert again.release_point() == (T + 5, "c")
    marks.update(0, [T + 2, "b"], idle_after=True, taken=8)  # its owner read b: caught up again
    assert marks.release_point() == (T + 5, "c")
    marks.update(0, [T + 9, "d"], idle_after=True, taken=2)  # offsets went back: a topic made anew
    assert marks.idle_now() == {0, 1}


async def test_a_partition_the_broker_has_not_answered_for_lately_is_not_claimed_idle(tmp_path):
    """A worker whose broker is down still sees the high watermark of the last fetch answer
    before it went, but the broker may have taken records since: the partition is claimed idle
    only on an answer younger than the idle time plus one fetch wait (tests/test_broker_outages.py
    saw late pages without this)."""
    import time
    from types import SimpleNamespace

    from faust.types import TP

    from stream_lsh.settings import Settings
    from stream_lsh.stream.app import StreamApp

    settings = Settings.load(environ={}, broker="127.0.0.1:9", data_dir=str(tmp_path), idle_ms=200)
    stream = StreamApp(settings, "127.0.0.1:9")  # never started: no broker needed
    consumer = stream.app.consumer
    answered: dict[str, float | None] = {"at": None}
    consumer.highwater = lambda tp: 5  # type: ignore[method-assign]
    consumer._thread._ensure_consumer = lambda: SimpleNamespace(  # type: ignore[method-assign]
        last_poll_timestamp=lambda tp: answered["at"]
    )
    claims = stream.claims
    claims.quiet.heard({0: 4})  # records up to offset 4 taken: the high watermark 5 says nothing is left
    try:
        assert not await claims._all_taken(0)  # no answer yet
        answered["at"] = time.time() * 1000 - 50
        assert await claims._all_taken(0)
        answered["at"] = time.time() * 1000 - 2000  # the broker went 2 s ago
        assert not await claims._all_taken(0)
        assert claims._fetched_lately(TP(settings.stream.input_topic, 0)) is False
    finally:
        consumer._thread.thread_loop.close()  # mode made it for the consumer's thread, never started


async def test_a_claim_the_latest_fetch_belies_is_withdrawn_before_the_next_batch_goes_out(tmp_path):
    """Partition 0 is caught up (its last mark claimed it idle); then a burst lands in every
    partition at once, and the batch of partition 1 comes first. If partition 0's fetch answer
    already shows records past those taken, its claim is withdrawn before partition 1's marks go
    out; otherwise they would release past partition 0's records, which would come late
    (tests/test_broker_outages.py saw four). A claim the answer bears out stands, a partition of
    the batch speaks for itself, and one quiet for ten idle times, with none of its records
    waiting for the agent, has only commit markers left."""
    import time

    from faust.types import TP

    from stream_lsh.pipeline.ingest import Message
    from stream_lsh.pipeline.messages import OwnerChange
    from stream_lsh.settings import Settings
    from stream_lsh.stream.app import StreamApp

    settings = Settings.load(environ={}, broker="127.0.0.1:9", data_dir=str(tmp_path), idle_ms=200)
    stream = StreamApp(settings, "127.0.0.1:9")  # never started: no broker needed
    highwater = {0: 5, 1: 11}
    stream.app.consumer.highwater = lambda tp: highwater[tp.partition]  # type: ignore[method-assign]
    claims = stream.claims
    sent = []

    async def send(out):
        sent.append(out)

    claims.send = send
    claims.quiet.heard({0: 4}, idle_after={0})  # offsets 0-4 taken, the last one caught up
    batch = [Message(settings.stream.input_topic, 1, 10, None, b"{}")]
    try:
        assert await claims.belied(batch) == set()  # the broker has nothing past offset 4
        highwater[0] = 9  # the burst: offsets 5-8 landed in partition 0
        assert await claims.belied(batch) == {0}
        assert await claims.belied([Message(settings.stream.input_topic, 0, 8, None, b"{}")]) == set()
        await claims.withdraw_belied(batch)
        withdrawals = [
            m
            for out in sent
            for partitions in out.internal.values()
            for messages in partitions.values()
            for m in messages
            if isinstance(m, OwnerChange)
        ]
        assert {m.source for m in withdrawals} == {0} and withdrawals, sent
        assert await claims.belied(batch) == set()  # withdrawn once: no longer claimed
        claims.quiet.declare(0)
        claims.quiet.clock = lambda: time.monotonic() + 60  # ten idle times and more
        fetched = {"to": 6}

        async def position(tp):
            return fetched["to"]

        stream.app.consumer.position = position  # type: ignore[method-assign]
        assert await claims.belied(batch) == {0}  # records not even fetched yet: not markers
        fetched["to"] = 9
        assert await claims.belied(batch) == set()  # everything fetched: markers alone are left
        tp = TP(settings.stream.input_topic, 0)
        stream.app.consumer._read_offset[tp] = 8  # ... unless records wait for the agent: offsets 5-8
        assert await claims.belied(batch) == {0}
    finally:
        stream.app.consumer._thread.thread_loop.close()


async def test_a_start_looked_at_before_faust_seeks_does_not_keep_a_partition_from_its_claim(tmp_path):
    """After a rebalance Faust resumes the flow before it seeks to the committed offsets. A worker
    whose timer looked then saw no committed offset for a partition whose two records the previous
    owner had handled, kept 0 as where its reading started, and took those records for still to
    come: the partition was never claimed idle, and every later page waited for it (pages fed one
    at a time to two workers on Apache Kafka, tests/test_stream.py)."""
    import time
    from types import SimpleNamespace

    from faust.types import TP

    from stream_lsh.settings import Settings
    from stream_lsh.stream.app import StreamApp

    settings = Settings.load(environ={}, broker="127.0.0.1:9", data_dir=str(tmp_path), idle_ms=200)
    stream = StreamApp(settings, "127.0.0.1:9")  # never started: no broker needed
    consumer = stream.app.consumer
    tp = TP(settings.stream.input_topic, 2)

    async def earliest_offsets(*tps):
        return {tp: 0 for tp in tps}

    consumer.highwater = lambda tp: 2  # type: ignore[method-assign]
    consumer.earliest_offsets = earliest_offsets  # type: ignore[method-assign]
    consumer._thread._ensure_consumer = lambda: SimpleNamespace(  # type: ignore[method-assign]
        last_poll_timestamp=lambda tp: time.time() * 1000
    )
    consumer._read_offset[tp] = 2  # what this worker's stream read of it before the rebalance
    try:
        assert not await stream.claims._all_taken(2)  # not sought yet: where reading starts is unknown
        consumer._committed_offset[tp] = 2  # Faust's seek: both records were handled
        assert await stream.claims._all_taken(2)
        assert stream.claims.lag(tp) == 0
    finally:
        consumer._thread.thread_loop.close()  # mode made it for the consumer's thread, never started
