"""The window on disk (stream_lsh.stores.DiskIndex) keeps what the memory store keeps, by the same
rules: the same operations on both give the same answers, and an engine decides alike over either."""

import io
import itertools
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.batch import DecisionRecords, RejectSink, SpreadAlerts, run_batch
from stream_lsh.core.banding import Banding
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.index import IndexEntry, LSHIndex
from stream_lsh.core.scheme import Scheme
from stream_lsh.core.spread import AlertRules, SpreadTracker
from stream_lsh.errors import StateMismatchError
from stream_lsh.state import DirectoryState
from stream_lsh.stores import DiskIndex
from stream_lsh.stores.entry_codec import decode_entry, encode_entry, expiry_key, expiry_time
from stream_lsh.synthetic import generate_corpus

SCHEME = Scheme(shingles="word", shingle_size=3, num_perm=8, seed=1)
BANDING = Banding(bands=4, rows=2, num_perm=8)
FP = SCHEME.fingerprint
KEYS = [1, 2, 3, 4, 5, 6, 2**63 + 7, 2**64 - 1]  # a small key space: buckets fill and collide


def entry(page_id: str, keys: list[int], event_time: float | None, content: int, cluster: str) -> IndexEntry:
    signature = np.arange(8, dtype=np.uint32) + content
    return IndexEntry(
        id=page_id,
        signature=signature,
        band_keys=np.array(keys, dtype=np.uint64),
        cluster_id=cluster,
        event_time=event_time,
        content_hash=content,
        scheme=FP,
    )


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("insert"),
            st.sampled_from("abcdefgh"),
            st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True),
            st.one_of(st.none(), st.floats(-50, 200)),
            st.integers(0, 3),
            st.sampled_from(["a", "b", "k"]),
        ),
        st.tuples(st.just("remove"), st.sampled_from("abcdefgh")),
        st.tuples(st.just("advance"), st.integers(-10_000, 300_000)),
        st.tuples(
            st.just("commit"),
        ),
        st.tuples(st.just("reopen")),  # the buckets built again from the entries and evictions
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(operations, st.sampled_from([1, 2, 64]), st.sampled_from([None, 40.0]))
def test_the_disk_store_answers_as_the_memory_store(tmp_path_factory, steps, cap, ttl):
    memory = LSHIndex(SCHEME, BANDING, bucket_cap=cap, ttl=ttl)
    path = tmp_path_factory.mktemp("window")
    disk = DiskIndex(path, SCHEME, BANDING, bucket_cap=cap, ttl=ttl)
    for step in steps:
        if step[0] == "insert":
            _, page_id, keys, event_time, content, cluster = step
            memory.insert(entry(page_id, keys, event_time, content, cluster))
            disk.insert(entry(page_id, keys, event_time, content, cluster))
        elif step[0] == "remove":
            assert memory.remove(step[1]) == disk.remove(step[1])
        elif step[0] == "advance":
            assert memory.advance(step[1]) == disk.advance(step[1])
        elif step[0] == "reopen":
            disk.close()
            disk = DiskIndex(path, SCHEME, BANDING, bucket_cap=cap, ttl=ttl)
        else:
            disk.commit()
        assert len(memory) == len(disk) and memory.clock_ms == disk.clock_ms
        for key in KEYS:
            probe = np.array([key], dtype=np.uint64)
            assert [e.id for e in memory.query(probe, FP)] == [e.id for e in disk.query(probe, FP)]
        for content in range(4):
            assert getattr(memory.exact(content), "id", None) == getattr(disk.exact(content), "id", None)
        for cluster in ["a", "b", "k"]:
            assert (cluster in memory.clusters) == (cluster in disk.clusters)
    assert [e.id for e in memory] == [e.id for e in disk]
    disk.close()


def test_an_entry_comes_back_as_it_went_in():
    from stream_lsh.core.decision import Decision
    from stream_lsh.core.names import sketch_of

    decision = Decision(id="p", status="duplicate", cluster_id="q", duplicate_of="q", similarity=0.8)
    original = IndexEntry(
        id="p ünïcode",
        signature=np.array([0, 1, 2**32 - 1, 5, 6, 7, 8, 9], dtype=np.uint32),
        band_keys=np.array([2**64 - 1, 0, 3, 4], dtype=np.uint64),
        cluster_id="q#2",
        event_time=-1.5,
        content_hash=2**64 - 2,
        scheme=FP,
        body_hash=12,
        shingles=np.array([3, 2**64 - 1], dtype=np.uint64),
        decision=decision,
        names=sketch_of([4, 1, 9], np.array([7 << 16 | 9, 8 << 16 | 1], dtype=np.uint32)),
    )
    copy = decode_entry(encode_entry(original), keep_shingles=True)
    assert np.array_equal(copy.names.hashes, [1, 4, 9]) and copy.names.count == 3
    assert np.array_equal(copy.names.slots, original.names.slots)
    assert copy.id == original.id and copy.cluster_id == "q#2" and copy.event_time == -1.5
    assert copy.content_hash == original.content_hash and copy.body_hash == 12 and copy.decision == decision
    assert np.array_equal(copy.signature, original.signature) and copy.signature.dtype == np.uint32
    assert np.array_equal(copy.band_keys, original.band_keys) and copy.keys == original.keys
    assert np.array_equal(copy.shingles, original.shingles)
    assert decode_entry(encode_entry(original), keep_shingles=False).shingles is None


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=2, max_size=20))
def test_expiry_keys_sort_as_their_times(times):
    keys = [expiry_key(t, n) for n, t in enumerate(times)]
    assert [expiry_time(key) for key in keys] == [t + 0.0 for t in times]  # -0.0 reads as 0.0
    assert sorted(keys) == [expiry_key(t, n) for n, t in sorted(enumerate(times), key=lambda p: (p[1], p[0]))]


def test_a_window_made_under_another_scheme_or_banding_is_refused(tmp_path):
    DiskIndex(tmp_path, SCHEME, BANDING).close()
    other = Scheme(shingles="word", shingle_size=3, num_perm=8, seed=2)
    with pytest.raises(StateMismatchError, match="seed"):
        DiskIndex(tmp_path, other, BANDING)
    with pytest.raises(StateMismatchError, match="banded"):
        DiskIndex(tmp_path, SCHEME, Banding(bands=2, rows=4, num_perm=8))


# -- an engine over either store ------------------------------------------------------------------
def feed(pages: int, seed: int) -> list[bytes]:
    """Generated pages, with redeliveries, new versions and retractions mixed in."""
    records = generate_corpus(pages, seed).pages
    lines = [orjson.dumps(record) for record in records]
    again = [orjson.dumps(records[i]) for i in range(0, len(records), 17)]  # redelivered as sent
    changed = [
        orjson.dumps({**records[i], "text": f"an update {i} " * 40}) for i in range(5, len(records), 41)
    ]
    gone = [orjson.dumps({"id": records[i]["id"], "deleted": True}) for i in range(9, len(records), 53)]
    mixed = list(itertools.chain.from_iterable(itertools.zip_longest(lines, again, changed, gone)))
    return [line for line in mixed if line is not None]


def decide(lines: list[bytes], engine: Deduplicator, tracker: SpreadTracker) -> tuple[list, list]:
    decisions, alerts = DecisionRecords(), DecisionRecords()
    run_batch(
        lines, engine, out=decisions, rejects=RejectSink(io.BytesIO), alerts=SpreadAlerts(tracker, alerts)
    )
    return decisions.records, alerts.records


RULES = AlertRules.parse("3,5", 6.0)


@pytest.mark.parametrize(
    "config",
    [DedupConfig(ttl=20 * 3600.0, bucket_cap=3), DedupConfig(verify="jaccard", ttl=None)],
    ids=["short-window-small-buckets", "exact-jaccard"],
)
def test_an_engine_over_a_directory_decides_as_in_memory_across_runs(tmp_path, config):
    lines = feed(900, seed=11)
    expected = decide(lines, Deduplicator(config), SpreadTracker(RULES))
    assert any(record["status"] == "duplicate" for record in expected[0]) and expected[1]
    got: tuple[list, list] = ([], [])
    for part in (lines[:400], lines[400:]):  # two runs over one directory
        directory = DirectoryState(
            tmp_path / "state", config, cache_bytes=8 << 20, spread=SpreadTracker(RULES)
        )
        assert not directory.unfinished
        directory.load()
        decisions, alerts = decide(part, directory.engine, directory.spread)
        directory.save()
        directory.close()
        got[0].extend(decisions)
        got[1].extend(alerts)
    assert got == expected


def test_a_killed_run_is_told_and_what_it_decided_stays(tmp_path):
    """A real ``dedup --state-dir`` process killed with SIGKILL at a seeded moment: the next run
    over the directory warns in one line and goes on; the pages the killed run indexed are
    redeliveries to it; a run after that one finishes cleanly."""
    import random
    import subprocess
    import sys
    import time

    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"\n".join(orjson.dumps(record) for record in generate_corpus(6000, 4).pages) + b"\n")
    state = tmp_path / "state"
    command = [sys.executable, "-m", "stream_lsh", "dedup", str(pages), "--state-dir", str(state)]
    first = tmp_path / "first.jsonl"
    killed = subprocess.Popen([*command, "-o", str(first)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not first.exists() or first.stat().st_size < 10_000:  # deciding, not starting
        assert time.monotonic() < deadline and killed.poll() is None
        time.sleep(0.05)
    time.sleep(random.Random(7).uniform(0.3, 1.5))
    assert killed.poll() is None, "the run ended before it could be killed: give it more pages"
    killed.kill()
    killed.wait()
    written = []
    for line in first.read_bytes().splitlines():
        try:
            written.append(orjson.loads(line))
        except orjson.JSONDecodeError:  # the line the kill cut
            break
    again = subprocess.run([*command, "-o", str(tmp_path / "second.jsonl")], capture_output=True, check=True)
    warnings = [line for line in again.stderr.decode().splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "was killed before it ended" in warnings[0]
    second = [orjson.loads(line) for line in (tmp_path / "second.jsonl").read_bytes().splitlines()]
    assert len(second) == 6000 and 0 < len(written) < 6000
    assert second[: len(written)] == written  # each page written out was indexed: redelivered, same answer
    last = subprocess.run([*command, "-o", str(tmp_path / "third.jsonl")], capture_output=True, check=True)
    assert "warning:" not in last.stderr.decode()
    third = [orjson.loads(line) for line in (tmp_path / "third.jsonl").read_bytes().splitlines()]
    assert third == second


def test_an_interrupted_run_saves_what_goes_with_its_pages(tmp_path):
    """Ctrl-C (SIGINT to a real process) mid-run: it stops at once, saves the learner, the file
    clock and the spread with the pages it decided, and the next run has nothing to warn about."""
    import signal
    import subprocess
    import sys
    import time

    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"\n".join(orjson.dumps(record) for record in generate_corpus(6000, 5).pages) + b"\n")
    state, first = tmp_path / "state", tmp_path / "first.jsonl"
    command = [sys.executable, "-m", "stream_lsh", "dedup", str(pages), "--state-dir", str(state)]
    run = subprocess.Popen(
        [*command, "-o", str(first)],
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C
    )
    deadline = time.monotonic() + 60
    while not first.exists() or first.stat().st_size < 10_000:
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    run.send_signal(signal.SIGINT)
    assert run.wait(timeout=60) != 0, "the run ended before it could be interrupted"
    again = subprocess.run([*command, "-o", str(tmp_path / "second.jsonl")], capture_output=True, check=True)
    assert "warning:" not in again.stderr.decode()
    written = [orjson.loads(line) for line in first.read_bytes().splitlines()]
    second = [orjson.loads(line) for line in (tmp_path / "second.jsonl").read_bytes().splitlines()]
    assert 0 < len(written) < 6000 and second[: len(written)] == written


def test_a_window_of_the_first_layout_is_migrated_and_answers_as_before(tmp_path):
    """tests/data/window-layout-1 was written by the version that kept the buckets in RocksDB
    (f6e2cf6, with the operations in its ops.json: a cap of 2 pushes pages out of buckets, a page
    is removed, one expires, one is indexed again). Opened now, it is migrated once, and then
    answers as a memory store given the same operations, also when opened again."""
    fixture = Path(__file__).parent / "data" / "window-layout-1"
    ops = orjson.loads((fixture / "ops.json").read_bytes())
    shutil.copytree(fixture / "db", tmp_path / "db")
    memory = LSHIndex(SCHEME, BANDING, bucket_cap=ops["cap"], ttl=ops["ttl"])
    for step in ops["steps"]:
        if step[0] == "insert":
            memory.insert(entry(*step[1:]))
        elif step[0] == "remove":
            memory.remove(step[1])
        elif step[0] == "advance":
            memory.advance(step[1])
    for _ in range(2):
        disk = DiskIndex(tmp_path / "db", SCHEME, BANDING, bucket_cap=ops["cap"], ttl=ops["ttl"])
        assert len(disk) == len(memory) == 4
        for key in range(1, 6):
            probe = np.array([key], dtype=np.uint64)
            assert [e.id for e in disk.query(probe, FP)] == [e.id for e in memory.query(probe, FP)]
        assert [e.id for e in disk] == [e.id for e in memory]
        disk.close()


def test_tables_written_after_a_reopen_keep_their_bloom_filters(tmp_path):
    """Most reads of the window are of keys it lacks (a sentence's opening, a new page's id); a
    table's bloom filter answers them without reading its blocks. rocksdict, reopening a database,
    dropped the filter from the options of every table it wrote after (130 us a read at 300,000
    pages instead of 3)."""
    for opening in range(3):
        disk = DiskIndex(tmp_path, SCHEME, BANDING)
        for n in range(200):
            disk.insert(entry(f"{opening}-{n}", [n + 1, n + 2], None, opening * 1000 + n, "c"))
        disk.commit()
        disk._db.flush()
        found = dict(
            part.strip().split("=", 1)
            for part in disk._db.property_value("rocksdb.aggregated-table-properties").split(";")
            if "=" in part
        )
        disk.close()
        assert int(found["# entries for filter"]) == int(found["# entries"]) > 0, found
