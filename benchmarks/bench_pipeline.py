"""The stream's stages in one process, without Kafka: CPU per page by stage, and the garbage collector.

    python benchmarks/bench_pipeline.py [--pages 10000] [--batch 200] [--seed 11]

The stages are the pure state machines the workers run (``LocalPipeline`` wires them with queues),
fed micro-batches of generated HTML pages as the input agent would. What this measures is the
floor of a worker's cost per page: everything a worker does except fetching, producing and
journaling. Run twice in fresh processes, once with CPython's collector thresholds and once with
those the workers and ``dedup`` set (``stream_lsh.gc_policy.tune_gc``); for each: pages/s of the
batch engine on the same pages (for scale), pages/s of the stages and microseconds per page by
stage, and collections per generation with their total and longest pause.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import subprocess
import sys
import time
from collections import Counter

import orjson

from stream_lsh.batch import RejectSink, run_batch
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.gc_policy import tune_gc
from stream_lsh.pipeline.local import LocalPipeline
from stream_lsh.pipeline.routing import Layout
from stream_lsh.settings import Settings
from stream_lsh.synthetic import generate_corpus


def pages(count: int, seed: int) -> list[bytes]:
    return [orjson.dumps(page) for page in generate_corpus(count, seed=seed).pages]


def batch_rate(lines: list[bytes]) -> float:
    engine = Deduplicator(Settings().dedup_config())
    started = time.perf_counter()
    run_batch(lines, engine, out=io.BytesIO(), rejects=RejectSink(io.BytesIO))
    return len(lines) / (time.perf_counter() - started)


class GcWatch:
    """Count and time collections per generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self._started = 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses[info["generation"]].append(time.perf_counter() - self._started)

    def summary(self) -> dict[int, tuple[int, float, float]]:
        return {generation: (len(p), sum(p), max(p, default=0.0)) for generation, p in self.pauses.items()}


def pipeline_run(lines: list[bytes], batch: int) -> dict:
    """One timed pass of the pages through the stages, after a warm-up that loads the tables."""
    config = Settings().dedup_config()
    warm = LocalPipeline(config, Layout())
    warm.feed(lines[:5])
    warm.run()
    stage_seconds: Counter[str] = Counter()
    handle = LocalPipeline._handle

    def timed(self: LocalPipeline, key: tuple[str, int], records: list) -> None:
        started = time.perf_counter()
        handle(self, key, records)
        stage_seconds[key[0]] += time.perf_counter() - started

    LocalPipeline._handle = timed  # type: ignore[method-assign]
    pipeline = LocalPipeline(config, Layout())
    watch = GcWatch()
    started = time.perf_counter()
    for start in range(0, len(lines), batch):
        began = time.perf_counter()
        pipeline.feed(lines[start : start + batch])
        stage_seconds["ingest"] += time.perf_counter() - began
        pipeline.run()
    elapsed = time.perf_counter() - started
    assert len(pipeline.outputs.decisions) == len(lines), "every page gets a decision"
    return {
        "rate": len(lines) / elapsed,
        "stages": {k: v / len(lines) * 1e6 for k, v in stage_seconds.items()},
        "gc": watch.summary(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=200, help="pages per input micro-batch")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--child", choices=["default", "tuned"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    lines = pages(args.pages, args.seed)
    if args.child:
        if args.child == "tuned":
            tune_gc()
        rate = batch_rate(lines)  # first, so that no pipeline state is on the heap
        print(json.dumps(dict(pipeline_run(lines, args.batch), batch=rate)))
        return
    print(
        f"# {args.pages:,} generated pages, input batches of {args.batch}, 8 partitions per stage; one core"
    )
    for mode in ("default", "tuned"):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--pages",
                str(args.pages),
                "--batch",
                str(args.batch),
                "--seed",
                str(args.seed),
                "--child",
                mode,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        result = json.loads(out.stdout)
        stages = ", ".join(f"{k} {v:.0f}" for k, v in result["stages"].items())
        gcs = "; ".join(
            f"gen{g}: {n} x, {total:.2f} s, longest {longest * 1000:.0f} ms"
            for g, (n, total, longest) in result["gc"].items()
        )
        label = "CPython's gc thresholds" if mode == "default" else "the worker's gc (tune_gc)"
        print(
            f"{label}:\n    batch engine {result['batch']:,.0f} pages/s; "
            f"stages {result['rate']:,.0f} pages/s, "
            f"us/page: {stages}\n    collections in the stages: {gcs}"
        )


if __name__ == "__main__":
    main()
