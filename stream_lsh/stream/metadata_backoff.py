"""A failed metadata refresh waits before it answers, so a broker outage costs no spinning core.

aiokafka retries a failed metadata refresh at once. When an Apache Kafka broker shuts down
cleanly it first gives up the leadership of its partitions, so a producer with records for them
sees "no leader" and its sender loop (``Sender._sender_routine`` in aiokafka/producer/sender.py,
0.14) asks for a refresh and waits for it, then asks again. While no broker is listening each
refresh fails at once (connection refused), so that loop never waits: a worker with records in
flight when its only broker was stopped logged 5,000 "Unable connect to node" lines a second and
kept a core busy for the whole outage (104,000 lines in a 10 s outage). The consumer's fetcher
waits on refreshes the same way. The sender's own comment says it should "wait backoff time".

Here a failed refresh answers only after the client's ``retry_backoff_ms`` (100 ms by default),
so every loop that waits on one retries ten times a second. A refresh that succeeds is not delayed,
so a broker that comes back is seen as soon as before, within one backoff.

Use :func:`back_off_failed_metadata` once per process, before the clients are built.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.client import AIOKafkaClient

__all__ = ["back_off_failed_metadata"]

_ORIGINAL = AIOKafkaClient._metadata_update


async def _metadata_update(self: AIOKafkaClient, cluster_metadata: Any, topics: Any) -> bool:
    updated = bool(await _ORIGINAL(self, cluster_metadata, topics))
    if not updated:
        await asyncio.sleep(self._retry_backoff)
    return updated


def back_off_failed_metadata() -> None:
    """Make every aiokafka client of this process wait its retry backoff after a failed metadata
    refresh (clients built before the call too: the method is replaced on the class)."""
    AIOKafkaClient._metadata_update = _metadata_update
