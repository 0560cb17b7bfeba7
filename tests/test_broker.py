"""The embedded brokers as real processes: Tansu and Apache Kafka start, serve Kafka clients, stop,
and fail clearly; Kafka keeps its data across a restart and can serve TLS and SASL/SCRAM clients."""

from __future__ import annotations

import socket
import tempfile

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError
from conftest import TEST_BROKERS

from stream_lsh.stream.brokers import (
    KAFKA_VERSION,
    BrokerProcessError,
    KafkaBroker,
    SecureListener,
    TansuBroker,
    embedded_broker,
    fetch_kafka,
    find_kafka,
    free_port,
)


def listening(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=0.5).close()
        return True
    except OSError:
        return False


async def round_trip(bootstrap: str, topic: str, count: int = 20, **security) -> list[bytes]:
    """Send ``count`` records to a new topic and read them back."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **security)
    await producer.start()
    for i in range(count):
        await producer.send_and_wait(topic, f"page {i}".encode(), key=f"p{i}".encode())
    await producer.stop()
    return await read_all(bootstrap, topic, count, **security)


async def read_all(bootstrap: str, topic: str, count: int, **security) -> list[bytes]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", **security)
    await consumer.start()
    received: list[bytes] = []
    for _ in range(80):
        if len(received) >= count:
            break
        for messages in (await consumer.getmany(timeout_ms=250)).values():
            received.extend(m.value for m in messages)
    await consumer.stop()
    return sorted(received)


@pytest.mark.parametrize("kind", TEST_BROKERS)
async def test_a_started_broker_serves_kafka_clients(kind):
    with embedded_broker(kind) as broker:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await admin.start()
        await admin.create_topics([NewTopic("pages", num_partitions=4, replication_factor=1)])
        await admin.close()
        assert await round_trip(broker.bootstrap, "pages") == sorted(f"page {i}".encode() for i in range(20))
        assert broker.url == f"kafka://127.0.0.1:{broker.port}"
        assert broker.startup_s is not None and broker.startup_s > 0
        port = broker.port
    assert not listening("127.0.0.1", port)


def test_two_brokers_get_their_own_ports():
    with TansuBroker() as first, TansuBroker() as second:
        assert first.port != second.port and first.running and second.running


def test_kill_stops_the_process_at_once():
    broker = TansuBroker().start()
    port = broker.port
    broker.kill()
    assert not broker.running and not listening("127.0.0.1", port)
    broker.cleanup()


def test_a_broker_leaves_no_log_unless_it_started_and_none_after_cleanup(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _ = TansuBroker()  # built, never started
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(BrokerProcessError):
        _ = TansuBroker().bootstrap
    fake = tmp_path / "bin" / "tansu"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'no broker here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(BrokerProcessError, match="no broker here"):  # the log's tail is in the error
        TansuBroker(binary=str(fake), port=free_port(), startup_timeout=3).start()
    with TansuBroker() as broker:
        assert [p.name.startswith("stream-lsh-tansu-") for p in tmp_path.glob("*.log")] == [True]
    assert not broker.running
    assert list(tmp_path.glob("*.log")) == []


def test_a_taken_port_or_a_bad_binary_fails_with_the_reason(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        with pytest.raises(BrokerProcessError, match="did not start"):
            TansuBroker(port=taken, startup_timeout=3).start()
    fake = tmp_path / "tansu"
    fake.write_text("#!/bin/sh\necho 'no broker here' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(BrokerProcessError, match="no broker here"):
        TansuBroker(binary=str(fake), port=free_port(), startup_timeout=3).start()


def test_bootstrap_of_a_stopped_broker_is_an_error():
    with pytest.raises(BrokerProcessError, match="not running"):
        _ = TansuBroker().bootstrap


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="tansu, kafka"):
        embedded_broker("redpanda")


# Apache Kafka

needs_kafka = pytest.mark.skipif(
    "kafka" not in TEST_BROKERS, reason="STREAM_LSH_TEST_BROKERS leaves Apache Kafka out"
)


@needs_kafka
def test_the_fetched_kafka_is_the_pinned_version_in_the_cache_outside_the_repo():
    distribution = fetch_kafka()  # a lookup once fetched
    assert distribution == find_kafka() and distribution.version == KAFKA_VERSION
    assert (distribution.libs / f"kafka_2.13-{KAFKA_VERSION}.jar").exists()
    assert (distribution.libs / f"kafka-clients-{KAFKA_VERSION}.jar").exists()


def test_fetching_without_maven_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("STREAM_LSH_KAFKA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn, no java
    with pytest.raises(BrokerProcessError, match="Maven"):
        fetch_kafka()
    assert find_kafka() is None and not (tmp_path / "cache" / f"kafka-{KAFKA_VERSION}" / "libs").exists()


@needs_kafka
async def test_kafka_keeps_its_topics_and_port_across_a_restart(tmp_path):
    broker = KafkaBroker(data_dir=tmp_path / "kafka")
    with broker:
        await round_trip(broker.bootstrap, "kept", 5)
        port = broker.port
        broker.stop()
        assert not listening("127.0.0.1", port)
        broker.start()
        assert broker.port == port
        assert await read_all(broker.bootstrap, "kept", 5) == sorted(f"page {i}".encode() for i in range(5))


@needs_kafka
async def test_kafka_serves_tls_with_scram_beside_plaintext():
    secure = SecureListener(tls=True, scram_users={"alice": "s3cret"})
    with KafkaBroker(secure=secure) as broker:
        auth = dict(
            security_protocol="SASL_SSL",
            ssl_context=broker.client_ssl_context(),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password="s3cret",
        )
        assert len(await round_trip(broker.secure_bootstrap(), "secured", 3, **auth)) == 3
        assert len(await read_all(broker.bootstrap, "secured", 3)) == 3  # the same cluster, plaintext
        wrong = dict(auth, sasl_mechanism="SCRAM-SHA-256", sasl_plain_password="wrong")
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.secure_bootstrap(), request_timeout_ms=5000, **wrong
        )
        with pytest.raises(KafkaError):
            await producer.start()
        await producer.stop()


def test_a_secure_listener_needs_something_to_secure():
    with pytest.raises(ValueError, match="TLS, SCRAM users, or both"):
        SecureListener(tls=False)
    assert SecureListener(tls=False, scram_users={"a": "b"}).protocol == "SASL_PLAINTEXT"
    assert SecureListener().protocol == "SSL"
