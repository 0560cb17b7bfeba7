"""Batch's memory and speed against the window's size, with the window in memory and on disk.

    python benchmarks/bench_window.py [--pages 10000,100000] [--seed 3] [--stores memory,disk]

For each size, generated pages (``stream-lsh generate``, cached in ``--work``) are decided by
``stream-lsh dedup`` in a child process, once with the window in memory and once with
``--state-dir`` (RocksDB). Every page stays in the window (the generated feed spans less than the
default 72 hours), so the window holds every page decided. Reported per run: pages/s (the run's
own summary), the child's peak RSS, and for the disk store the directory's size per page; then,
per store, how much peak RSS grows per page from one size to the next. The disk store's RSS
includes RocksDB's block cache (``--state-cache-mb``), which fills up to its bound as the window
grows, and the boilerplate learner, which grows until each site's table is full.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "stream_lsh"]


def pages_file(work: Path, pages: int, seed: int) -> Path:
    path = work / f"pages-{pages}-{seed}.jsonl"
    if not path.exists():
        labels = work / f"labels-{pages}-{seed}.json"
        subprocess.run(
            [
                *CLI,
                "generate",
                "--pages",
                str(pages),
                "--seed",
                str(seed),
                "-o",
                str(path),
                "--labels",
                str(labels),
            ],
            check=True,
            capture_output=True,
        )
    return path


def run(pages: Path, state_dir: Path | None, cache_mb: int) -> tuple[float, float, float]:
    """pages/s, peak RSS in MiB, wall seconds of one ``dedup`` run."""
    command = [*CLI, "dedup", str(pages), "-o", os.devnull, "--no-progress"]
    if state_dir is not None:
        shutil.rmtree(state_dir, ignore_errors=True)
        command += ["--state-dir", str(state_dir), "--state-cache-mb", str(cache_mb)]
    started = time.perf_counter()
    child = subprocess.Popen(command, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    assert child.stderr is not None
    summary = child.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"dedup failed: {summary}")
    rate = float(re.search(r"\| ([\d,]+) pages/s", summary).group(1).replace(",", ""))  # type: ignore[union-attr]
    return rate, usage.ru_maxrss / 1024, wall


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", default="10000,100000", help="window sizes, comma-separated")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--stores", default="memory,disk")
    parser.add_argument("--state-cache-mb", type=int, default=256, help="the disk store's block cache")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "stream-lsh-bench-window")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.pages.split(","))
    stores = args.stores.split(",")
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"{'store':<7} {'pages':>9} {'pages/s':>8} {'peak RSS':>10} {'disk/page':>10} {'wall':>8}")
    peaks: dict[str, list[tuple[int, float]]] = {store: [] for store in stores}
    for size in sizes:
        pages = pages_file(args.work, size, args.seed)
        for store in stores:
            state_dir = args.work / "state" if store == "disk" else None
            rate, peak, wall = run(pages, state_dir, args.state_cache_mb)
            disk = "-"
            if state_dir is not None:
                used = sum(f.stat().st_size for f in state_dir.rglob("*") if f.is_file())
                disk = f"{used / size:,.0f} B"
                shutil.rmtree(state_dir, ignore_errors=True)
            peaks[store].append((size, peak))
            print(
                f"{store:<7} {size:>9,} {rate:>8,.0f} {peak:>7,.0f} MiB {disk:>10} {wall:>7.1f}s", flush=True
            )
    for store, points in peaks.items():
        for (small, low), (large, high) in zip(points, points[1:]):
            growth = (high - low) * 1024 / (large - small)
            print(f"{store}: peak RSS grows {growth:.2f} KiB per page from {small:,} to {large:,} pages")


if __name__ == "__main__":
    main()
