"""Stream benchmark: pages/s end to end and decision latency, 1 and 2 workers, beside a bare Faust agent.

    python benchmarks/bench_stream.py [--pages 3000] [--latency-pages 3000] [--loads 0.25,0.5]
        [--rates 200,400] [--workers 1,2] [--partitions 8] [--scrape-every 1] [--json out.json] [--quick]

One embedded broker (Tansu) for the whole run; every configuration gets a fresh app id, topics and
data directory. Pages are generated (``generate_corpus``); every configuration gets the same pages.

* Baseline: ``forward_worker.py``, a bare Faust agent (the stream's settings, raw serializers, same
  fetch wait) forwarding each page unchanged to an output topic; one worker process.
* Saturation: the workers are started and decide one warm-up page (start-up = spawn to its output);
  then ``--pages`` pages (``--baseline-pages`` for the baseline) are sent as fast as the producer
  takes them, and msg/s = pages / (last output - first send): the rate at which running workers
  clear a burst. (Timing from the first output of a preloaded topic would flatter event-time order,
  which holds decisions back until every partition has spoken.) "max gap" is the longest pause
  between arrivals (a rebalance shows there).
* Latency: with the workers still running, ``--latency-pages`` new pages per load are fed at a fixed
  rate (open loop, ``feed_lines(rate=...)``): each ``--loads`` fraction of that configuration's
  saturation rate, then each absolute ``--rates``. Latency = arrival of the output at this
  process's reader (a group-less consumer, 10 ms fetch wait) - when the producer accepted the page.
* Every page must get exactly one output: missing and duplicate counts are reported.
* ``--scrape-every S``: the stream's workers serve /metrics and this process scrapes each of them
  every S seconds throughout, as Prometheus would (it scrapes every 15 s by default); the scrapes'
  count, mean time and size are reported. With the same command run at a version without metrics,
  it measures what the metrics cost.
* The broker, the workers and this feeder/reader share the machine's cores: "cores used" is the CPU
  time of each, and of every other process on the machine (Linux /proc), over the saturation drain
  or over the feed of one load. Anything but ~0 under "others" means the numbers are disturbed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiokafka
import faust
import numpy as np
import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from stream_lsh.core.clock import FileClock
from stream_lsh.core.dedup import DedupConfig
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.settings import Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import EmbeddedBroker, embedded_broker, free_port
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, TopicSpec, topic_specs
from stream_lsh.synthetic import generate_corpus

T = TypeVar("T")
STALL_S = 60.0  # stop waiting for outputs after this long without a new one
BARE = "bare forward"


@dataclass
class Load:
    label: str
    offered: float
    achieved: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    missing: int
    cpu: str
    per_page: str = "-"


@dataclass
class Result:
    config: str
    workers: int
    startup_s: float
    rate: float
    max_gap_s: float
    missing: int
    cpu: str
    duplicates: int = 0
    loads: list[Load] = field(default_factory=list)
    per_page: str = "-"


class Arrivals:
    """Reads a topic from the start without a group; records when each key arrived (every time)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=10,
        )
        self.topic = topic
        self.times: dict[bytes, list[float]] = {}
        self.values: dict[bytes, bytes] = {}  # each key's last record
        self.task: asyncio.Task | None = None

    async def start(self) -> Arrivals:
        await self.consumer.start()
        await self.consumer._client.force_metadata_update()
        partitions = sorted(self.consumer.partitions_for_topic(self.topic) or ())
        self.consumer.assign([TopicPartition(self.topic, p) for p in partitions])
        self.task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=100)
            now = time.perf_counter()
            for messages in batches.values():
                for message in messages:
                    self.times.setdefault(message.key, []).append(now)
                    self.values[message.key] = message.value

    async def wait(self, keys: list[bytes], check, need: int | None = None, stall_s: float = STALL_S) -> None:
        """Until ``need`` (default: all) keys arrived or nothing came for ``stall_s``; ``check``
        raises if a worker died."""
        seen, last_change = -1, time.monotonic()
        while True:
            done = sum(key in self.times for key in keys)
            if done >= (need or len(keys)):
                return
            if done != seen:
                seen, last_change = done, time.monotonic()
            elif time.monotonic() - last_change > stall_s:
                print(f"  ! {len(keys) - done} outputs never arrived", file=sys.stderr)
                return
            if self.task.done():
                self.task.result()
            check()
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.consumer.stop()


class Scraper:
    """Scrapes the workers' /metrics every ``every`` seconds, as Prometheus would, and keeps count."""

    def __init__(self, ports: list[int], every: float) -> None:
        self.ports, self.every = ports, every
        self.times: list[float] = []
        self.sizes: list[int] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            for port in self.ports:
                began = time.perf_counter()
                with contextlib.suppress(OSError):
                    body = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics")
                    self.times.append(time.perf_counter() - began)
                    self.sizes.append(len(body))

    async def stop(self) -> str:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        if not self.times:
            return "no scrape answered"
        return (
            f"{len(self.times)} scrapes, {1000 * float(np.mean(self.times)):.1f} ms and "
            f"{float(np.mean(self.sizes)) / 1024:.1f} KiB each on average"
        )


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


class Traffic:
    """Messages written to the stream's internal and changelog topics (end offsets), so that a load's
    messages per page can be reported: the count that sets a worker's per-page cost under a steady feed.
    Tansu under-reports end offsets by up to a record batch, which is noise at these counts."""

    def __init__(self, bootstrap: str, internal: list[str], changelogs: list[str]) -> None:
        self.bootstrap, self.internal, self.changelogs = bootstrap, internal, changelogs
        self.topics = internal + changelogs
        self.last: dict[str, int] = {}

    async def totals(self) -> dict[str, int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False)
        await consumer.start()
        try:
            await consumer._client.force_metadata_update()
            partitions = [
                TopicPartition(t, p) for t in self.topics for p in consumer.partitions_for_topic(t) or ()
            ]
            ends = await consumer.end_offsets(partitions)
        finally:
            await consumer.stop()
        return {topic: sum(o for tp, o in ends.items() if tp.topic == topic) for topic in self.topics}

    async def per_page(self, pages: int) -> str:
        """'internal/changelog' messages per page since the last call."""
        now = await self.totals()
        delta = {t: now[t] - self.last.get(t, 0) for t in self.topics}
        self.last = now
        internal = sum(delta[t] for t in self.internal)
        changelog = sum(delta[t] for t in self.changelogs)
        return f"{internal / pages:.1f}/{changelog / pages:.1f}"


class ForwardWorker:
    """The baseline worker process (the check/stop contract of runner.Workers)."""

    def __init__(self, bootstrap: str, app_id: str, source: str, sink: str, log: Path, fetch_wait_ms: int):
        self.log = log
        script = str(Path(__file__).resolve().with_name("forward_worker.py"))
        command = [sys.executable, script, bootstrap, app_id, source, sink, str(fetch_wait_ms)]
        with open(log, "ab") as out:  # run in the benchmark's data directory: Faust makes <app>-data there
            self.processes = [subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=log.parent)]

    def check(self) -> None:
        if self.processes[0].poll() is not None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])
            raise RuntimeError(f"baseline worker exited with {self.processes[0].returncode}:\n{tail}")

    def stop(self, timeout: float = 20.0) -> None:
        process = self.processes[0]
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Cpu:
    """CPU time (Linux /proc) of the workers, the broker, this process and everything else on the machine,
    as cores used over a window."""

    def __init__(self, workers: list[int], broker: int) -> None:
        self.groups = (workers, [broker])
        self.start = self.sample()

    def sample(self) -> list[float]:
        tick = os.sysconf("SC_CLK_TCK")
        used = []
        for pids in self.groups:
            total = 0.0
            for pid in pids:
                with contextlib.suppress(OSError):
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    total += (int(fields[11]) + int(fields[12])) / tick
            used.append(total)
        own = os.times()
        used.append(own.user + own.system)
        jiffies = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
        busy = (sum(jiffies) - jiffies[3] - jiffies[4]) / tick  # all but idle and iowait
        return [*used, busy - sum(used), time.perf_counter()]

    def cores(self) -> str:
        """'workers/broker/bench/others' cores used since the last call; starts the next window."""
        now, before = self.sample(), self.start
        self.start, wall = now, now[-1] - before[-1]
        return "/".join(f"{max(0.0, b - a) / wall:.2f}" for a, b in zip(before[:-1], now[:-1]))


async def measure(
    name: str,
    workers: int,
    start,
    source: str,
    sink: str,
    corpus: list[tuple[bytes, bytes]],
    preload: int,
    args: argparse.Namespace,
    broker: EmbeddedBroker,
    traffic: Traffic | None = None,
) -> Result:
    """Saturation from a burst sent to running workers, then latency at each load, on one configuration."""
    bootstrap = broker.bootstrap
    reader = await Arrivals(bootstrap, sink).start()
    pool = None
    scraper = None
    clock = FileClock(max_future=DedupConfig().max_future)  # one file, fed in pieces
    try:
        (warm_key, warm_line), burst = corpus[0], corpus[1:preload]
        spawned = time.perf_counter()
        pool = start()
        if args.scrape_every and args.web_port and name != BARE:
            scraper = Scraper([args.web_port + i for i in range(workers)], args.scrape_every)
        await feed_lines(bootstrap, source, [warm_line], clock=clock)
        await reader.wait([warm_key], pool.check)
        startup = reader.times[warm_key][0] - spawned
        cpu = Cpu([p.pid for p in pool.processes], broker.pid)
        keys = [key for key, _ in burst]
        sent = time.perf_counter()
        await feed_lines(bootstrap, source, [line for _, line in burst], clock=clock)
        await reader.wait(keys, pool.check)
        firsts = sorted(reader.times[key][0] for key in keys if key in reader.times)
        rate = len(firsts) / (firsts[-1] - sent) if firsts else float("nan")
        gaps = np.diff([sent, *firsts])
        result = Result(
            name,
            workers,
            startup,
            rate,
            float(np.max(gaps, initial=0.0)),
            len(keys) - len(firsts),
            cpu.cores(),
        )
        if traffic is not None:
            result.per_page = await traffic.per_page(len(keys))
        print(f"  {name}: start-up {result.startup_s:.1f} s, {rate:,.0f} msg/s saturated", file=sys.stderr)
        loads = [(f"{f:.0%} max", f * rate) for f in args.loads] + [(f"{r:g}/s", r) for r in args.rates]
        for index, (label, offered) in enumerate(loads):
            low = preload + index * args.latency_pages
            chunk = corpus[low : low + args.latency_pages]
            load = await at_load(label, offered, chunk, reader, pool, cpu, bootstrap, source, clock)
            if traffic is not None:
                load.per_page = await traffic.per_page(len(chunk))
            result.loads.append(load)
        await asyncio.sleep(1.0)  # let late duplicates (redeliveries) show up
        result.duplicates = sum(len(times) - 1 for times in reader.times.values())
        if scraper is not None:
            print(f"  {name}: {await scraper.stop()}", file=sys.stderr)
        return result
    finally:
        if scraper is not None:
            await scraper.stop()
        if pool is not None:
            pool.stop()
        await reader.stop()


async def at_load(
    label: str,
    offered: float,
    chunk: list[tuple[bytes, bytes]],
    reader: Arrivals,
    pool,
    cpu: Cpu,
    bootstrap: str,
    source: str,
    clock: FileClock,
) -> Load:
    sent: dict[bytes, float] = {}

    def stamped():
        for key, line in chunk:
            yield line
            sent[key] = time.perf_counter()  # feed_lines takes the next line once this one is sent

    cpu.cores()
    await feed_lines(bootstrap, source, stamped(), rate=offered, clock=clock)
    used = cpu.cores()  # over the feed only; the drain after the last send is left out
    await reader.wait(list(sent), pool.check)
    latencies = np.array([reader.times[key][0] - t for key, t in sent.items() if key in reader.times]) * 1000
    times = sorted(sent.values())
    p50, p99, worst = np.percentile(latencies, [50, 99, 100]) if len(latencies) else [float("nan")] * 3
    achieved = (len(times) - 1) / (times[-1] - times[0])
    missing = len(sent) - len(latencies)
    load = Load(label, offered, achieved, float(p50), float(p99), float(worst), missing, used)
    print(f"    at {label} ({offered:,.0f}/s): p50 {p50:.0f} ms, p99 {p99:.0f} ms", file=sys.stderr)
    return load


async def run(args: argparse.Namespace, broker: EmbeddedBroker, data: Path) -> list[Result]:
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    bootstrap = broker.bootstrap
    total = max(args.pages, args.baseline_pages) + args.latency_pages * (len(args.loads) + len(args.rates))
    corpus = [(str(p["id"]).encode(), orjson.dumps(p)) for p in generate_corpus(total, seed=args.seed).pages]
    size = np.mean([len(line) for _, line in corpus])
    print(f"# {len(corpus):,} generated pages, {size:,.0f} bytes of JSON on average", flush=True)
    results = []
    if not args.no_baseline:
        app = f"bare{uuid.uuid4().hex[:6]}"
        source, sink = f"{app}-in", f"{app}-out"
        await ensure_topics(bootstrap, [TopicSpec(name, args.partitions, {}) for name in (source, sink)])
        start = lambda: ForwardWorker(bootstrap, app, source, sink, data / f"{app}.log", args.fetch_wait_ms)  # noqa: E731
        results.append(await measure(BARE, 1, start, source, sink, corpus, args.baseline_pages, args, broker))
    for count in args.workers:
        settings = app_settings(
            f"bench{uuid.uuid4().hex[:6]}w{count}",
            bootstrap,
            data,
            args.partitions,
            fetch_wait_ms=args.fetch_wait_ms,
            web_port=args.web_port,
        )
        names = TopicNames.from_settings(settings)
        await ensure_topics(bootstrap, topic_specs(settings))
        name = f"stream, {count} worker{'s' if count > 1 else ''}"
        start = lambda s=settings, n=count: Workers(s, bootstrap, n)  # noqa: E731
        traffic = Traffic(
            bootstrap,
            [names.internal(stage) for stage in Stage.ALL],
            [names.changelog(stage) for stage in Stage.ALL],
        )
        results.append(
            await measure(
                name, count, start, names.input, names.decisions, corpus, args.pages, args, broker, traffic
            )
        )
    return results


def app_settings(app: str, bootstrap: str, data: Path, partitions: int, **more: Any) -> Settings:
    """A fresh app of the stream: its own id, topics and data directory, ``partitions`` input and
    site partitions, ``more`` settings, and STREAM_LSH_* of the environment."""
    kinds = ("input", "queries", "decisions", "clusters", "unique", "answers", "dead_letters")
    return Settings.load(
        broker=bootstrap,
        app_id=app,
        data_dir=str(data / app),
        input_partitions=partitions,
        site_partitions=partitions,
        **{f"{kind}_topic": f"{app}-{kind}" for kind in kinds},
        **more,
    )


def on_embedded_broker(kind: str, prefix: str, run: Callable[[EmbeddedBroker, Path], Awaitable[T]]) -> T:
    """Run a benchmark's coroutine with a fresh embedded broker and a temporary data directory,
    both gone afterwards; Ctrl-C or SIGTERM exits with "interrupted"."""
    broker = embedded_broker(kind)
    with tempfile.TemporaryDirectory(prefix=prefix) as data:
        try:
            broker.start()
            return asyncio.run(run(broker, Path(data)))
        except (KeyboardInterrupt, asyncio.CancelledError):
            sys.exit("interrupted")
        finally:
            broker.stop()
            broker.cleanup()


def report(results: list[Result]) -> dict:
    bare = next((r for r in results if r.config == BARE), None)
    streams = {r.workers: r for r in results if r.config != BARE}
    one, two = streams.get(1), streams.get(2)
    print(
        f"\n{'config':18s} {'start-up s':>10s} {'msg/s':>7s} {'vs bare':>7s} {'vs 1 w':>6s} "
        f"{'max gap s':>9s} {'missing':>7s} {'dups':>5s} {'msgs/page':>9s}  "
        "cores used: workers/broker/bench/others"
    )
    for r in results:
        vs_bare = f"{r.rate / bare.rate:.2f}x" if bare else "-"
        vs_one = f"{r.rate / one.rate:.2f}x" if one and r.config != BARE else "-"
        print(
            f"{r.config:18s} {r.startup_s:10.1f} {r.rate:7,.0f} {vs_bare:>7s} {vs_one:>6s} "
            f"{r.max_gap_s:9.2f} {r.missing:7d} {r.duplicates:5d} {r.per_page:>9s}  {r.cpu}"
        )
    print(
        f"\n{'config':18s} {'load':>8s} {'offered/s':>9s} {'achieved/s':>10s} {'p50 ms':>7s} "
        f"{'p99 ms':>7s} {'max ms':>7s} {'missing':>7s} {'msgs/page':>9s}  cores used while feeding"
    )
    for r in results:
        for x in r.loads:
            behind = "  (feeder fell behind)" if x.achieved < 0.95 * x.offered else ""
            print(
                f"{r.config:18s} {x.label:>8s} {x.offered:9,.0f} {x.achieved:10,.0f} {x.p50_ms:7.1f} "
                f"{x.p99_ms:7.1f} {x.max_ms:7.1f} {x.missing:7d} {x.per_page:>9s}  {x.cpu}{behind}"
            )
    checks = {}
    if bare and one:
        checks["1 worker >= 50% of bare"] = (f"{one.rate / bare.rate:.0%}", one.rate >= 0.5 * bare.rate)
    for r in streams.values():
        half = next((x for x in r.loads if x.label == "50% max"), None)
        if half:
            checks[f"p99 <= 250 ms at 50% load, {r.config}"] = (f"{half.p99_ms:.0f} ms", half.p99_ms <= 250)
    if one and two:
        checks["2 workers >= 1.6x 1"] = (f"{two.rate / one.rate:.2f}x", two.rate >= 1.6 * one.rate)
    complete = all(r.missing == r.duplicates == 0 and not any(x.missing for x in r.loads) for r in results)
    checks["exactly one output per page"] = ("yes" if complete else "NO", complete)
    print()
    for label, (value, ok) in checks.items():
        print(f"target {label:45s} {value:>8s}  {'ok' if ok else 'MISSED'}")
    return {label: {"value": value, "ok": ok} for label, (value, ok) in checks.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    numbers = lambda kind: lambda text: [kind(x) for x in text.split(",") if x.strip()]  # noqa: E731
    parser.add_argument(
        "--pages", type=int, default=3000, help="pages sent as one burst for the saturation run"
    )
    parser.add_argument("--baseline-pages", type=int, help="the burst for the bare agent [3 x --pages]")
    parser.add_argument("--latency-pages", type=int, default=3000, help="pages fed at each fixed load")
    parser.add_argument("--loads", type=numbers(float), default=[0.25, 0.5], help="fractions of saturation")
    parser.add_argument("--rates", type=numbers(float), default=[], help="extra fixed loads, pages/s")
    parser.add_argument("--workers", type=numbers(int), default=[1, 2], help="worker counts of the stream")
    parser.add_argument("--partitions", type=int, default=8, help="partitions of every topic")
    parser.add_argument("--fetch-wait-ms", type=int, default=Settings().stream.fetch_wait_ms)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument(
        "--embedded",
        choices=["tansu", "kafka"],
        default="tansu",
        help="the broker to start: Tansu, or Apache Kafka (Java; stream-lsh fetch-kafka)",
    )
    parser.add_argument(
        "--scrape-every", type=float, help="serve /metrics and scrape every worker this often, seconds"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--quick", action="store_true", help="smoke run: 600 pages, 500 a load, 4 partitions")
    args = parser.parse_args()
    if args.quick:
        args.pages, args.latency_pages, args.partitions = 600, 500, 4
    args.baseline_pages = args.baseline_pages or 3 * args.pages
    args.web_port = free_port("127.0.0.1") if args.scrape_every else 0  # worker i: this + i
    print(
        f"# {os.cpu_count()} CPUs, shared by the broker, the workers and this feeder/reader; "
        f"Python {platform.python_version()}, faust-streaming {faust.__version__}, "
        f"aiokafka {aiokafka.__version__}"
    )
    print(f"# load average at start {os.getloadavg()[0]:.2f} (anything else running skews every number)")
    print(
        f"# {args.partitions} partitions per topic; {args.pages:,} pages in the saturation burst "
        f"({args.baseline_pages:,} for the bare agent); {args.latency_pages:,} pages per load; "
        f"fetch wait {args.fetch_wait_ms} ms",
        flush=True,
    )
    results = on_embedded_broker(args.embedded, "bench-stream-", lambda broker, data: run(args, broker, data))
    checks = report(results)
    if args.json:
        document = {
            "cpus": os.cpu_count(),
            "args": vars(args),
            "results": [asdict(r) for r in results],
            "targets": checks,
        }
        args.json.write_text(json.dumps(document, indent=2, default=str))


if __name__ == "__main__":
    main()
