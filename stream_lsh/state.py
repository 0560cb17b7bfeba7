"""Saving and loading a batch engine's state, so that ``dedup --state`` can continue a stream of
daily files where the previous run stopped.

One ``.npz`` file: the arrays of :func:`~stream_lsh.core.dedup.export_state` plus its JSON header
stored as bytes, in which the spread of clusters (:class:`~stream_lsh.core.spread.SpreadTracker`),
when given, travels as ``spread``. No pickle: loading a state file never runs code from it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson

from .core.dedup import Deduplicator, export_state, import_state
from .core.spread import SpreadTracker

__all__ = ["load_state", "save_state"]


def save_state(
    dedup: Deduplicator, path: str | os.PathLike[str], *, spread: SpreadTracker | None = None
) -> None:
    """Write the engine's state, and the spread of its clusters if given, atomically (a crash
    mid-write leaves the old file intact)."""
    header, arrays = export_state(dedup)
    if spread is not None:
        header["spread"] = spread.state()
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    with temporary.open("wb") as handle:
        np.savez(handle, header=np.frombuffer(orjson.dumps(header), dtype=np.uint8), **arrays)  # type: ignore[arg-type]
    os.replace(temporary, target)


def load_state(
    dedup: Deduplicator, path: str | os.PathLike[str], *, spread: SpreadTracker | None = None
) -> bool:
    """Load state saved by :func:`save_state` into an empty engine; refuses another scheme. With
    ``spread``, an empty tracker, the spread saved with the state is loaded into it too; returns
    whether the file held one (state saved without it: the tracker starts empty)."""
    with np.load(Path(path), allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files if name != "header"}
        header = orjson.loads(data["header"].tobytes())
    import_state(dedup, header, arrays)
    if spread is None or header.get("spread") is None:
        return False
    spread.load_state(header["spread"])
    return True
