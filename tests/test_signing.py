"""Batch signed in several processes (``dedup --jobs``): the same decisions and the same learner
as one process, on real prose with sites' chrome, whatever the input holds; and a signing process
that dies stops the run with its reason, never a wrong answer."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict

import orjson
import pytest
from click.testing import CliRunner

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.cli import cli
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.page import page_from_dict
from stream_lsh.signing import SigningPool
from stream_lsh.state import load_state
from stream_lsh.synthetic import generate_corpus
from stream_lsh.synthetic.shapes import Shapes


@pytest.fixture(scope="module")
def lines() -> list[bytes]:
    """Real prose in pages with sites' chrome and fixed lists of headlines, one-line bodies and
    notices, with a retraction, a redelivery and a bad line among them."""
    corpus = generate_corpus(
        400, seed=5, prose="real", shapes=Shapes.parse(["fixed-list", "one-line", "notices"])
    )
    lines = [orjson.dumps(record) for record in corpus.pages]
    retracted = corpus.pages[40]["id"]
    return [
        *lines[:150],
        orjson.dumps({"id": retracted, "op": "delete"}),
        b'{"id": "broken", "html": ',
        lines[7],  # a redelivery
        *lines[150:],
    ]


def decided(
    lines: list[bytes], jobs: int, engine: Deduplicator | None = None
) -> tuple[list[dict], Deduplicator]:
    engine = engine or Deduplicator(DedupConfig())
    out = DecisionRecords()
    rejects = io.BytesIO()
    run_batch(lines, engine, out=out, rejects=RejectSink(lambda: rejects), batch_size=64, jobs=jobs)
    return out.records, engine


def learnt(engine: Deduplicator) -> tuple[dict, dict]:
    """The learner's state, the order its sites were first met in aside."""
    assert engine.learner is not None
    state = engine.learner.state()
    boilerplate = defaultdict(list)
    for block, site in state["boilerplate"]:
        boilerplate[site].append(block)  # oldest first within a site: that order is kept
    return state["contexts"], dict(boilerplate)


@pytest.mark.parametrize("jobs", [2, 3])
def test_several_signing_processes_decide_every_page_as_one_and_learn_the_same(lines, jobs):
    alone, engine = decided(lines, 1)
    together, pooled = decided(lines, jobs)
    assert together == alone
    assert learnt(pooled) == learnt(engine)
    assert sum(record["status"] == "duplicate" for record in alone) > 100
    assert any(blocks for blocks in learnt(engine)[1].values())  # the learner did learn chrome


def test_a_run_that_continues_from_saved_state_signs_with_what_each_site_learnt_before(lines):
    alone, _ = decided(lines, 1)
    first, engine = decided(lines[:200], 1)
    rest, _ = decided(lines[200:], 2, engine)  # the learner of the first run, handed to the processes
    assert first + rest == alone


def test_a_signing_process_that_dies_stops_the_run_with_its_name_and_exit_code(lines):
    engine = Deduplicator(DedupConfig())
    pool = SigningPool(engine, 2)
    try:
        pages = [page_from_dict(orjson.loads(line)) for line in lines[:20]]
        pool.submit(pages, [None] * len(pages))
        assert len(pool.signed()) == 20
        victim = pool._workers[1].process
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        with pytest.raises(RuntimeError, match=r"stream-lsh-signer-1 ended unexpectedly \(exit code -9\)"):
            pool.submit(pages, [None] * len(pages))
            pool.signed()
    finally:
        pool._stop()


def test_signing_processes_end_when_their_caller_is_killed():
    """Each process holds no end of a pipe but its own: when the caller dies, it reads the end."""
    script = (
        "import sys, time\n"
        "from stream_lsh.core.dedup import Deduplicator\n"
        "from stream_lsh.signing import SigningPool\n"
        "pool = SigningPool(Deduplicator(), 2)\n"
        "print(*(worker.process.pid for worker in pool._workers), flush=True)\n"
        "time.sleep(600)\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert caller.stdout is not None
    pids = [int(pid) for pid in caller.stdout.readline().split()]
    assert len(pids) == 2
    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for init is gone
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_a_process_that_fails_stops_the_run_and_a_state_directory_says_the_run_did_not_end(
    tmp_path, lines, monkeypatch
):
    """A page that one process cannot prepare (a bug) stops the run with that process's reason;
    what the processes learnt is not handed back, and the directory is left as a killed run
    leaves it: the next run says so, and decides on."""
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"\n".join(lines) + b"\n")
    doomed = orjson.loads(lines[300])["id"]
    prepare = Deduplicator.prepare

    def failing(self, page, clock_ms, *, learn=False):
        if page.id == doomed:
            raise ValueError(f"cannot prepare {page.id}")
        return prepare(self, page, clock_ms, learn=learn)

    monkeypatch.setattr(Deduplicator, "prepare", failing)  # the processes are forked with it
    window = str(tmp_path / "window")
    failed = CliRunner().invoke(
        cli, ["dedup", str(pages), "-o", os.devnull, "--state-dir", window, "--jobs", "2"]
    )
    assert isinstance(failed.exception, RuntimeError)
    assert f"ValueError: cannot prepare {doomed}" in str(failed.exception)
    monkeypatch.setattr(Deduplicator, "prepare", prepare)
    again = CliRunner().invoke(
        cli, ["dedup", str(pages), "-o", os.devnull, "--state-dir", window, "--jobs", "2"]
    )
    assert again.exit_code == 1, again.output  # the broken line
    assert "was killed before it ended" in again.output


def test_a_state_file_saved_after_several_processes_holds_what_one_process_learns(tmp_path, lines):
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"\n".join(lines) + b"\n")
    learners = []
    for jobs in ("1", "2"):
        state = tmp_path / f"state-{jobs}.npz"
        result = CliRunner().invoke(
            cli, ["dedup", str(pages), "-o", os.devnull, "--state", str(state), "--jobs", jobs]
        )
        assert result.exit_code == 1, result.output  # the broken line is rejected
        engine = Deduplicator(DedupConfig())
        load_state(engine, state)
        learners.append(learnt(engine))
    assert learners[0] == learners[1]


def test_two_runs_over_a_state_directory_with_several_processes_decide_as_one_run(tmp_path, lines):
    """The learner the processes hand back is saved in the directory, and the next run's
    processes sign with it: the two halves decide as one run of one process."""
    halves = [tmp_path / "day1.jsonl", tmp_path / "day2.jsonl"]
    halves[0].write_bytes(b"\n".join(lines[:250]) + b"\n")
    halves[1].write_bytes(b"\n".join(lines[250:]) + b"\n")
    decided_in_halves = b""
    for number, half in enumerate(halves):
        out = tmp_path / f"decisions-{number}.jsonl"
        result = CliRunner().invoke(
            cli, ["dedup", str(half), "-o", str(out), "--state-dir", str(tmp_path / "window"), "--jobs", "2"]
        )
        assert result.exit_code in (0, 1), result.output
        decided_in_halves += out.read_bytes()
    alone, _ = decided(lines, 1)
    assert [orjson.loads(line) for line in decided_in_halves.splitlines()] == alone


def test_jobs_is_a_flag_and_a_variable_and_a_negative_count_is_refused(tmp_path, lines):
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"\n".join(lines[:120]) + b"\n")
    runner = CliRunner()
    one = runner.invoke(cli, ["dedup", str(pages), "-o", str(tmp_path / "one.jsonl")])
    every = runner.invoke(cli, ["dedup", str(pages), "-o", str(tmp_path / "all.jsonl"), "--jobs", "0"])
    assert one.exit_code == every.exit_code == 0, (one.output, every.output)
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "all.jsonl").read_bytes()
    refused = runner.invoke(cli, ["dedup", str(pages)], env={"STREAM_LSH_JOBS": "-1"})
    assert refused.exit_code == 2
    assert "jobs must be >= 0 (0: one per core), got -1 (--jobs or STREAM_LSH_JOBS)" in refused.output
