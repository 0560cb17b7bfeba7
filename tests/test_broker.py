"""The embedded broker against a real Tansu process: start, serve Kafka clients, stop, fail clearly."""

from __future__ import annotations

import socket

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from stream_lsh.stream.broker import BrokerError, EmbeddedBroker, free_port


def listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


async def test_a_started_broker_serves_kafka_clients():
    with EmbeddedBroker() as broker:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic("pages", num_partitions=4, replication_factor=1)])
        await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        for i in range(20):
            await producer.send_and_wait("pages", f"page {i}".encode(), key=f"p{i}".encode())
        await producer.stop()
        consumer = AIOKafkaConsumer("pages", bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        received: list[bytes] = []
        for _ in range(40):
            if len(received) == 20:
                break
            for messages in (await consumer.getmany(timeout_ms=250)).values():
                received.extend(m.value for m in messages)
        await consumer.stop()
        assert sorted(received) == sorted(f"page {i}".encode() for i in range(20))
        assert broker.url == f"kafka://127.0.0.1:{broker.port}"
        port = broker.port
    assert not listening("127.0.0.1", port)


def test_two_brokers_get_their_own_ports():
    with EmbeddedBroker() as first, EmbeddedBroker() as second:
        assert first.port != second.port and first.running and second.running


def test_kill_stops_the_process_at_once():
    broker = EmbeddedBroker().start()
    port = broker.port
    broker.kill()
    assert not broker.running and not listening("127.0.0.1", port)


def test_a_taken_port_or_a_bad_binary_fails_with_the_reason(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        with pytest.raises(BrokerError, match="did not start"):
            EmbeddedBroker(port=taken, startup_timeout=3).start()
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'no broker here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(BrokerError, match="no broker here"):
        EmbeddedBroker(binary=str(fake), port=free_port(), startup_timeout=3).start()


def test_bootstrap_of_a_stopped_broker_is_an_error():
    with pytest.raises(BrokerError, match="not running"):
        _ = EmbeddedBroker().bootstrap
