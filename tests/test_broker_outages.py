"""Brokers that come and go: a worker started before its broker, and a wait that has a bound."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import orjson
from stream_helpers import DecisionReader, batch_reference, stream_settings

from stream_lsh.stream.brokers import TansuBroker, free_port
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames
from stream_lsh.synthetic import generate_corpus


class _NotYet:
    """Where a broker will be."""

    def __init__(self, port: int) -> None:
        self.bootstrap = f"127.0.0.1:{port}"


async def test_a_worker_started_before_its_broker_waits_for_it_then_works(tmp_path):
    port = free_port("127.0.0.1")
    settings = stream_settings(_NotYet(port), tmp_path, log_level="warning")
    pool = Workers(settings, settings.stream.broker, 1)
    try:
        time.sleep(4.0)  # several attempts, with backoff
        pool.check()  # still running: not an exit into a crash loop
        log = pool.logs[0].read_text()
        assert log.count("trying again in") >= 3, log[-2000:]
        assert "cannot reach a Kafka broker at 127.0.0.1:" in log
        with TansuBroker(port=port) as broker:
            names = TopicNames.from_settings(settings)
            pages = generate_corpus(20, seed=4).pages
            async with DecisionReader(
                broker.bootstrap, names.decisions, settings.stream.input_partitions
            ) as reader:
                deadline = time.monotonic() + 60
                while not await _topic_exists(broker.bootstrap, names.input):  # the worker creates it
                    assert time.monotonic() < deadline, pool.logs[0].read_text()[-2000:]
                    pool.check()
                    time.sleep(0.5)
                await feed_lines(broker.bootstrap, names.input, [orjson.dumps(p) for p in pages])
                decided = [await reader.until(p["id"], timeout=60, check=pool.check) for p in pages]
            assert decided == batch_reference(pages)
            assert "the broker answered at attempt" in pool.logs[0].read_text()
    finally:
        pool.stop()


async def _topic_exists(bootstrap: str, topic: str) -> bool:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return topic in await admin.list_topics()
    finally:
        await admin.close()


def test_the_wait_for_a_broker_is_bounded_by_the_setting(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAM_LSH_") or "_TEST_" in k}
    env.update(
        STREAM_LSH_BROKER=f"127.0.0.1:{free_port('127.0.0.1')}",
        STREAM_LSH_BROKER_WAIT_S="3",
        STREAM_LSH_DATA_DIR=str(tmp_path / "data"),
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "stream_lsh", "worker"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "gave up after" in done.stderr and "STREAM_LSH_BROKER_WAIT_S=3" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 20
