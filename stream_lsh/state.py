"""Saving and loading a batch engine's state, so that ``dedup`` can continue a stream of daily files
where the previous run stopped. Two forms:

* ``--state FILE``: one ``.npz`` file, the arrays of :func:`~stream_lsh.core.dedup.export_state`
  plus its JSON header stored as bytes, in which the spread of clusters
  (:class:`~stream_lsh.core.spread.SpreadTracker`), when given, travels as ``spread``. It is read
  whole at the start and written whole at the end: the window must fit in memory. No pickle:
  loading a state file never runs code from it.
* ``--state-dir DIR``: the window itself on disk (:class:`~stream_lsh.stores.DiskIndex`), written
  micro-batch by micro-batch as the engine decides, so memory stays bounded as the window grows.
  The learner, the file clock and the spread are kept beside it, written when a run ends (or is
  interrupted); a run killed outright leaves its pages indexed and a mark that says so.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from .core.config import DedupConfig
from .core.dedup import Deduplicator, export_state, import_state
from .core.spread import SpreadTracker
from .stores import DiskIndex

__all__ = ["DirectoryState", "load_state", "save_state"]


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


class DirectoryState:
    """An engine whose window lives in a directory (``dedup --state-dir``), and the rest of its
    state kept there (see the module doc).

    Args:
        path: the directory; made if missing. One made under another scheme or banding is refused.
        config: the engine's config.
        cache_bytes: RocksDB's block cache.
        spread: an empty tracker to load the spread saved there into, and save back (None: none).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: DedupConfig,
        *,
        cache_bytes: int,
        spread: SpreadTracker | None = None,
    ) -> None:
        self.path = Path(path)
        self.spread = spread
        store = functools.partial(
            DiskIndex,
            self.path,
            bucket_cap=config.bucket_cap,
            ttl=config.ttl,
            keep_shingles=config.verify == "jaccard",
            cache_bytes=cache_bytes,
        )
        self.engine = Deduplicator(config, open_index=store)
        assert isinstance(self.engine.index, DiskIndex)
        self.index: DiskIndex = self.engine.index
        #: the previous run over this directory was killed before it could save the learner, the
        #: file clock and the spread: its pages are indexed, but those are as the run before left them
        self.unfinished = self.index.read_state("run") == "running"

    def load(self) -> None:
        """Load the learner, the file clock and the spread kept here, then mark a run as going on."""
        engine, index = self.engine, self.index
        if (clock := index.read_state("file_clock")) is not None:
            engine.file_clock.load_state(clock)
        generation = index.read_state("learner_generation")
        if engine.learner is not None and generation is not None:
            sites = index.read_states(f"learner@{generation}/")
            engine.learner.load_parts(index.read_state("learner"), sites)
        if self.spread is not None and (spread := index.read_state("spread")) is not None:
            self.spread.load_state(spread)
        index.write_state([("run", "running")])

    def save(self) -> None:
        """Keep the learner, the file clock and the spread, and mark the run finished.

        The learner can be large, so its sites are written first, a chunk at a time, as a new
        generation of rows; one atomic write then makes that generation current, with the rest,
        and drops the one before. A save cut short leaves the previous generation current."""
        engine, index = self.engine, self.index
        before = index.read_state("learner_generation")
        generation = 0 if before is None else before + 1
        values: list[tuple[str, Any]] = [("file_clock", engine.file_clock.state())]
        if engine.learner is not None:
            learner = engine.learner
            index.write_parts(
                (f"learner@{generation}/{site}", saved) for site, saved in learner.site_states()
            )
            values += [("learner", learner.boilerplate_state()), ("learner_generation", generation)]
        if self.spread is not None:
            values.append(("spread", self.spread.state()))
        values.append(("run", "finished"))
        index.write_state(values, dropping=None if before is None else f"learner@{before}/")

    def close(self) -> None:
        self.index.close()
