"""The deciding step's ceiling: pages already signed, decided over a window that grows to a million.

    python benchmarks/bench_decide.py [--window 1000000] [--at 10000,100000,1000000] [--store disk]

What the stream's one decide partition would run, on one core: the batch engine's kernel
(:meth:`~stream_lsh.core.dedup.Deduplicator.decide_signed`: the window, verification, the decision
rule) in micro-batches of 256 pages, over the window on disk (``--store disk``, RocksDB) or in
memory. No text work: signatures are made up, so that a million pages take minutes, not hours.
Half the pages are new stories (a signature of random values, so their band keys scatter as real
stories' do), half are copies of one of the last 20,000 new stories, each copied at most 8 times,
with a fifth of their values changed (Jaccard ~0.67: found, verified, joined). Event times
advance 0.2 s per page, so a million pages span 56 hours and all stay in the default 72-hour
window.

At each size of ``--at`` the window is filled to that size, then ``--measure`` more pages are
timed; printed: pages/s, the longest micro-batch, RSS, and the store's disk use per page.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from stream_lsh.core.clock import EventTime
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.prepare import PreparedPage, SignedPage
from stream_lsh.stores import DiskIndex

BATCH = 256
COPIES = 8  # a story is copied at most this many times, as a wire story is by a handful of outlets
START = 1_767_225_600.0  # 2026-01-01, seconds


class MadeUpFeed:
    """Signed pages: new stories and copies of recent ones (see the module doc)."""

    def __init__(self, engine: Deduplicator, seed: int) -> None:
        self.engine = engine
        self.rng = np.random.default_rng(seed)
        self.stories: list[tuple[np.ndarray, int]] = []  # recent new stories, and their copies so far
        self.made = 0

    def batch(self, count: int) -> list[SignedPage]:
        width = self.engine.scheme.num_perm
        signatures = self.rng.integers(0, 2**32, size=(count, width), dtype=np.uint32)
        for row in range(count):
            if self.stories and self.rng.random() < 0.5:
                pick = int(self.rng.integers(len(self.stories)))
                original, copies = self.stories[pick]
                changed = self.rng.random(width) < 0.2
                signatures[row] = np.where(changed, signatures[row], original)
                if copies + 1 >= COPIES:
                    self.stories[pick] = self.stories[-1]
                    self.stories.pop()
                else:
                    self.stories[pick] = (original, copies + 1)
            else:
                self.stories.append((signatures[row], 0))
        del self.stories[: max(0, len(self.stories) - 20_000)]
        keys = self.engine.banding.band_keys(signatures)
        pages = []
        for row in range(count):
            seconds = START + 0.2 * self.made
            prepared = PreparedPage(
                id=f"p{self.made}",
                lang="en",
                clock_ms=int(seconds * 1000),
                time=EventTime(seconds),
                text="",
                content_hash=int(self.rng.integers(2**63)),
                body_hash=self.made,
            )
            pages.append(SignedPage(prepared, signatures[row], keys[row], None))
            self.made += 1
        return pages


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--at", default="10000,100000,1000000", help="window sizes to measure at")
    parser.add_argument("--measure", type=int, default=20_000, help="pages timed at each size")
    parser.add_argument("--store", choices=["disk", "memory"], default="disk")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "stream-lsh-bench-decide")
    args = parser.parse_args()
    sizes = sorted(int(n) for n in args.at.split(","))
    config = DedupConfig()
    shutil.rmtree(args.work, ignore_errors=True)
    if args.store == "disk":
        engine = Deduplicator(
            config,
            open_index=lambda scheme, banding: DiskIndex(
                args.work, scheme, banding, bucket_cap=config.bucket_cap, ttl=config.ttl
            ),
        )
    else:
        engine = Deduplicator(config)
    feed = MadeUpFeed(engine, args.seed)
    print(f"store: {args.store}; micro-batches of {BATCH}; {args.measure:,} pages timed at each size")
    print(f"{'window':>10} {'pages/s':>8} {'longest batch':>14} {'RSS':>9} {'disk/page':>10} {'dups':>6}")
    for size in sizes:
        while feed.made < size:
            engine.decide_signed(feed.batch(min(BATCH, size - feed.made)))
        timed = longest = 0.0
        duplicates = done = 0
        while done < args.measure:
            pages = feed.batch(BATCH)
            started = time.perf_counter()
            decisions = engine.decide_signed(pages)
            spent = time.perf_counter() - started
            timed += spent
            longest = max(longest, spent)
            duplicates += sum(d.status == "duplicate" for d in decisions)
            done += len(pages)
        disk = "-"
        if args.store == "disk":
            used = sum(f.stat().st_size for f in args.work.rglob("*") if f.is_file())
            disk = f"{used / len(engine.index):,.0f} B"
        print(
            f"{len(engine.index):>10,} {done / timed:>8,.0f} {longest * 1000:>11.0f} ms "
            f"{rss_mib():>5,.0f} MiB {disk:>10} {duplicates / done:>6.0%}",
            flush=True,
        )
    if args.store == "disk":
        index = engine.index
        assert isinstance(index, DiskIndex)
        index.close()
        started = time.perf_counter()
        reopened = DiskIndex(
            args.work, engine.scheme, engine.banding, bucket_cap=config.bucket_cap, ttl=config.ttl
        )
        print(
            f"opened again in {time.perf_counter() - started:.1f} s ({len(reopened):,} pages; the "
            f"buckets built from the entries), RSS {rss_mib():,.0f} MiB"
        )
        reopened.close()
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
