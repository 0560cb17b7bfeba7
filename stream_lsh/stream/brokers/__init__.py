"""Embedded brokers: real broker processes for tests and ``stream-lsh run``.

* :class:`TansuBroker`: Tansu, no Java, starts in milliseconds, memory only: the quick start.
* :class:`KafkaBroker`: Apache Kafka itself, single-node KRaft: what production runs.
"""

from __future__ import annotations

from .kafka import KafkaBroker, ListenerCertificate, SecureListener
from .kafka_dist import KAFKA_VERSION, fetch_kafka, fetch_tools, find_kafka, find_tools
from .process import BrokerProcessError, EmbeddedBroker, free_port
from .tansu import TansuBroker

__all__ = [
    "BROKER_KINDS",
    "KAFKA_VERSION",
    "BrokerProcessError",
    "EmbeddedBroker",
    "KafkaBroker",
    "ListenerCertificate",
    "SecureListener",
    "TansuBroker",
    "embedded_broker",
    "fetch_kafka",
    "fetch_tools",
    "find_kafka",
    "find_tools",
    "free_port",
]

BROKER_KINDS = ("tansu", "kafka")


def embedded_broker(
    kind: str = "tansu", *, port: int | None = None, data_dir: str | None = None
) -> EmbeddedBroker:
    """A broker of the given kind, not started yet: on ``port`` (a free one by default), Apache
    Kafka keeping its data in ``data_dir`` (a temporary directory by default; Tansu keeps its data
    in memory and takes none)."""
    if kind == "tansu":
        if data_dir is not None:
            raise ValueError("Tansu keeps its data in memory: a data directory is for the kafka broker")
        return TansuBroker(port=port)
    if kind == "kafka":
        return KafkaBroker(port=port, data_dir=data_dir)
    raise ValueError(f"unknown embedded broker {kind!r}: choose one of {', '.join(BROKER_KINDS)}")
