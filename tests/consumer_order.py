"""How a consumer interleaves the records of several input partitions: the order in which a
stream worker would meet a feed spread over partitions (tests and benchmarks of clock order).

Test-only: it models the consumer, it does not generate pages (:mod:`stream_lsh.synthetic` does).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any


def consumer_order(
    pages: Sequence[dict[str, Any]],
    partition_of: Callable[[dict[str, Any]], int],
    rng: random.Random,
    *,
    max_chunk: int,
    whole_first: bool = False,
) -> list[dict[str, Any]]:
    """The order in which a consumer of several input partitions may see ``pages``: each
    partition keeps its order, and chunks of 1..``max_chunk`` pages come from random partitions
    (with ``whole_first``, one random partition entirely before the others). For the tests and
    benchmarks of the stream's ordering."""
    queues: dict[int, list[dict[str, Any]]] = {}
    for page in pages:
        queues.setdefault(partition_of(page), []).append(page)
    order = queues.pop(rng.choice(sorted(queues))) if whole_first else []
    while queues:
        part = rng.choice(sorted(queues))
        n = rng.randint(1, max_chunk)
        order.extend(queues[part][:n])
        del queues[part][:n]
        if not queues[part]:
            del queues[part]
    return order
