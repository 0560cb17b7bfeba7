"""How a partition of each stage is built: one recipe for the stream's workers, the in-process
pipeline and anything that rebuilds a partition from its rows (a state machine built with other
arguments than the one that wrote the rows would restore it wrongly, e.g. drop its held pages)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.prepare import Preparer
from ..core.spread import AlertRules
from ..stores.disk_index import DEFAULT_CACHE_BYTES
from .decide import Decider
from .outbox import Stage
from .routing import Layout
from .signer import Signer

__all__ = ["stage_factories"]


def stage_factories(
    preparer: Preparer,
    layout: Layout,
    inputs: int | None,
    lateness_ms: int = 0,
    clock: Callable[[], float] = time.monotonic,
    alerts: AlertRules | None = None,
    windows: Callable[[int], Path] | None = None,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
) -> dict[str, Callable[[int], Any]]:
    """Partition number -> empty state machine, per stage. ``inputs``: the input partition count
    under clock order (watermarks, :mod:`.order`), None for arrival order; ``lateness_ms``: how far
    one input partition's record timestamps may go backwards; ``clock``: seconds, for when waits
    began (:mod:`.waits`); ``alerts``: the story-spread rules, None for no alerts; ``windows``: the
    directory of a decide partition's window (None: in memory), ``cache_bytes`` its block cache."""
    return {
        Stage.SITES: lambda p: Signer(
            preparer, layout, p, inputs=inputs, lateness_ms=lateness_ms, clock=clock
        ),
        Stage.DECIDE: lambda p: Decider(
            preparer.config,
            sources=None if inputs is None else layout.sites,
            alerts=alerts,
            clock=clock,
            window=None if windows is None else windows(p),
            cache_bytes=cache_bytes,
        ),
    }
