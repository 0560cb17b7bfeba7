"""A newcomer's first hour: every ordinary mistake is one line that names the file or flag and the
fix, with the usage exit code (2); no input line is lost to one that cannot be sent; files are cut
into lines one way everywhere.

The commands run as a user runs them: the installed entry point in a process of its own (click's
test runner would bypass the one-line error handling of :func:`stream_lsh.cli.main`), against a real
broker where one is needed.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import orjson
import pytest

from stream_lsh import Deduplicator, Page
from stream_lsh.core.config import DedupConfig
from stream_lsh.core.record import read_lines, split_lines
from stream_lsh.errors import ExitCode, SettingsError
from stream_lsh.stream.brokers import fetch_tools, free_port
from stream_lsh.stream.brokers.kafka_dist import java_binary
from stream_lsh.stream.brokers.process import answers_metadata
from stream_lsh.stream.client import read_topic
from stream_lsh.stream.worker import own_data_dir
from stream_lsh.synthetic import generate_corpus


def stream_lsh(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 180):
    return subprocess.run(
        [sys.executable, "-m", "stream_lsh", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("first-hour")
    corpus = generate_corpus(40, seed=9)
    (folder / "pages.jsonl").write_bytes(b"".join(orjson.dumps(page) + b"\n" for page in corpus.pages))
    (folder / "labels.json").write_bytes(orjson.dumps(corpus.labels))
    (folder / "list.json").write_text('["a", "b"]')
    (folder / "other.json").write_text('{"somebody-else": "x"}')
    return folder


MISTAKES = [
    (["eval", "missing.jsonl", "labels.json"], "no such file: missing.jsonl"),
    (["eval", "pages.jsonl", "missing.json"], "no such file: missing.json"),
    (["eval", "pages.jsonl", "list.json"], "list.json: expected a JSON object mapping page ids"),
    (["eval", "pages.jsonl", "other.json"], "other.json labels other pages than pages.jsonl"),
    (["dedup", "pages.jsonl", "-o", "/missing/dir/out.jsonl"], "there is no directory /missing/dir"),
    (["generate", "--pages", "5", "-o", "/missing/dir/x.jsonl", "--labels", "l.json"], "no directory"),
    (["dedup", "."], ". is a directory"),
    (["dedup", "pages.jsonl", "--threshold", "2"], "threshold must be in (0, 1)"),
    (["dedup", "pages.jsonl", "-o", "pages.jsonl"], "-o pages.jsonl is PAGES itself"),
    (["dedup", "pages.jsonl", "-o", "out.jsonl", "--rejects", "out.jsonl"], "are both out.jsonl"),
    (["eval", "labels.json", "labels.json"], "none of the 40 pages labels.json labels is in labels.json"),
    (["eval", "pages.jsonl", "."], ". is a directory; give a JSON file of labels"),
    (
        ["run", "--feed", "pages.jsonl", "-o", "pages.jsonl", "--until-idle"],
        "-o pages.jsonl is --feed itself",
    ),
    (["produce", "pages.jsonl", "--rejects", "pages.jsonl", "--broker", "127.0.0.1:1"], "is PAGES itself"),
    (["generate", "--pages", "5", "-o", "x.jsonl", "--labels", "x.jsonl"], "are both x.jsonl"),
    (["dedup", "pages.jsonl", "--state", "s.npz", "--state-dir", "sd"], "keep the same state two ways"),
    (["dedup", "pages.jsonl", "--state-dir", "pages.jsonl"], "pages.jsonl"),
    (["dedup", "pages.jsonl", "--state-dir", "/missing/dir/state"], "/missing/dir is not a writable"),
]


@pytest.mark.parametrize(("args", "says"), MISTAKES, ids=[" ".join(args) for args, _ in MISTAKES])
def test_an_ordinary_mistake_is_one_line_and_the_usage_exit_code(files, args, says):
    done = stream_lsh(*args, cwd=files)
    assert done.returncode == ExitCode.USAGE, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # no traceback, no usage block
    assert says in lines[0] and f"stream-lsh {args[0]} --help" in lines[0], lines[0]


def test_a_state_directory_of_another_scheme_or_held_by_another_run_is_one_line(files, tmp_path):
    from stream_lsh.core.dedup import Deduplicator
    from stream_lsh.stores import DiskIndex

    state = tmp_path / "state"
    done = stream_lsh("dedup", "pages.jsonl", "-o", "out.jsonl", "--state-dir", str(state), cwd=files)
    assert done.returncode == 0, done.stderr
    for args, says in [
        (["--seed", "5"], "differing parameters: seed: 1 (expected 5)"),
        (["--bands", "10", "--rows", "2"], "was banded with b, r"),
    ]:
        done = stream_lsh(
            "dedup", "pages.jsonl", "-o", "out.jsonl", "--state-dir", str(state), *args, cwd=files
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == ExitCode.USAGE and len(lines) == 1, done.stderr
        assert f"cannot use state directory {state}" in lines[0] and says in lines[0], lines[0]
    engine = Deduplicator()
    held = DiskIndex(state, engine.scheme, engine.banding)  # another run holds it
    try:
        done = stream_lsh("dedup", "pages.jsonl", "-o", "out.jsonl", "--state-dir", str(state), cwd=files)
    finally:
        held.close()
    lines = done.stderr.strip().splitlines()
    assert done.returncode == ExitCode.USAGE and len(lines) == 1, done.stderr
    assert f"cannot open state directory {state}" in lines[0] and "lock" in lines[0].lower(), lines[0]


def test_a_labels_file_that_fits_still_scores(files):
    done = stream_lsh("eval", "pages.jsonl", "labels.json", "--json", cwd=files)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["pages"] == 40
    before = (files / "pages.jsonl").read_bytes()
    assert stream_lsh("dedup", "pages.jsonl", "-o", "pages.jsonl", cwd=files).returncode == ExitCode.USAGE
    assert (files / "pages.jsonl").read_bytes() == before  # refused before it was opened for writing


def test_eval_says_when_labelled_pages_were_not_scored_and_takes_integer_names(files):
    """Half the file against all the labels: the other half are scored as pages of their own,
    and eval says so; labels may name clusters by numbers."""
    half = files / "half.jsonl"
    half.write_bytes(b"".join((files / "pages.jsonl").read_bytes().splitlines(keepends=True)[:20]))
    done = stream_lsh("eval", "half.jsonl", "labels.json", cwd=files)
    assert done.returncode == 0, done.stderr
    assert "warning: 20 of the 40 pages labels.json labels are not in half.jsonl" in done.stderr
    numbered = {page: index for index, page in enumerate(orjson.loads((files / "labels.json").read_bytes()))}
    (files / "numbered.json").write_bytes(orjson.dumps(numbered))
    done = stream_lsh("eval", "pages.jsonl", "numbered.json", "--json", cwd=files)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["true_pairs"] == 0  # every page its own cluster


def test_a_second_worker_on_a_data_directory_in_use_is_refused_at_once(tmp_path):
    """Two workers on one data directory would wait on RocksDB's locks until Faust crashes: the
    second is refused in one line before it does anything, naming the holder."""
    with own_data_dir(tmp_path / "data"):
        done = stream_lsh(
            "worker",
            "--broker",
            "127.0.0.1:1",
            cwd=tmp_path,
            env={"STREAM_LSH_DATA_DIR": str(tmp_path / "data")},
        )
    assert done.returncode == ExitCode.USAGE, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"in use by another worker (process {os.getpid()})" in line and "STREAM_LSH_DATA_DIR" in line


def test_errors_of_the_engine_config_are_the_projects_own():
    with pytest.raises(SettingsError, match="threshold"):
        DedupConfig(threshold=1.5)
    with pytest.raises(ValueError, match="languages"):  # still a ValueError, for callers that catch those
        DedupConfig(languages=("xx",))


def test_dates_given_as_strings_in_python_are_read_as_in_json():
    """``Page(published_at="...")``: the string a JSON record would carry, read the same way."""
    text = "the mayor said on monday that the new bridge over the river would open in the spring"
    as_json = Page(id="a", text=text, published_at=1_795_161_600.0)
    for given in (
        "2026-11-20T08:00:00Z",
        "Fri, 20 Nov 2026 08:00:00 GMT",
        1_795_161_600_000,
        datetime(2026, 11, 20, 8),
    ):
        page = Page(id="a", text=text, published_at=given)
        assert page.published_at == as_json.published_at and page.date_problem is None, given
    assert Page(
        id="a", text=text, published_at=datetime(2026, 11, 20, 9, tzinfo=timezone.utc)
    ).published_at == (as_json.published_at + 3600)
    unreadable = Page(id="a", text=text, published_at="next tuesday")
    assert unreadable.published_at is None and unreadable.date_problem == "unreadable"
    engine = Deduplicator()
    assert engine.process(Page(id="a", text=text, published_at="2026-11-20T08:00:00Z")).status == "unique"
    assert engine.process(Page(id="b", text=text, published_at="2026-11-20T09:00:00Z")).status == "duplicate"


def test_batch_and_the_stream_cut_a_file_into_the_same_lines():
    """A stray CR (an old Mac line end, a CR inside a value) does not end a line for either: the
    same file is as many records to the stream as lines to batch."""
    data = b'{"id": "a", "text": "x"}\r\n{"id": "b",\r"text": "y"}\n\r\n{"id": "c", "text": "z"}\rjunk\n'
    as_file = [line.raw for line in read_lines(io.BytesIO(data), 1000)]
    as_fed = [line.raw for line in read_lines(split_lines(data), 1000)]
    assert as_file == as_fed and len(as_fed) == 3
    assert split_lines(b"") == [] and split_lines(b"a\nb") == [b"a", b"b"]


def _pages_with_an_oversize_line(folder: Path) -> tuple[Path, list[dict]]:
    corpus = generate_corpus(30, seed=4)
    pages = list(corpus.pages)
    huge = {"id": "huge", "text": "word " * 400_000}  # 2 MB: over the input topic's 1 MiB
    lines = (
        [orjson.dumps(p) for p in pages[:10]] + [orjson.dumps(huge)] + [orjson.dumps(p) for p in pages[10:]]
    )
    path = folder / "with-huge.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, pages


def test_produce_refuses_a_line_too_large_for_the_topic_and_sends_the_rest(tansu_broker, tmp_path):
    path, pages = _pages_with_an_oversize_line(tmp_path)
    env = {"STREAM_LSH_BROKER": tansu_broker.bootstrap, "STREAM_LSH_APP_ID": "first-hour-produce"}
    created = stream_lsh("topics", cwd=tmp_path, env=env)
    assert created.returncode == 0, created.stderr
    sent = stream_lsh("produce", str(path), cwd=tmp_path, env=env)
    assert sent.returncode == ExitCode.REJECTED, sent.stderr
    assert f"sent {len(pages)} records to pages" in sent.stderr
    assert "1 line(s) rejected: see rejects.jsonl" in sent.stderr
    (reject,) = [orjson.loads(line) for line in (tmp_path / "rejects.jsonl").read_bytes().splitlines()]
    assert reject["line"] == 11 and reject["code"] == "too_large" and reject["id"] == "huge"
    assert "2,000,0" in reject["reason"] and "at most" in reject["reason"]

    async def ids() -> list[str]:
        return [
            orjson.loads(value)["id"]
            async for _, value, _, _ in read_topic(tansu_broker.bootstrap, "pages", follow=False)
        ]

    assert sorted(asyncio.run(ids())) == sorted(p["id"] for p in pages)  # the lines after it went too


def test_run_keeps_its_dead_letters_and_refused_lines_and_quiet_is_quiet(tmp_path):
    path, pages = _pages_with_an_oversize_line(tmp_path)
    with path.open("ab") as handle:
        handle.write(b'{"id": "broken", "text": \n')  # not JSON: a dead letter
    done = stream_lsh(
        "run",
        "--feed",
        str(path),
        "--until-idle",
        "--quiet",
        "--dead-letters",
        "dead.jsonl",
        "-o",
        "out.jsonl",
        cwd=tmp_path,
        env={"STREAM_LSH_DATA_DIR": str(tmp_path / "data")},
    )
    assert done.returncode == ExitCode.REJECTED, done.stderr[-3000:]
    said = [line for line in done.stderr.splitlines() if line.startswith("[stream-lsh]")]
    assert len(said) == 1 and f"{len(pages)} pages decided" in said[0] and "1 line refused" in said[0], said
    assert done.stdout == ""
    (dead,) = [orjson.loads(line) for line in (tmp_path / "dead.jsonl").read_bytes().splitlines()]
    assert dead["reason"] == "invalid_json" or "JSON" in str(dead), dead
    (reject,) = [orjson.loads(line) for line in (tmp_path / "rejects.jsonl").read_bytes().splitlines()]
    assert reject["id"] == "huge" and reject["code"] == "too_large"
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == len(pages)


def _start_broker(*args: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """``stream-lsh broker``, as a user starts it; returns it and the address it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "stream_lsh", "broker", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    address = process.stdout.readline().strip()  # printed once the broker answers
    assert address.startswith("127.0.0.1:"), (
        address,
        process.stderr.read() if process.poll() is not None else "",
    )
    return process, address


def _stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return err


def test_the_broker_command_runs_until_ctrl_c_and_the_stream_commands_use_it(tmp_path):
    port = free_port()
    process, address = _start_broker("--port", str(port), cwd=tmp_path)
    try:
        assert address == f"127.0.0.1:{port}"
        busy = stream_lsh("broker", "--port", str(port), cwd=tmp_path)
        assert busy.returncode == ExitCode.USAGE and f"port {port} is in use" in busy.stderr
        created = stream_lsh("topics", "--broker", address, cwd=tmp_path)
        assert created.returncode == 0, created.stderr
        typo = stream_lsh("tail", "dedup-decision", "--no-follow", "--broker", address, cwd=tmp_path)
        assert typo.returncode == ExitCode.USAGE and len(typo.stderr.strip().splitlines()) == 1, typo.stderr
        assert "no topic 'dedup-decision'" in typo.stderr and "did you mean dedup-decisions?" in typo.stderr
    finally:
        said = _stop(process)
    assert "Tansu broker at" in said and "stopping the broker" in said
    assert not answers_metadata("127.0.0.1", port, timeout=1)
    refused = stream_lsh("broker", "--data-dir", str(tmp_path / "d"), cwd=tmp_path)
    assert refused.returncode == ExitCode.USAGE and "memory" in refused.stderr


def test_kafka_from_the_broker_command_keeps_its_data_and_kafkas_console_tools_work_against_it(tmp_path):
    """``broker --kind kafka --data-dir``: what Kafka's own console producer sent is there after a
    restart, read back by Kafka's console consumer (``fetch-kafka --tools`` fetched both)."""
    tools = fetch_tools()
    data = tmp_path / "kafka-data"
    kafka = (
        "--kind",
        "kafka",
        "--port",
        str(free_port()),
        "--data-dir",
        "kafka-data",
    )  # relative, as in the README

    def tool(main_class: str, address: str, *args: str, given: str = "") -> subprocess.CompletedProcess[str]:
        command = [java_binary(), "-cp", tools.classpath, main_class, "--bootstrap-server", address, *args]
        return subprocess.run(command, input=given, capture_output=True, text=True, timeout=120)

    process, address = _start_broker(*kafka, cwd=tmp_path)
    try:
        sent = tool(
            "org.apache.kafka.tools.ConsoleProducer", address, "--topic", "notes", given="one\ntwo\nthree\n"
        )
        assert sent.returncode == 0, sent.stderr[-2000:]
    finally:
        _stop(process)
    assert (data / "server.properties").exists()
    process, address = _start_broker(*kafka, cwd=tmp_path)
    try:
        consumer = "org.apache.kafka.tools.consumer.ConsoleConsumer"
        read = tool(
            consumer,
            address,
            "--topic",
            "notes",
            "--from-beginning",
            "--max-messages",
            "3",
            "--timeout-ms",
            "60000",
        )
    finally:
        _stop(process)
    assert read.stdout.split() == ["one", "two", "three"], read.stderr[-2000:]
