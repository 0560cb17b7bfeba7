"""Brokers that come and go: a worker started before its broker. (A wait that runs out:
tests/test_guard.py.)"""

from __future__ import annotations

import time
from types import SimpleNamespace

import orjson
from stream_helpers import DecisionReader, batch_reference, stream_settings

from stream_lsh.stream.brokers import TansuBroker, free_port
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames
from stream_lsh.synthetic import generate_corpus


async def test_a_worker_started_before_its_broker_waits_for_it_then_works(tmp_path):
    port = free_port("127.0.0.1")
    settings = stream_settings(SimpleNamespace(bootstrap=f"127.0.0.1:{port}"), tmp_path)  # not there yet
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
