"""Faust's consumer waits up to 1.5 s per fetch (hard-coded in faust/transport/drivers/aiokafka.py,
``fetch_max_wait_ms=1500``, with no setting to change it).

A broker answers a fetch as soon as data arrives, up to that wait; the embedded broker answers
only when the wait is over if nothing was there when the fetch came in. Every hop of the pipeline
then costs up to 1.5 s whenever a partition runs dry, which is most of the time at low load. So the
worker's consumer is built with a short wait: an idle worker polls more often (a fetch every few
milliseconds, cheap on loopback), and a record crosses a hop in milliseconds.
"""

from __future__ import annotations

from typing import Any

import faust.transport.drivers.aiokafka as faust_aiokafka

__all__ = ["set_fetch_max_wait"]

_ORIGINAL = faust_aiokafka.AIOKafkaConsumerThread._create_worker_consumer  # noqa: SLF001


def set_fetch_max_wait(milliseconds: int) -> None:
    """Make every Faust worker consumer built from now on wait at most ``milliseconds`` per fetch."""
    if milliseconds < 1:
        raise ValueError(f"fetch wait must be >= 1 ms, got {milliseconds}")

    def create_worker_consumer(self: Any, transport: Any) -> Any:
        consumer = _ORIGINAL(self, transport)
        consumer._fetch_max_wait_ms = milliseconds  # noqa: SLF001 - read when the consumer starts its fetcher
        return consumer

    faust_aiokafka.AIOKafkaConsumerThread._create_worker_consumer = create_worker_consumer  # noqa: SLF001
