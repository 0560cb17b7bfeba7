"""/ready and /live: readiness through a real recovery, and the liveness rule of AgentWatch."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
from stream_helpers import DecisionReader, batch_reference, stream_settings
from test_metrics import samples

from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import TansuBroker, free_port
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.health import AgentWatch, LoopPauses
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_idle_agent_is_live_however_long_it_waits():
    clock = Clock()
    watch = AgentWatch(60, clock)
    with watch.batch("stage-decide"):
        clock.now += 1
    clock.now += 3600
    assert watch.stuck({"stage-decide": False}) == []


def test_an_agent_with_records_waiting_and_no_progress_is_stuck_after_the_bound():
    clock = Clock()
    watch = AgentWatch(60, clock)
    with watch.batch("stage-decide"):
        pass
    clock.now += 59
    assert watch.stuck({"stage-decide": True}) == []
    clock.now += 2
    assert watch.stuck({"stage-decide": True}) == [
        "stage-decide has taken nothing for 61 s while records wait for it"
    ]
    assert watch.stuck({"stage-decide": False}) == []


def test_an_agent_inside_one_batch_past_the_bound_is_stuck_even_with_nothing_waiting():
    clock = Clock()
    watch = AgentWatch(60, clock)
    with watch.batch("ingest-pages"):
        clock.now += 30
        assert watch.stuck({}) == []
        clock.now += 31
        assert watch.stuck({}) == ["ingest-pages has been handling one batch for 61 s"]
    assert watch.stuck({"ingest-pages": True}) == []  # it just made progress


async def test_the_loop_watch_measures_how_long_a_blocking_call_held_the_loop():
    """A callback that blocks the loop for 80 ms shows as a pause of about that long; the 10 ms
    wake-ups between are no pause."""
    seen: list[float] = []
    watch = LoopPauses(seen.append)
    task = asyncio.create_task(watch.run())
    await asyncio.sleep(0.05)
    time.sleep(0.08)  # a synchronous call on the loop
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 0.06 <= watch.longest_s < 1.0
    assert max(seen) == watch.longest_s
    assert all(pause >= 0.005 for pause in seen)


def test_time_not_consuming_does_not_count():
    """A rebalance or a recovery stops every agent; the bound starts again when consuming resumes."""
    clock = Clock()
    watch = AgentWatch(60, clock)
    with watch.batch("stage-sites"):
        pass
    clock.now += 300  # recovering
    watch.resumed()
    clock.now += 10
    assert watch.stuck({"stage-sites": True}) == []
    with pytest.raises(ValueError):
        AgentWatch(0)


def _status(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, orjson.loads(error.read())


async def _poll_ready(port: int, pool: Workers, timeout: float) -> list[tuple[float, int, dict]]:
    """/ready, every 20 ms from the moment the web server answers, until it says ready."""
    seen: list[tuple[float, int, dict]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pool.check()
        try:
            status, body = await asyncio.to_thread(_status, f"http://127.0.0.1:{port}/ready")
        except OSError:  # not listening yet
            await asyncio.sleep(0.02)
            continue
        seen.append((time.monotonic(), status, body))
        if status == 200:
            return seen
        await asyncio.sleep(0.02)
    raise AssertionError(f"/ready never said ready in {timeout} s; last answers: {seen[-3:]}")


async def test_ready_is_false_during_recovery_and_true_after_it(broker, tmp_path):
    """A worker that lost its disk restores its stage partitions from the changelogs. /ready
    answers 503 until that recovery is over and 200 after it, and the state is back then: pages
    fed after the first 200 are decided as batch decides them after the earlier pages."""
    pages = generate_corpus(400, seed=29).pages
    before, after = pages[:300], pages[300:]
    port = free_port("127.0.0.1")
    # a journal row per batch and no snapshot: every row is a changelog record to replay. A burst
    # from one producer reaches the broker's partitions in any order, and a partition caught up at
    # one fetch can get an earlier-stamped record after others were released (a late page, applied
    # out of batch's order: operating.md, "What you can rely on"); 2 s of lateness holds them back
    settings = stream_settings(
        broker, tmp_path, web_port=port, batch_size=16, boilerplate=False, lateness_s=2.0
    )
    names = TopicNames.from_settings(settings)
    partitions = settings.stream.input_partitions
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pool = Workers(settings, settings.stream.broker, 1)
    try:
        first = await _poll_ready(port, pool, timeout=90)
        assert all(status == 503 and body["reasons"] for _, status, body in first[:-1])
        served = {
            path: await asyncio.to_thread(_status_only, f"http://127.0.0.1:{port}{path}") for path in PATHS
        }
        assert served == PATHS, served  # only what the README documents
        await _decide(settings, names, before, pool)
    finally:
        pool.stop()
    shutil.rmtree(Path(settings.stream.data_dir) / "worker-0")  # the disk is lost

    pool = Workers(settings, settings.stream.broker, 1)
    try:
        seen = await _poll_ready(port, pool, timeout=90)
        scraped = samples(await asyncio.to_thread(_text, f"http://127.0.0.1:{port}/metrics"))
        records = await _decide(settings, names, after, pool)
        deciding = samples(await asyncio.to_thread(_text, f"http://127.0.0.1:{port}/metrics"))
    finally:
        pool.stop()
    # the loop watch runs in the worker: a micro-batch of 16 pages' text work holds the loop 5 ms or more
    assert deciding[("stream_lsh_event_loop_longest_pause_seconds", ())] >= 0.005
    assert deciding[("stream_lsh_event_loop_pause_seconds_count", ())] >= 1
    not_ready = [body["reasons"] for _, status, body in seen if status == 503]
    assert not_ready, "the worker was ready at once, before any recovery"
    assert any(reason.startswith("recovering state") for reasons in not_ready for reason in reasons), (
        not_ready
    )
    assert scraped[("stream_lsh_recovery_expected_records", ())] > 0  # there was something to replay
    assert scraped[("stream_lsh_recovering", ())] == 0
    assert scraped[("stream_lsh_ready", ())] == 1
    latest = {record["id"]: record for record in records}
    assert [latest[page["id"]] for page in after] == batch_reference(pages, boilerplate=False)[300:]
    assert partitions == scraped[("stream_lsh_assigned_partitions", (("topic", names.input),))]


async def _decide(settings, names, pages: list[dict], pool: Workers) -> list[dict]:
    """Feed pages and wait for their decisions; returns the decisions topic's records."""
    await feed_lines(settings.stream.broker, names.input, [orjson.dumps(p) for p in pages])
    async with DecisionReader(
        settings.stream.broker, names.decisions, settings.stream.input_partitions
    ) as reader:
        for page in pages:
            await reader.until(page["id"], timeout=90, check=pool.check)
    return reader.records


#: The worker's web pages, and what each answers: the documented ones, and Faust's own, which are off.
PATHS = {
    "/": 200,
    "/metrics": 200,
    "/ready": 200,
    "/live": 200,
    "/router/": 404,
    "/table/": 404,
    "/graph/": 404,
    "/stats/": 404,
}


def _status_only(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


async def test_live_fails_while_a_hung_broker_holds_a_batch_and_recovers_after(tmp_path):
    """The broker is frozen (SIGSTOP) while pages are in flight: the agents' sends hang, /live
    answers 503 once one batch has taken longer than STREAM_LSH_STUCK_AFTER_S, and 200 again
    after the broker is thawed (SIGCONT). The worker lives throughout, and every page gets
    batch's decision."""
    pages = generate_corpus(500, seed=31).pages
    with TansuBroker() as broker:
        port = free_port("127.0.0.1")
        settings = stream_settings(
            broker, tmp_path, web_port=port, boilerplate=False, stuck_after_s=2, send_timeout_s=120
        )
        names = TopicNames.from_settings(settings)
        await ensure_topics(broker.bootstrap, topic_specs(settings))
        pool = Workers(settings, broker.bootstrap, 1)
        try:
            await _poll_ready(port, pool, timeout=90)
            async with DecisionReader(
                broker.bootstrap, names.decisions, settings.stream.input_partitions
            ) as reader:
                # paced, so that pages are still arriving, and in every stage, when the broker
                # freezes: fed at once, a fast worker decides them all before the first decision
                # is read, and a worker with nothing left holds no batch to be stuck on
                feeding = asyncio.create_task(
                    feed_lines(broker.bootstrap, names.input, [orjson.dumps(p) for p in pages], rate=100)
                )
                while not reader.records:
                    await reader.drain(0.05)
                assert not feeding.done(), "every page was fed before the first decision was read"
                os.kill(broker.pid, signal.SIGSTOP)
                try:
                    stuck = await _live_until(port, pool, 503, timeout=30)
                finally:
                    os.kill(broker.pid, signal.SIGCONT)
                await feeding
                await _live_until(port, pool, 200, timeout=120)
                for page in pages:
                    await reader.until(page["id"], timeout=120, check=pool.check)
            pool.check()
        finally:
            pool.stop()
    assert any("handling one batch" in reason for reason in stuck["reasons"]), stuck
    latest = {record["id"]: record for record in reader.records}
    differing = {
        want["id"]: {
            field: (latest[want["id"]].get(field), value)
            for field, value in want.items()
            if latest[want["id"]].get(field) != value
        }
        for want in batch_reference(pages, boilerplate=False)
    }
    differing = {page_id: fields for page_id, fields in differing.items() if fields}
    assert not differing, f"{len(differing)} records differ from batch's (stream, batch): {differing}"


async def _live_until(port: int, pool: Workers, wanted: int, timeout: float) -> dict:
    """Poll /live until it answers ``wanted``; returns that answer's body."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pool.check()
        status, body = await asyncio.to_thread(_status, f"http://127.0.0.1:{port}/live")
        if status == wanted:
            return body
        await asyncio.sleep(0.2)
    raise AssertionError(f"/live did not answer {wanted} within {timeout} s")
