"""Saving and loading a batch engine's state, so that ``dedup --state`` can continue a stream of
daily files where the previous run stopped.

One ``.npz`` file: the arrays of :func:`~stream_lsh.core.dedup.export_state` plus its JSON header
stored as bytes. No pickle: loading a state file never runs code from it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import orjson

from .core.dedup import Deduplicator, export_state, import_state

__all__ = ["load_state", "save_state"]


def save_state(dedup: Deduplicator, path: str | os.PathLike[str]) -> None:
    """Write the engine's state atomically (a crash mid-write leaves the old file intact)."""
    header, arrays = export_state(dedup)
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    with temporary.open("wb") as handle:
        np.savez(handle, header=np.frombuffer(orjson.dumps(header), dtype=np.uint8), **arrays)  # type: ignore[arg-type]
    os.replace(temporary, target)


def load_state(dedup: Deduplicator, path: str | os.PathLike[str]) -> None:
    """Load state saved by :func:`save_state` into an empty engine; refuses another scheme."""
    with np.load(Path(path), allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files if name != "header"}
        header = orjson.loads(data["header"].tobytes())
    import_state(dedup, header, arrays)
