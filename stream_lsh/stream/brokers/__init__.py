"""Embedded brokers: real broker processes for tests and ``stream-lsh run``.

* :class:`TansuBroker`: Tansu, no Java, starts in milliseconds, memory only: the quick start.
* :class:`KafkaBroker`: Apache Kafka itself, single-node KRaft: what production runs.
"""

from __future__ import annotations

from .kafka import KafkaBroker, ListenerCertificate, SecureListener
from .kafka_dist import KAFKA_VERSION, fetch_kafka, find_kafka
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
    "find_kafka",
    "free_port",
]

BROKER_KINDS = ("tansu", "kafka")


def embedded_broker(kind: str = "tansu") -> EmbeddedBroker:
    """A broker of the given kind, not started yet."""
    if kind == "tansu":
        return TansuBroker()
    if kind == "kafka":
        return KafkaBroker()
    raise ValueError(f"unknown embedded broker {kind!r}: choose one of {', '.join(BROKER_KINDS)}")
