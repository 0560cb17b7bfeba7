"""Faust's consumer has two hard-coded waits that cost the stream seconds, and no setting for either.

**The fetch wait**, 1.5 s per fetch (``fetch_max_wait_ms=1500``, faust/transport/drivers/aiokafka.py).

A broker answers a fetch as soon as data arrives, up to that wait; the embedded broker answers
only when the wait is over if nothing was there when the fetch came in. Every hop of the pipeline
then costs up to 1.5 s whenever a partition runs dry, which is most of the time at low load. So the
worker's consumer is built with a short wait: an idle worker polls more often (a fetch every few
milliseconds, cheap on loopback), and a record crosses a hop in milliseconds.

**The drain wait**, 1 s: Faust's fetch loop calls ``getmany(timeout=1.0)``
(faust/transport/consumer.py, ``_drain_messages``). When every partition that has data is paused
because its stream buffer is full (a backlog), that call waits the whole second although the
buffers drain within milliseconds: the stream benchmark saw 0.6-0.9 s stalls in every backlog,
in a bare forwarding agent too. The wait is capped at the fetch wait (at least 20 ms).
"""

from __future__ import annotations

from typing import Any

import faust.transport.consumer as faust_consumer
import faust.transport.drivers.aiokafka as faust_aiokafka

__all__ = ["set_fetch_max_wait"]

_ORIGINAL = faust_aiokafka.AIOKafkaConsumerThread._create_worker_consumer
_ORIGINAL_GETMANY = faust_consumer.Consumer.getmany


def set_fetch_max_wait(milliseconds: int) -> None:
    """Make every Faust worker consumer built from now on wait at most ``milliseconds`` per fetch,
    and its drain loop at most ``max(milliseconds, 20)`` per call."""
    if milliseconds < 1:
        raise ValueError(f"fetch wait must be >= 1 ms, got {milliseconds}")

    def create_worker_consumer(self: Any, transport: Any) -> Any:
        consumer = _ORIGINAL(self, transport)
        consumer._fetch_max_wait_ms = milliseconds
        return consumer

    faust_aiokafka.AIOKafkaConsumerThread._create_worker_consumer = create_worker_consumer  # type: ignore[method-assign]
    cap = max(milliseconds, 20) / 1000.0

    def getmany(self: Any, timeout: float) -> Any:
        return _ORIGINAL_GETMANY(self, timeout=min(timeout, cap))

    faust_consumer.Consumer.getmany = getmany  # type: ignore[method-assign]
