"""The decide partition's window on disk and its log (stream_lsh.pipeline.window_log): a Decider
over a directory, logged delta by delta with checkpoints copied a slice at a time, and opened again
from the directory, from the log alone, or from a directory left behind, decides as one that never
stopped (which decides as the window in memory does)."""

from __future__ import annotations

import dataclasses
import random
import shutil
from pathlib import Path

import pytest
from conftest import prose
from hypothesis import given
from hypothesis import strategies as st
from test_decide import CONFIG, STORY, T0, mark, signed

from stream_lsh.core.prepare import Preparer
from stream_lsh.core.spread import AlertRules, SpreadLevel
from stream_lsh.errors import IncompleteStateError, StateMismatchError
from stream_lsh.pipeline.decide import Decider
from stream_lsh.pipeline.messages import Retraction
from stream_lsh.pipeline.window_log import NOTE, WindowLog, decode_rows, encode_rows
from stream_lsh.stores.disk_index import read_state_of, write_rows

RULES = AlertRules((SpreadLevel(2, 2), SpreadLevel(4, 3)), within_s=3600.0)
GUARD = {"test": 1}


@given(
    st.lists(st.tuples(st.binary(min_size=1, max_size=40), st.none() | st.binary(max_size=60)), max_size=30)
)
def test_rows_come_back_as_they_were_encoded(rows):
    assert list(decode_rows(encode_rows(rows))) == rows


def feed(seed: int = 3, stories: int = 40) -> list[list]:
    """Micro-batches a site partition might send: stories, copies of them a few seconds later from
    other sites (sources), a page sent again, a new version, retractions, release points."""
    rng = random.Random(seed)
    texts = [prose(seed * 1000 + i, 160) for i in range(stories)]
    pages = []
    clock = T0
    for number, text in enumerate(texts):
        clock += rng.randint(1, 4000)
        pages.append(signed(f"s{number}", text, clock))
        for copy in range(rng.randint(0, 4)):
            later = clock + rng.randint(1, 9000)
            page = signed(f"s{number}c{copy}", text + f" Told again {copy}.", later)
            pages.append(dataclasses.replace(page, site=f"site{copy % 3}.example"))
    pages.sort(key=lambda page: (page.clock, page.id))
    batches: list[list] = []
    at = 0
    while at < len(pages):
        size = rng.randint(1, 12)
        batch: list = list(pages[at : at + size])
        at = min(at + size, len(pages))
        if rng.random() < 0.2 and at > 3:
            batch.append(pages[rng.randrange(at - 3, at)])  # sent again
        if rng.random() < 0.1:
            victim = pages[rng.randrange(at)]
            batch.append(Retraction(victim.id, batch[-1].clock))
        batch.append(mark(0, max(m.clock for m in batch)))
        batches.append(batch)
    return batches


def outputs(out) -> list:
    return [sorted(out.decisions, key=str), sorted(out.clusters, key=str), sorted(out.alerts, key=str)]


class Logged:
    """A decide partition as the stream's store runs it, with a dict for the Faust table: each
    micro-batch's rows logged (delta and checkpoint slice), then written to the directory."""

    def __init__(
        self, path: Path, table: dict[bytes, bytes], *, compact_bytes: int = 3000, guard: dict = GUARD
    ) -> None:
        self.path, self.table, self.compact_bytes = path, table, compact_bytes
        self.log = WindowLog(0, guard, compact_bytes=compact_bytes, chunk_bytes=2048)
        note = read_state_of(path, NOTE)
        plan = self.log.load(
            self.table.get(self.log.head_key), sorted(self.table.items()), note and note["delta"]
        )
        if plan.rebuild and path.exists():
            shutil.rmtree(path)
        write_rows(path, WindowLog.replay(plan.keys, self.table.get))
        self.plan = plan
        self.decider = Decider(CONFIG, sources=1, alerts=RULES, window=path)
        note = self.decider.disk.read_state(NOTE)
        self.log.covered = None if note is None else note["covered"]

    def handle(self, messages: list, offset: int, *, write_directory: bool = True) -> list:
        if self.log.handled(offset):
            return outputs(self.decider.handle([]))
        out = self.decider.handle(messages)
        rows, logged = self.log.record(self.decider.take_rows(), offset, self.decider.disk.rows_from)
        for key, value in logged:
            if value is None:
                self.table.pop(key, None)
            else:
                self.table[key] = value
        if write_directory:
            self.decider.disk.write_rows(rows)
        return outputs(out)

    def close(self) -> None:
        self.decider.close()


def test_a_window_on_disk_decides_as_the_window_in_memory(tmp_path):
    memory = Decider(CONFIG, sources=1, alerts=RULES)
    logged = Logged(tmp_path / "w", {})
    for offset, batch in enumerate(feed()):
        assert logged.handle(batch, offset) == outputs(memory.handle(batch))
    assert len(logged.decider.disk) == len(memory.engine.index)
    logged.close()


@pytest.mark.parametrize(
    "how", ["directory kept", "directory lost", "directory left behind", "directory damaged"]
)
def test_a_partition_opened_again_goes_on_as_one_that_never_stopped(tmp_path, how):
    batches = feed(seed=5, stories=80)
    steady = Logged(tmp_path / "steady", {})
    expected = [steady.handle(batch, offset) for offset, batch in enumerate(batches)]
    steady.close()

    table: dict[bytes, bytes] = {}
    path = tmp_path / "w"
    first = Logged(path, table)
    cut, behind = len(batches) * 2 // 3, 2  # a copy older than the checkpoint the feed finishes
    got = []
    for offset, batch in enumerate(batches[:cut]):
        if how == "directory left behind" and offset == behind:
            first.decider.disk.write_rows([])  # nothing pending; the copy below is of this moment
            first.close()
            shutil.copytree(path, tmp_path / "old")
            first = Logged(path, table)  # opened from its own directory, at once
        got.append(first.handle(batch, offset))
    first.close()
    assert first.log.checkpoint is not None, "the feed should have finished a checkpoint"
    if how == "directory lost":
        shutil.rmtree(path)
    elif how == "directory left behind":
        shutil.rmtree(path)
        shutil.move(tmp_path / "old", path)
    elif how == "directory damaged":
        shutil.rmtree(path)  # a directory that will not open is moved aside by the store; here: gone
    second = Logged(path, table)
    assert first.log.checkpoint["start"] > behind + 1  # the deltas after the old copy are gone
    assert second.plan.rebuild == (how != "directory kept")
    for offset, batch in enumerate(batches[cut:], cut):
        got.append(second.handle(batch, offset))
    second.close()
    assert got == expected


def test_a_batch_logged_but_not_written_to_the_directory_is_applied_when_it_opens(tmp_path):
    """A crash after the broker had the delta, before the directory was written: the directory
    is one delta behind, and opening it applies that delta; the batch's input is then handled."""
    batches = feed(seed=7)
    steady = Logged(tmp_path / "steady", {})
    expected = [steady.handle(batch, offset) for offset, batch in enumerate(batches)]
    steady.close()
    table: dict[bytes, bytes] = {}
    first = Logged(tmp_path / "w", table)
    got = [first.handle(batch, offset) for offset, batch in enumerate(batches[:10])]
    got.append(first.handle(batches[10], 10, write_directory=False))
    first.close()
    second = Logged(tmp_path / "w", table)
    assert not second.plan.rebuild and second.plan.deltas == 1
    assert second.log.handled(10) and not second.log.handled(11)
    got += [second.handle(batch, offset) for offset, batch in enumerate(batches[11:], 11)]
    second.close()
    assert got == expected


def _delta_keys(table: dict[bytes, bytes]) -> list[bytes]:
    return sorted(key for key in table if key[4:5] == b"d")


@pytest.mark.parametrize("lost", ["the head", "a delta before the last", "a part of a delta before the last"])
def test_a_copy_of_the_log_that_lacks_rows_is_refused_as_incomplete(tmp_path, lost):
    """Rows a copy of the table lacks cannot be told from rows never written by replaying them:
    the state would silently miss batches whose input was committed. A delta is logged only once
    the one before it is on the broker, so a gap before the last one means rows were lost, and the
    load says so (the store then restores the rows from the changelog)."""
    table: dict[bytes, bytes] = {}
    logged = Logged(tmp_path / "w", table, compact_bytes=1 << 30)
    for offset, batch in enumerate(feed(seed=9, stories=10)):
        logged.handle(batch, offset)
    logged.close()
    deltas = _delta_keys(table)
    numbers = sorted({key[5:13] for key in deltas})
    assert len(numbers) > 3 and len(deltas) > len(numbers), "several deltas, one in parts"
    if lost == "the head":
        del table[logged.log.head_key]
    elif lost == "a delta before the last":
        for key in deltas:
            if key[5:13] == numbers[1]:
                del table[key]
    else:
        parted = next(k for k in deltas if k[13:] != bytes(4) and k[5:13] != numbers[-1])
        del table[parted]
    with pytest.raises(IncompleteStateError, match="decide partition 0"):
        Logged(tmp_path / "again", table)


def test_a_last_delta_cut_short_by_a_crash_is_dropped_and_its_batch_done_again(tmp_path):
    """A crash while a batch's delta was being sent leaves part of it; its input was not
    committed, so the batch comes again: the load drops those parts instead of refusing."""
    batches = feed(seed=9, stories=10)
    steady = Logged(tmp_path / "steady", {}, compact_bytes=1 << 30)
    expected = [steady.handle(batch, offset) for offset, batch in enumerate(batches)]
    steady.close()
    table: dict[bytes, bytes] = {}
    first = Logged(tmp_path / "w", table, compact_bytes=1 << 30)
    got = []
    for offset, batch in enumerate(batches):
        got.append(first.handle(batch, offset, write_directory=False))
        last = sorted({key[5:13] for key in _delta_keys(table)})[-1]
        parts = [key for key in _delta_keys(table) if key[5:13] == last]
        if len(parts) > 1:
            break
    first.close()
    del table[parts[-1]]  # the last part never reached the broker
    got.pop()
    shutil.rmtree(tmp_path / "w")
    second = Logged(tmp_path / "w", table, compact_bytes=1 << 30)
    assert not second.log.handled(offset)
    got += [second.handle(batch, at) for at, batch in enumerate(batches[offset:], offset)]
    second.close()
    assert got == expected


def test_the_log_stays_proportional_to_the_window(tmp_path):
    """Checkpoints replace the deltas before them: the table does not grow with every batch."""
    table: dict[bytes, bytes] = {}
    logged = Logged(tmp_path / "w", table, compact_bytes=2000)
    batches = feed(seed=11, stories=60)
    for offset, batch in enumerate(batches):
        logged.handle(batch, offset)
    deltas = {key[5:13] for key in table if key[4:5] == b"d"}
    assert logged.log.checkpoint is not None and logged.log.checkpoint["generation"] >= 2
    assert len(deltas) < len(batches) - 5  # those before the last checkpoint are gone
    window = sum(len(key) + len(value) for key, value in logged.decider.disk.rows())
    assert sum(map(len, table.values())) < 3 * window
    logged.close()


def test_state_of_another_guard_or_format_is_refused(tmp_path):
    table: dict[bytes, bytes] = {}
    logged = Logged(tmp_path / "w", table)
    logged.handle([signed("a", STORY, T0), mark(0, T0)], 0)
    logged.close()
    with pytest.raises(StateMismatchError, match="stored 1, running 2"):
        WindowLog(0, {"test": 2}).load(table[WindowLog(0, GUARD).head_key], sorted(table.items()), None)
    journal_head = b'{"format": 6, "guard": {"test": 1}}'
    with pytest.raises(StateMismatchError, match="earlier stream-lsh"):
        WindowLog(0, GUARD).load(journal_head, [], None)


def test_a_window_written_before_the_wording_of_names_is_read_and_decides_on(tmp_path):
    """A stream upgraded to the wording of names loads the window the version before wrote (its
    guard's names rule lacks the "+wording" part), as batch reads its state file; a window written
    under the newer rule is refused by the older one."""
    scheme = Preparer(CONFIG).scheme
    older = dataclasses.replace(scheme, names_rule=scheme.names_rule.split("+")[0])
    running = {"scheme": scheme.fingerprint, "scheme_params": scheme.to_dict()}
    stored = {"scheme": older.fingerprint, "scheme_params": older.to_dict()}
    table: dict[bytes, bytes] = {}
    before = Logged(tmp_path / "w", table, guard=stored)
    before.handle([signed("a", STORY, T0), mark(0, T0)], 0)
    before.close()
    upgraded = Logged(tmp_path / "w", table, guard=running)
    decisions, _, _ = upgraded.handle([signed("b", STORY, T0 + 5), mark(0, T0 + 5)], 1)
    upgraded.close()
    assert [(d["id"], d["status"], d["duplicate_of"]) for _, d in decisions] == [("b", "duplicate", "a")]
    with pytest.raises(StateMismatchError, match=r"scheme_params\.names_rule"):
        Logged(tmp_path / "w", table, guard=stored)
