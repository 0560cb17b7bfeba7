"""Durable stage state (stream_lsh.pipeline.journal): snapshots, replay, compaction, the guard.

The stream keeps these rows in RocksDB-backed Faust tables; here they live in a dict, and
partitions are "crashed" and rebuilt at arbitrary points of in-process runs. CrashingPipeline
also models what a kill -9 of the worker does to delivery: every stage loses its journal rows that
were not durable yet, resumes at its committed offset and gets again what it handled since.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import orjson
import pytest
from crashing_pipeline import CrashingPipeline
from stream_helpers import batch_reference

from stream_lsh.core.dedup import DedupConfig
from stream_lsh.core.prepare import Preparer
from stream_lsh.core.spread import AlertRules
from stream_lsh.errors import IncompleteStateError
from stream_lsh.pipeline import codec
from stream_lsh.pipeline.journal import Journal, StateMismatchError, guard_accepts
from stream_lsh.pipeline.local import LocalPipeline
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.pipeline.routing import Layout
from stream_lsh.synthetic import generate_corpus

LAYOUT = Layout(3)


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(300, seed=11).pages


def decisions(pipe: LocalPipeline) -> list[dict]:
    return [value for _, value in pipe.outputs.decisions]


ALERTS = AlertRules.parse("3,10,30", 6)


def every_partition(pipe: LocalPipeline) -> list[tuple[str, int]]:
    return [(stage, p) for stage in Stage.ALL for p in range(len(pipe.stages[stage]))]


def test_restarting_partitions_one_page_at_a_time_changes_no_decision(corpus):
    rng = random.Random(3)
    pipe = LocalPipeline(DedupConfig(), LAYOUT, durable=True, compact_bytes=20_000)
    for record in corpus:
        pipe.feed([orjson.dumps(record)])
        pipe.run()
        for stage, partition in rng.sample(every_partition(pipe), 2):
            pipe.restart(stage, partition)
    assert decisions(pipe) == batch_reference(corpus)
    assert all(j.generation > 0 for j in pipe.journals.values()), (
        "compaction never ran: the test would not cover it"
    )


@pytest.mark.parametrize("inputs", [None, 1])  # 1: watermarks, pages held at the decide partition
@pytest.mark.parametrize("seed", range(3))
def test_restarts_mid_flight_leave_every_output_unchanged(corpus, seed, inputs):
    """The same delivery schedule, with and without crashes of random partitions in between."""
    lines = [orjson.dumps(record) for record in corpus]
    runs = []
    for crash in (False, True):
        schedule, crashes = random.Random(seed), random.Random(100 + seed)
        pipe = LocalPipeline(
            DedupConfig(),
            LAYOUT,
            rng=schedule,
            durable=True,
            compact_bytes=30_000,
            inputs=inputs,
            alerts=ALERTS,
        )
        for start in range(0, len(lines), 30):
            pipe.feed(lines[start : start + 30])
            for _ in range(schedule.randint(0, 60)):
                pipe.step()
                if crash and crashes.random() < 0.1:
                    pipe.restart(*crashes.choice(every_partition(pipe)))
        pipe.run()
        runs.append(pipe.outputs)
    plain, crashed = runs
    assert crashed.decisions == plain.decisions
    assert crashed.clusters == plain.clusters
    assert crashed.unique_pages == plain.unique_pages
    assert plain.alerts and crashed.alerts == plain.alerts


def run_with_kills(pages: list[dict], seed: int, *, lose_after_kill: bool = False) -> CrashingPipeline:
    """Feed ``pages`` ten at a time on a random schedule, killing the worker now and then, to the end.

    ``lose_after_kill``: after a kill, the first batch of signed pages sent to the decide partition
    is lost (as records were when faust's hand-over after recovery skipped them, stream/recovery.py)
    - the control.
    """
    rng = random.Random(seed)
    pipe = CrashingPipeline(DedupConfig(), LAYOUT, rng=rng, compact_bytes=3_000, alerts=ALERTS)

    losing = [False]  # the next batch for the decide partition after a kill is lost
    enqueue = pipe._enqueue

    def lossy(key: tuple[str, int], batch: bytes) -> None:
        if losing[0] and key[0] == Stage.DECIDE and b'"signed"' in batch:
            losing[0] = False
            return
        enqueue(key, batch)

    pipe._enqueue = lossy  # type: ignore[method-assign]

    def kill() -> None:
        pipe.crash()
        losing[0] = lose_after_kill

    lines = [orjson.dumps(record) for record in pages]
    for start in range(0, len(lines), 10):
        pipe.feed(lines[start : start + 10])
        for _ in range(rng.randint(0, 40)):
            pipe.step()
        if rng.random() < 0.3 or (not pipe.crashes and start >= len(lines) // 2):
            kill()  # at least once while feeding, whatever the seed draws
    while pipe.step():
        # at least two kills while messages are in flight, whatever the seed drew while feeding
        if pipe.crashes < 2 or (pipe.crashes < 8 and rng.random() < 0.02):
            kill()
    return pipe


def decisions_by_page(pipe: LocalPipeline) -> dict[str, set[bytes]]:
    every: dict[str, set[bytes]] = defaultdict(set)
    for page_id, decision in pipe.outputs.decisions:
        every[page_id].add(orjson.dumps(decision))
    return every


@pytest.mark.parametrize("seed", range(12))
def test_kill_9_mid_stream_loses_no_page_and_changes_no_decision(corpus, seed):
    """Redelivered batches, journaled or not, regrouped, after cut-short sends and snapshots."""
    pages = corpus[:100]
    pipe = run_with_kills(pages, seed)
    every = decisions_by_page(pipe)
    assert [p["id"] for p in pages if p["id"] not in every] == [], "pages without a decision"
    assert [page_id for page_id, versions in every.items() if len(versions) > 1] == [], "a decision changed"
    alerts: dict[str, set[bytes]] = defaultdict(set)
    for key, record in pipe.outputs.alerts:
        alerts[key].add(orjson.dumps(record))
    assert [key for key, records in alerts.items() if len(records) > 1] == [], "an alert changed"
    covered = pipe.crashes and pipe.redelivered and any(j.generation for j in pipe.journals.values())
    assert covered, "no kill, nothing delivered again or no snapshot: the test would not cover them"


def test_a_message_lost_after_a_kill_leaves_pages_without_a_decision(corpus):
    """The control: the symptom of the crash defect, from one lost message."""
    pages = corpus[:100]
    decided = [decisions_by_page(run_with_kills(pages, seed, lose_after_kill=True)) for seed in range(3)]
    assert any(p["id"] not in every for every in decided for p in pages)


@pytest.mark.parametrize("inputs", [None, 1])
def test_snapshot_restore_is_exact_for_every_stage(corpus, inputs):
    pipe = LocalPipeline(DedupConfig(), LAYOUT, rng=random.Random(1), inputs=inputs)
    for record in corpus[:200]:  # stop mid-flight: pages held, batches queued
        pipe.feed([orjson.dumps(record)])
        pipe.step()
    for stage, partition in every_partition(pipe):
        original = pipe.stages[stage][partition]
        copy = pipe._make[stage](partition)
        copy.restore(orjson.loads(orjson.dumps(original.snapshot())))
        assert orjson.dumps(copy.snapshot()) == orjson.dumps(original.snapshot()), (stage, partition)
    assert any(pipe.queues.values()), "nothing was in flight"
    assert len(pipe.stages[Stage.DECIDE][0].engine.index) > 0, "nothing was decided"
    if inputs is not None:
        assert pipe.stages[Stage.DECIDE][0].held, "no page was held"


def journaled_batches(corpus, inputs, seed):
    """Each stage partition's fresh state machines' maker, and the batches its journal holds, once
    ``corpus`` has run through a durable pipeline that never snapshots: (pipe, stage, partition,
    batches) for each."""
    pipe = LocalPipeline(
        DedupConfig(), LAYOUT, rng=random.Random(seed), durable=True, compact_bytes=1 << 40, inputs=inputs
    )
    pipe.feed([orjson.dumps(record) for record in corpus])
    pipe.run()
    for (stage, partition), rows in pipe.rows.items():
        batches = [
            messages
            for key, value in sorted(rows.items())
            if key[4:5] == b"j"
            for messages in codec.decode_segment(stage, value)[0]
        ]
        yield pipe, stage, partition, batches


@pytest.mark.parametrize("inputs", [None, 1])
def test_handling_a_batch_in_parts_leaves_the_state_of_handling_it_whole(corpus, inputs):
    """Replay hands a segment's batches to the stage one by one, live may have handled them as one."""
    for pipe, stage, partition, batches in journaled_batches(corpus, inputs, seed=2):
        one_by_one, whole = pipe._make[stage](partition), pipe._make[stage](partition)
        for records in batches:
            one_by_one.handle(records)
        whole.handle([record for records in batches for record in records])
        assert codec.dump_state(whole.snapshot()) == codec.dump_state(one_by_one.snapshot()), (
            stage,
            partition,
        )


@pytest.mark.parametrize("inputs", [None, 1])
def test_replaying_a_journal_leaves_the_state_handling_left(corpus, inputs):
    """A journal's batches are replayed, not handled: a site partition then skips signing, whose
    outputs were sent before. Every partition of every stage must be left as handling left it."""
    replayed_pages = 0
    for pipe, stage, partition, batches in journaled_batches(corpus, inputs, seed=3):
        handled, replayed = pipe._make[stage](partition), pipe._make[stage](partition)
        for records in batches:
            handled.handle(records)
            replayed.replay(records)
        replayed_pages += sum(len(records) for records in batches) if stage == Stage.SITES else 0
        assert codec.dump_state(replayed.snapshot()) == codec.dump_state(handled.snapshot()), (
            stage,
            partition,
        )
    assert replayed_pages > 0, "no site partition had a batch to replay"


def test_compaction_keeps_the_rows_proportional_to_the_live_state():
    config = DedupConfig(ttl=3600.0)
    pipe = LocalPipeline(config, Layout(1), durable=True, compact_bytes=50_000)
    pages = generate_corpus(600, seed=4).pages
    for i, record in enumerate(pages):  # one page a minute: the 1-hour window holds ~60 pages
        when = datetime(2026, 3, 1, tzinfo=timezone.utc) + timedelta(minutes=i)
        record = dict(record, published_at=when.isoformat())
        pipe.feed([orjson.dumps(record)])
        pipe.run()
    for key, journal in pipe.journals.items():
        stored = sum(len(v) for v in pipe.rows[key].values())
        assert stored <= 2 * journal.snapshot_bytes + journal.compact_bytes + journal.chunk_bytes + 1024, key
    window = pipe.stages[Stage.DECIDE][0].engine.index
    assert 0 < len(window) < 100  # the window, not the whole stream


def rows_of(journal: Journal, stage) -> list[tuple[bytes, bytes]]:
    rows = dict(journal.append([orjson.dumps([])]))
    rows.update(journal.compact(stage))
    return sorted((k, v) for k, v in rows.items() if v is not None)


def test_state_built_with_other_parameters_is_refused_with_what_differs():
    layout = Layout(1)
    built = Journal(0, {"scheme": "aaaa", "layout": [1]})
    rows = rows_of(built, LocalPipeline(DedupConfig(), layout).stages[Stage.DECIDE][0])
    running = Journal(0, {"scheme": "bbbb", "layout": [1]})
    with pytest.raises(StateMismatchError, match=r"scheme: stored 'aaaa', running 'bbbb'"):
        running.load(rows, LocalPipeline(DedupConfig(), layout).stages[Stage.DECIDE][0])


def _guards() -> tuple[dict, dict]:
    """The guard this version writes, and the one the version before the wording of names wrote
    (its scheme's names rule without the "+wording" part)."""
    scheme = Preparer(DedupConfig()).scheme
    older = dataclasses.replace(scheme, names_rule=scheme.names_rule.split("+")[0])
    guard = {"scheme": scheme.fingerprint, "scheme_params": scheme.to_dict(), "layout": [1]}
    return guard, {**guard, "scheme": older.fingerprint, "scheme_params": older.to_dict()}


def test_a_guard_that_lacks_only_the_wording_of_names_is_accepted_and_nothing_else_is():
    running, before = _guards()
    assert guard_accepts(running, running) and guard_accepts(before, running)
    assert not guard_accepts(running, before)  # state of the newer rule, read by the older
    assert not guard_accepts({**before, "layout": [2]}, running)
    seeded = {**before["scheme_params"], "seed": 7}
    assert not guard_accepts({**before, "scheme_params": seeded}, running)
    assert not guard_accepts({"scheme": before["scheme"], "layout": [1]}, running)  # no parameters


def test_a_journal_written_before_the_wording_of_names_is_loaded():
    running, before = _guards()
    stage = LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0]
    rows = rows_of(Journal(0, before), stage)
    Journal(0, running).load(rows, LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0])
    with pytest.raises(StateMismatchError, match=r"scheme_params\.names_rule"):
        Journal(0, before).load(rows_of(Journal(0, running), stage), stage)


def test_rows_without_a_head_or_with_a_missing_chunk_are_refused():
    stage = LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0]
    journal = Journal(0, {"g": 1}, chunk_bytes=10)
    rows = rows_of(journal, stage)
    headless = [(k, v) for k, v in rows if k[4:5] != b"h"]
    with pytest.raises(IncompleteStateError, match=r"partition 0 has state rows but no head row"):
        Journal(0, {"g": 1}).load(headless, stage)
    chunkless = [(k, v) for k, v in rows if k[4:5] != b"s" or k[-1] != 0]
    with pytest.raises(IncompleteStateError, match="chunks"):
        Journal(0, {"g": 1}).load(chunkless, stage)


def test_a_copy_that_lacks_segments_before_its_last_one_is_refused_as_incomplete():
    """A copy of the rows that missed some segments cannot be told apart by replaying it, and its
    state would miss batches whose input was committed (a segment is written only once the one
    before it is on the broker): the load refuses it, naming the gap, and the store restores the
    rows from the changelog."""
    stage = LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0]
    journal = Journal(0, {"g": 1})
    rows = [row for n in range(4) for row in journal.append([codec.encode([])], covered=n)]
    whole = Journal(0, {"g": 1})
    whole.load(rows, LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0])
    assert whole.next_segment == 4
    gapped = [(k, v) for k, v in rows if k != journal._segment_key(1) and k != journal._segment_key(2)]
    with pytest.raises(IncompleteStateError, match=r"lacks 2 segment\(s\) before its last one \(1, 2\)"):
        Journal(0, {"g": 1}).load(gapped, stage)


def test_rows_of_other_partitions_are_ignored_and_keys_never_collide():
    a, b = Journal(0, {}), Journal(1, {})
    keys_a = {k for k, _ in a.append([b"[]", b"[]"])}
    keys_b = {k for k, _ in b.append([b"[]", b"[]"])}
    assert not keys_a & keys_b
    assert all(k.startswith(a.prefix) for k in keys_a)


def load_into(rows: list[tuple[bytes, bytes | None]], stage) -> Journal:
    journal = Journal(0, {"g": 1}, chunk_bytes=64)
    journal.load([(k, v) for k, v in rows if v is not None], stage)
    return journal


def test_a_journal_knows_which_input_records_its_state_holds_through_a_snapshot_and_a_cut():
    """Records read again after a restart are handled once (Journal.handled): the journal knows the
    last input offset its rows cover, from the segments after the snapshot or from the snapshot's
    head, and a micro-batch whose rows were cut part-way is not covered."""
    stage = LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0]
    empty = codec.encode([])
    journal = Journal(0, {"g": 1}, chunk_bytes=64)
    rows = journal.append([empty], covered=7)
    assert journal.handled(7) and not journal.handled(8)
    assert load_into(rows, stage).handled(7) and not load_into(rows, stage).handled(8)
    rows += journal.compact(stage) + journal.append([empty] * 40, covered=12)  # 40 batches: several segments
    assert load_into(rows, stage).handled(12)
    segments_of_last = [key for key, value in rows if key[4:5] == b"j" and value is not None][-1:]
    cut = [(k, v) for k, v in rows if k not in segments_of_last]  # the micro-batch's last segment is lost
    loaded = load_into(cut, stage)
    assert loaded.handled(7) and not loaded.handled(8), "the cut micro-batch is handled again"
    assert Journal(0, {"g": 1}).handled(0) is False  # nothing journaled: nothing covered


def test_a_journal_of_an_earlier_dataflow_is_refused_with_what_to_do():
    """tests/data/journal-format-2.json.gz holds the rows of every stage partition as a version
    with band partitions and homes wrote them. This version has one decide partition in their
    place: it cannot rebuild its window from those rows, and says so rather than guess."""
    import base64
    import gzip
    from pathlib import Path

    fixture = orjson.loads(
        gzip.decompress((Path(__file__).parent / "data/journal-format-2.json.gz").read_bytes())
    )
    pipe = LocalPipeline(DedupConfig(), Layout(2), durable=True, inputs=1)
    name, rows = next(iter(fixture["rows"].items()))
    _, partition = name.split("/")
    with pytest.raises(
        StateMismatchError, match=r"state format 2, written by an earlier stream-lsh.*Upgrading"
    ):
        Journal(int(partition), {"test": True}).load(
            sorted((base64.b64decode(k), base64.b64decode(v)) for k, v in rows), pipe.stages[Stage.SITES][0]
        )


def test_a_journal_of_an_unknown_format_is_refused_with_the_formats_read():
    stage = LocalPipeline(DedupConfig(), Layout(1)).stages[Stage.DECIDE][0]
    rows = dict(rows_of(Journal(0, {"g": 1}), stage))
    head = next(k for k in rows if k[4:5] == b"h")
    rows[head] = orjson.dumps({**orjson.loads(rows[head]), "format": 99})
    with pytest.raises(
        StateMismatchError, match=r"state format 99; this version of stream-lsh reads formats 6"
    ):
        Journal(0, {"g": 1}).load(sorted(rows.items()), stage)
