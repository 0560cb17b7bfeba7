"""The stream end to end: a real broker process (Tansu, embedded), real worker processes, real topics.

Each test uses its own app id (so its own topics and consumer group) on one broker per module.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from stream_helpers import batch_alerts, batch_reference, read_alerts, run_page_by_page, stream_settings

from stream_lsh.evaluation import pair_scores
from stream_lsh.settings import Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.client import read_topic
from stream_lsh.stream.runner import run_stream
from stream_lsh.stream.topics import topic_specs
from stream_lsh.synthetic import Shapes, generate_corpus


def with_cards(pages: list[dict], after: tuple[int, ...]) -> list[dict]:
    """The pages, with an aggregator's card after each page of ``after``: that page's title and a
    deck of the aggregator's own, which no page holds (core/headline.py)."""
    out = []
    for i, page in enumerate(pages):
        out.append(page)
        if i in after:
            out.append(
                {
                    "id": f"card-{page['id']}",
                    "title": page["title"],
                    "text": f"{page['title']}\nRead the full report from our partner site.",
                    "url": f"https://cards.example/b/{i}",
                    "published_at": page["published_at"],
                }
            )
    return out


@pytest.mark.parametrize("workers", [1, 2])
async def test_pages_fed_one_at_a_time_get_exactly_the_batch_decisions(broker, tmp_path, workers):
    """With teasers, quoting pages, digests and feed cards, so some decisions are made by
    containment, some by the fuller-member check (``refused_by``), some by a short page's opening
    and some by a card's headline."""
    corpus = generate_corpus(80, seed=8, teasers=0.1, quotes=0.1, short_stories=0.2, digests=0.05).pages
    pages = with_cards(corpus, (5, 30, 60))
    settings = stream_settings(broker, tmp_path)
    expected = batch_reference(pages)
    assert any(d["match"] == "containment" for d in expected)
    assert any("refused_by" in d for d in expected)
    assert any(d["match"] == "opening" for d in expected)
    assert any(d["match"] == "headline" for d in expected)
    assert await run_page_by_page(settings, pages, workers) == expected


async def test_pages_fed_at_once_get_one_decision_each_and_the_batch_clusters(broker, tmp_path):
    pages = generate_corpus(400, seed=8, teasers=0.06, quotes=0.06, short_stories=0.1).pages
    settings = stream_settings(broker, tmp_path)
    progress = await run_stream(
        settings, workers=1, feed=[orjson.dumps(p) for p in pages], until_idle=True, timeout=120
    )
    assert sorted(progress.decisions) == sorted(p["id"] for p in pages)
    assert max(progress.decided.values()) == 1
    truth = {d["id"]: d["cluster_id"] or d["id"] for d in batch_reference(pages)}
    got = {d["id"]: d["cluster_id"] or d["id"] for d in progress.decisions.values()}
    # Probes are applied in (event time, id) order whatever the interleaving of input partitions
    # (watermarks); what is left is the boilerplate learner's shared flags, which reach other site
    # partitions at interleaving-dependent times (in-process: F1 >= 0.995 over 400 interleavings)
    assert pair_scores(truth, got).f1 >= 0.99


async def test_the_unique_pages_topic_carries_what_batch_keeps_to_index(broker, tmp_path):
    """Teasers sent before their story, fed at once: the unique-pages topic carries the input of
    every page batch keeps (unique, or the fuller page a story after its teaser is), each once."""
    pages = generate_corpus(300, seed=9, teasers=0.1, shapes=Shapes.parse(["early-teasers"])).pages
    settings = stream_settings(broker, tmp_path, boilerplate=False)
    kept = [
        d["id"]
        for d in batch_reference(pages, boilerplate=False)
        if d["status"] == "unique" or d.get("fuller")
    ]
    assert any(d.get("fuller") for d in batch_reference(pages, boilerplate=False))
    await run_stream(settings, workers=1, feed=[orjson.dumps(p) for p in pages], until_idle=True, timeout=120)
    sent: dict[str, bytes] = {}
    async for key, value, _, _ in read_topic(broker.bootstrap, settings.stream.unique_topic, follow=False):
        assert key is not None and value is not None
        sent[key.decode()] = value
    assert sorted(sent) == sorted(kept)
    assert all(orjson.loads(sent[page["id"]]) == page for page in pages if page["id"] in sent)


@pytest.mark.parametrize("workers", [1, 2])
async def test_pages_fed_at_once_raise_exactly_the_batch_alerts(broker, tmp_path, workers):
    """Stories spreading to 3-36 outlets, fed at once over 4 input partitions, some pages twice:
    the alerts on the alerts topic are those ``dedup --alerts`` writes, record for record. The decide
    partition feeds the spread in clock order, as batch does. Without the boilerplate learner, whose
    shared flags reach other site partitions at interleaving-dependent times and so may change
    a decision (and with it an alert)."""
    corpus = generate_corpus(500, seed=7, spreading=3).pages
    pages = corpus + random.Random(workers).sample(corpus, 40)  # 40 delivered again: no change
    settings = stream_settings(broker, tmp_path, boilerplate=False)
    expected = batch_alerts(pages, settings.dedup_config(), settings.engine.alert_rules())
    assert {record["level"] for record in expected.values()} == {1, 2, 3}
    await ensure_topics(broker.bootstrap, topic_specs(settings))  # before the reader would make them
    run = asyncio.create_task(
        run_stream(settings, workers=workers, feed=[orjson.dumps(p) for p in pages], until_idle=False)
    )
    try:
        sent = await read_alerts(broker.bootstrap, settings.stream.alerts_topic, expected)
    finally:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
    assert [key for key, records in sent.items() if len(records) > 1] == [], "an alert changed"
    assert {key: orjson.loads(next(iter(records))) for key, records in sent.items()} == expected


async def test_bad_input_is_dead_lettered_and_the_worker_keeps_going(broker, tmp_path):
    story = " ".join(
        ["The council said that the plan would go ahead in the spring despite the protests."] * 8
    )
    lines = [
        b"{not json",
        b'{"id": "u", "text": "caf\xe9 au lait"}',
        orjson.dumps({"text": "no id"}),
        orjson.dumps({"id": "no-body"}),
        orjson.dumps({"id": "blank", "text": "   "}),
        orjson.dumps(
            {"id": "html-only", "html": "<html><script>var x = 1;</script><style>p{}</style></html>"}
        ),
        # 900 KB: the input topic takes it, its record to a site partition (raw and text) would be
        # over STREAM_LSH_MAX_MESSAGE_BYTES
        orjson.dumps({"id": "huge", "text": "word " * 180_000}),
        orjson.dumps({"id": "good", "text": story}),
        # Confluent Schema Registry's wire format: a zero byte, schema id 7, then the JSON
        b"\x00\x00\x00\x00\x07" + orjson.dumps({"id": "framed", "text": story + " Updated."}),
    ]
    settings = stream_settings(broker, tmp_path)
    progress = await run_stream(settings, workers=1, feed=lines, until_idle=True, timeout=120)
    statuses = {page_id: d["status"] for page_id, d in progress.decisions.items()}
    assert statuses == {
        "good": "unique",
        "framed": "duplicate",
        "html-only": "no_content",
        "blank": "no_content",
    }
    assert len(progress.decisions) + progress.dead_letters == len(lines)  # nothing vanished
    assert progress.dead_letters == 5


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_sigterm_stops_run_with_its_workers_and_embedded_broker(tmp_path):
    """A supervisor's SIGTERM must not leave the broker and workers of `stream-lsh run` behind."""
    env = dict(os.environ, STREAM_LSH_DATA_DIR=str(tmp_path / "data"))
    run = subprocess.Popen(
        [sys.executable, "-m", "stream_lsh", "run"],  # its status lines say when the workers are up
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first_status = run.stderr.readline()  # printed once the workers are up
        assert first_status.startswith("[stream-lsh]"), first_status
        started = _descendants(run.pid)
        assert len(started) >= 2, "an embedded broker and a worker"
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=40) == 0
        deadline = time.monotonic() + 10
        while started & _descendants(1) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = {pid for pid in started if Path(f"/proc/{pid}").exists()}
        assert not left, f"still running after `run` exited: {left}"
    finally:
        if run.poll() is None:
            run.kill()


async def test_run_with_the_embedded_broker_starts_again_in_the_same_directory(tmp_path):
    """The embedded broker is memory-only: a second run must not trip over the first run's state."""
    pages = generate_corpus(30, seed=3).pages
    settings = Settings.load(environ={}, data_dir=str(tmp_path / "data"))
    for _ in range(2):
        progress = await run_stream(
            settings, workers=1, feed=[orjson.dumps(p) for p in pages], until_idle=True, timeout=120
        )
        assert sorted(progress.decisions) == sorted(p["id"] for p in pages)


def test_run_writes_the_alerts_of_the_fed_pages_once_they_are_all_out(tmp_path):
    """`run --until-idle --alerts` waits for the workers' reports that every alert is out, so the
    file holds them all: those of `dedup --alerts` (without the learner, as above)."""
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(
        b"".join(orjson.dumps(p) + b"\n" for p in generate_corpus(400, seed=7, spreading=2).pages)
    )
    env = dict(
        os.environ,
        STREAM_LSH_DATA_DIR=str(tmp_path / "data"),
        STREAM_LSH_BOILERPLATE="false",
        STREAM_LSH_STATUS_INTERVAL_S="1",
    )

    def stream_lsh(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "stream_lsh", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr.decode()

    stream_lsh("run", "--feed", str(pages), "--until-idle", "--alerts", "stream.jsonl", "--quiet")
    stream_lsh("dedup", str(pages), "-o", "decisions.jsonl", "--alerts", "batch.jsonl")

    def alerts(name: str) -> dict[str, dict]:
        return {r["key"]: r for r in map(orjson.loads, (tmp_path / name).read_bytes().splitlines())}

    expected = alerts("batch.jsonl")
    assert {r["level"] for r in expected.values()} == {1, 2, 3}
    assert alerts("stream.jsonl") == expected
