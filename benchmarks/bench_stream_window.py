"""The stream as its window grows: memory, disk, speed, latency and event-loop pauses per window size.

    python benchmarks/bench_stream_window.py [--window 10000,100000] [--burst 2000]
        [--rate 50] [--rate-pages 1000] [--fill-chunk 2000] [--embedded tansu|kafka] [--json out.json]

One worker process on an embedded broker, fed generated pages (``generate_corpus``; none expires:
``STREAM_LSH_TTL_HOURS=0``). Tansu, the default, keeps its topics in memory and slows as they grow
(5.8 GB and one core's worth of CPU at ~230,000 pages, when it starved the machine): beyond
~100,000 pages use ``--embedded kafka``. Pages are rendered as they are sent (``iter_pages``):
holding half a million took this process ~14 GB.
For each size of ``--window``, in order:

* **fill**: pages are sent in bursts of ``--fill-chunk``, each once the one before is decided,
  until that many have been decided since the start (a backlog of the whole fill would sit in the
  worker's fetch buffers, and RSS would count it);
* **RSS and disk**: the worker's resident memory (``VmRSS``, and its peak ``VmHWM``, Linux /proc)
  and the size of its data directory (the decide partition's window, the site partitions'
  journals, Faust's tables), per page decided;
* **saturated**: ``--burst`` more pages sent at once; pages/s = pages / (last decision - first send);
* **steady**: ``--rate-pages`` pages at ``--rate`` pages/s, one record per send, as a crawler
  feeds; p50/p99/max of each page's decision time after its send;
* **pauses**: from the worker's ``/metrics`` (``stream_lsh_event_loop_pause_seconds``) before and
  after the burst and the steady feed, for each: how many times the event loop ran nothing else for
  50 ms or more, and the longest pause as the histogram's bucket bound ("<=250": 100-250 ms). A
  burst is taken in large micro-batches, each one synchronous step; a steady feed in small ones.

The last lines compare the largest size with the smallest: RSS and disk grown per page between
them, and the saturated rate and p99 at the largest as a share of the smallest's.

Then, at the largest size, for each of ``--recover`` (default both), the worker is stopped and its
disk damaged, and a new worker started on the same data directory is timed until it decides again:

* **corrupt**: every RocksDB table file (``*.sst``) of the worker is cut to half its length, as a
  disk fault or a copy cut short leaves it (the store is moved aside and rebuilt: docs/operating.md);
* **lost**: the worker's data directory is deleted, as with a lost disk or a new machine.

Right after the start, ``--probes`` exact copies of the first pages fed are sent under new ids.
The row gives the seconds from the new worker's start to the first and to the last probe's
decision, and the probes' statuses: each copy is a duplicate if the window was rebuilt whole, but
for copies of pages with no content (``no_content``) and of pages too short to sign (a video page
of three words of chrome: ``unique``, in batch too).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import sys
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson
from bench_stream import Arrivals, Cpu, app_settings, at_load, on_embedded_broker
from prometheus_client.parser import text_string_to_metric_families

from stream_lsh.core.clock import FileClock
from stream_lsh.core.dedup import DedupConfig
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import free_port
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import iter_pages

LONG_PAUSE_S = 0.05  # the bound: no pause of the event loop over 50 ms


@dataclass
class Row:
    window: int  # pages decided before the row's measurements
    rss_mib: float
    peak_mib: float
    disk_mb: float
    saturated: float  # pages/s
    p50_ms: float
    p99_ms: float
    max_ms: float
    burst_pauses: str  # "count of LONG_PAUSE_S or more / longest bucket", during the burst
    steady_pauses: str  # ... during the steady feed
    missing: int


@dataclass
class Recovery:
    how: str  # "corrupt": the worker's table files cut short; "lost": its data directory deleted
    window: int  # pages in the window when the worker was stopped
    first_s: float  # from the new worker's start to its first probe's decision
    all_s: float  # ... to its last probe's
    probes: int  # copies of pages in the window, new ids
    statuses: dict[str, int]  # how many probes were decided so, by status (most first)


def damage(root: Path, how: str) -> None:
    """Damage a stopped worker's data directory: ``corrupt`` cuts every RocksDB table file to half
    its length; ``lost`` deletes the directory."""
    if how == "lost":
        shutil.rmtree(root)
        return
    for table in root.rglob("*.sst"):
        with open(table, "r+b") as file:
            file.truncate(table.stat().st_size // 2)


def memory_mib(pid: int) -> tuple[float, float]:
    """A process's resident and peak resident memory, MiB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def disk_mb(root: Path) -> float:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 1e6


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, labels) -> value, of a Prometheus text exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


class Pauses:
    """The worker's event-loop pause histogram at one moment, from its /metrics."""

    def __init__(self, port: int) -> None:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            scraped = samples(response.read().decode())
        self.buckets = {
            float(dict(labels)["le"]): value
            for (name, labels), value in scraped.items()
            if name == "stream_lsh_event_loop_pause_seconds_bucket"
        }

    def since(self, earlier: Pauses) -> str:
        """'N/<=B': pauses of LONG_PAUSE_S or more since ``earlier``, and the bound (ms) of the
        smallest bucket that holds every pause since then."""
        grown = {le: value - earlier.buckets.get(le, 0.0) for le, value in self.buckets.items()}
        long = grown[float("inf")] - max((v for le, v in grown.items() if le < LONG_PAUSE_S), default=0.0)
        bound = min((le for le, v in grown.items() if v == grown[float("inf")]), default=0.0)
        longest = (
            "0" if not grown[float("inf")] else ">10000" if bound == float("inf") else f"<={bound * 1000:g}"
        )
        return f"{long:.0f}/{longest}"


async def run(
    args: argparse.Namespace, bootstrap: str, broker_pid: int, data: Path
) -> tuple[list[Row], list[Recovery]]:
    sizes = sorted(args.window)
    total = sizes[-1] + len(sizes) * (args.burst + args.rate_pages) + 1
    corpus = ((str(p["id"]).encode(), orjson.dumps(p)) for p in iter_pages(total, seed=args.seed))

    first: list[dict] = []  # the first pages fed, copied to a recovering worker (--recover)

    def take(count: int) -> list[tuple[bytes, bytes]]:
        """The next ``count`` pages of the corpus, rendered as they are sent (none is held after
        but the first ``--probes``)."""
        taken = list(itertools.islice(corpus, count))
        first.extend(orjson.loads(line) for _, line in taken[: max(0, args.probes - len(first))])
        return taken

    settings = app_settings(
        f"window{uuid.uuid4().hex[:6]}",
        bootstrap,
        data,
        args.partitions,
        web_port=args.web_port,
        ttl_hours=0.0,  # nothing expires: the window holds every page fed
    )
    names = TopicNames.from_settings(settings)
    await ensure_topics(bootstrap, topic_specs(settings))
    reader = await Arrivals(bootstrap, names.decisions).start()
    clock = FileClock(max_future=DedupConfig().max_future)
    pool = Workers(settings, bootstrap, 1)
    rows: list[Row] = []
    recoveries: list[Recovery] = []
    try:
        fed = 0
        for size in sizes:
            began = time.perf_counter()
            for low in range(fed, size, args.fill_chunk):
                fill = take(min(size, low + args.fill_chunk) - low)
                await feed_lines(bootstrap, names.input, [line for _, line in fill], clock=clock)
                await reader.wait([key for key, _ in fill], pool.check)
            fed = size
            print(f"  filled to {size:,} in {time.perf_counter() - began:.0f} s", file=sys.stderr)
            rss, peak = memory_mib(pool.processes[0].pid)
            disk = disk_mb(Path(settings.stream.data_dir))
            before_burst = Pauses(args.web_port)
            burst = take(args.burst)
            fed += args.burst
            sent = time.perf_counter()
            await feed_lines(bootstrap, names.input, [line for _, line in burst], clock=clock)
            await reader.wait([key for key, _ in burst], pool.check)
            firsts = sorted(reader.times[key][0] for key, _ in burst if key in reader.times)
            saturated = len(firsts) / (firsts[-1] - sent)
            after_burst = Pauses(args.web_port)
            steady = take(args.rate_pages)
            fed += args.rate_pages
            cpu = Cpu([pool.processes[0].pid], broker_pid)
            load = await at_load(
                f"{args.rate:g}/s", args.rate, steady, reader, pool, cpu, bootstrap, names.input, clock
            )
            after_steady = Pauses(args.web_port)
            row = Row(
                size,
                rss,
                peak,
                disk,
                saturated,
                load.p50_ms,
                load.p99_ms,
                load.max_ms,
                after_burst.since(before_burst),
                after_steady.since(after_burst),
                load.missing + len(burst) - len(firsts),
            )
            print(f"  {asdict(row)}", file=sys.stderr)
            rows.append(row)
        window = sizes[-1] + len(sizes) * (args.burst + args.rate_pages)
        for how in args.recover:
            pool.stop()
            damage(Path(settings.stream.data_dir) / "worker-0", how)
            probes = [
                (
                    f"probe-{how}-{page['id']}".encode(),
                    orjson.dumps({**page, "id": f"probe-{how}-{page['id']}"}),
                )
                for page in first
            ]
            started = time.perf_counter()
            pool = Workers(settings, bootstrap, 1)
            await feed_lines(bootstrap, names.input, [line for _, line in probes], clock=clock)
            await reader.wait([key for key, _ in probes], pool.check, stall_s=args.recovery_stall_s)
            decided = sorted(reader.times[key][0] for key, _ in probes if key in reader.times)
            statuses = Counter(
                orjson.loads(reader.values[key])["status"] for key, _ in probes if key in reader.values
            )
            recovery = Recovery(
                how,
                window,
                decided[0] - started if decided else float("nan"),
                decided[-1] - started if decided else float("nan"),
                len(probes),
                dict(statuses.most_common()),
            )
            print(f"  {asdict(recovery)}", file=sys.stderr)
            recoveries.append(recovery)
    finally:
        pool.stop()
        await reader.stop()
    return rows, recoveries


def report(rows: list[Row], rate: float) -> dict:
    print(
        f"\n{'window':>9s} {'RSS MiB':>8s} {'peak MiB':>8s} {'disk/page':>9s} {'pages/s':>8s} "
        f"{'p50 ms':>7s} {'p99 ms':>7s} {'max ms':>7s} {'missing':>7s} {'pauses >=50 ms/longest':>23s} "
        "(burst; steady)"
    )
    for r in rows:
        print(
            f"{r.window:9,d} {r.rss_mib:8.0f} {r.peak_mib:8.0f} {1e6 * r.disk_mb / r.window:7,.0f} B "
            f"{r.saturated:8,.0f} {r.p50_ms:7.0f} {r.p99_ms:7.0f} {r.max_ms:7.0f} {r.missing:7d} "
            f"{r.burst_pauses:>11s}; {r.steady_pauses:<11s}"
        )
    print(f"(latency at {rate:g} pages/s; pause bounds in ms)")
    if len(rows) < 2:
        return {}
    first, last = rows[0], rows[-1]
    added = last.window - first.window
    growth = {
        "rss_kib_per_page": 1024 * (last.rss_mib - first.rss_mib) / added,
        "disk_bytes_per_page": 1e6 * (last.disk_mb - first.disk_mb) / added,
        "saturated_ratio": last.saturated / first.saturated,
        "p99_ratio": last.p99_ms / first.p99_ms,
    }
    print(
        f"\nfrom {first.window:,} to {last.window:,} pages: RSS grew {growth['rss_kib_per_page']:.2f} KiB "
        f"and disk {growth['disk_bytes_per_page']:,.0f} B per page; at {last.window:,}, the saturated rate "
        f"is {growth['saturated_ratio']:.2f}x and p99 {growth['p99_ratio']:.2f}x those at {first.window:,}"
    )
    return growth


def report_recoveries(recoveries: list[Recovery]) -> None:
    if not recoveries:
        return
    print(
        f"\n{'damage':8s} {'window':>9s} {'first decision s':>16s} {'all probes s':>12s} "
        f"{'probes duplicate':>16s}"
    )
    for r in recoveries:
        counted = ", ".join(f"{status} {count}" for status, count in r.statuses.items())
        print(
            f"{r.how:8s} {r.window:9,d} {r.first_s:16.1f} {r.all_s:12.1f} "
            f"{r.statuses.get('duplicate', 0):9d} of {r.probes:,d}  ({counted})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sizes = lambda text: [int(float(x)) for x in text.split(",") if x.strip()]  # noqa: E731
    parser.add_argument("--window", type=sizes, default=[10_000, 100_000], help="window sizes, pages")
    parser.add_argument("--burst", type=int, default=2000, help="pages sent at once at each size")
    parser.add_argument("--rate", type=float, default=50.0, help="the steady feed's pages/s")
    parser.add_argument("--rate-pages", type=int, default=1000, help="pages of the steady feed at each size")
    parser.add_argument("--fill-chunk", type=int, default=2000, help="pages a burst while filling")
    parser.add_argument("--partitions", type=int, default=8, help="partitions of every topic")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--embedded", choices=["tansu", "kafka"], default="tansu")
    parser.add_argument(
        "--recover",
        type=lambda text: [x for x in text.split(",") if x.strip() and x != "none"],
        default=["corrupt", "lost"],
        help="damage to recover from at the largest size, in order: corrupt,lost (or none)",
    )
    parser.add_argument("--probes", type=int, default=200, help="copies sent to a recovering worker")
    parser.add_argument(
        "--recovery-stall-s", type=float, default=600.0, help="give up on a recovery silent this long"
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    args.web_port = free_port("127.0.0.1")
    print(
        f"# {os.cpu_count()} CPUs shared by the broker, the worker and this feeder/reader; "
        f"Python {platform.python_version()}; load average at start {os.getloadavg()[0]:.2f}; "
        f"{args.partitions} partitions; burst {args.burst:,} pages, then {args.rate_pages:,} "
        f"at {args.rate:g}/s",
        flush=True,
    )
    rows, recoveries = on_embedded_broker(
        args.embedded, "bench-window-", lambda broker, data: run(args, broker.bootstrap, broker.pid, data)
    )
    growth = report(rows, args.rate)
    report_recoveries(recoveries)
    if args.json:
        document = {
            "args": vars(args),
            "rows": [asdict(r) for r in rows],
            "recoveries": [asdict(r) for r in recoveries],
            **growth,
        }
        args.json.write_text(json.dumps(document, indent=2, default=str))


if __name__ == "__main__":
    main()
