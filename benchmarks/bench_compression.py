"""Compression benchmark: bytes on the broker and CPU per page for each codec (issue 14).

    python benchmarks/bench_compression.py [--pages 3000] [--codecs none,gzip,lz4,snappy,zstd]
        [--rates 0,150] [--repeats 1] [--partitions 8] [--seed 11] [--json out.json] [--quick]

``STREAM_LSH_COMPRESSION`` sets the codec of everything the app writes: outputs, internal stage
topics and changelogs. Its default is chosen from what this measures, per codec and feed rate:

* A fresh Apache Kafka broker (``KafkaBroker``, single-node KRaft, Java) with its own log
  directory, so that what the app wrote can be read off the disk; topics keep the producer's codec
  (``compression.type=producer``, Kafka's default). Tansu keeps no files and would not do.
* The app's topics (default settings and partitions but the codec), one worker process, and one
  warm-up page, decided before anything is counted (start-up is left out of every number).
* The same generated pages (``generate_corpus``) fed to the input topic *uncompressed*, so the
  input is the same bytes in every run: as fast as the producer takes them (rate 0, a burst: large
  micro-batches) or paced at a fixed rate (a live feed: small batches, more records per page).
* Bytes per page: growth of the ``.log`` segment files of each topic's partitions, from after the
  warm-up to when every page has its decision and the log directory has stopped growing. Kafka
  writes through the page cache, so file sizes are exact without a flush; segments are
  1 GiB, so none rolls and the cleaner compacts nothing: changelog bytes are every row written, as
  replicas and the network carry them, not what compaction leaves at rest.
* CPU per page: utime + stime (Linux /proc) of the worker process and its descendants, and of the
  broker's JVM, over the same window (first send to last decision). CPU time, not wall time: on a
  shared machine wall-clock numbers (the "wall s" column) are disturbed by whatever else runs.
* Sanity: the worker's decisions in every run are compared with those of the first run at the
  same rate and with batch's (``stream-lsh dedup`` on the same pages): records, and statuses, that
  differ. A codec changes no decision, but timing does, whatever the codec: with the boilerplate
  learner on (the default) some records differ in ``similarity`` or ``duplicate_of`` (its flags
  reach other site partitions at interleaving-dependent times); ``--no-boilerplate`` leaves only
  the rarer cases of the README's "What still depends on timing".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiokafka
import faust
import orjson

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.clock import FileClock
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.settings import Compression, Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import KAFKA_VERSION, KafkaBroker
from stream_lsh.stream.client import feed_lines, read_topic
from stream_lsh.stream.connection import KafkaConnection
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

STALL_S = 60.0  # stop waiting for decisions after this long without a new one
QUIET_S = 2.0  # the log directory counts as settled once no file grew for this long
SETTLE_LIMIT_S = 30.0  # ... or after this long, whichever comes first (reported)
GROUPS = ("input", "output", "internal", "changelog", "other")
APP_GROUPS = ("output", "internal", "changelog")  # what the codec setting compresses
METADATA = "__cluster_metadata"  # the KRaft controller's log, not a topic of the app


@dataclass
class Run:
    """One codec at one feed rate, on its own broker."""

    codec: str
    rate: float  # pages/s; 0: as fast as the producer takes them
    repeat: int
    pages: int  # measured: the corpus but the warm-up page
    startup_s: float = float("nan")  # spawn to the warm-up page's decision
    wall_s: float = float("nan")  # first send to last decision (disturbed by whatever else runs)
    settle_s: float = float("nan")  # last decision to a log directory that stopped growing
    worker_cpu_ms: float = float("nan")  # per page
    broker_cpu_ms: float = float("nan")  # per page
    bytes_per_page: dict[str, float] = field(default_factory=dict)  # by group (GROUPS)
    topics: dict[str, float] = field(default_factory=dict)  # by topic, the app id's prefix left out
    missing: int = 0
    # (records, statuses) unlike those of the first run at this rate, and of `stream-lsh dedup` on the
    # same pages (filled in at the end)
    unlike_first: tuple[int, int] = (0, 0)
    unlike_batch: tuple[int, int] = (0, 0)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def feed(self) -> str:
        return "burst" if not self.rate else f"{self.rate:g}/s"

    @property
    def app_bytes(self) -> float:
        return sum(self.bytes_per_page[group] for group in APP_GROUPS)


# -- what the broker holds and what processes spent --------------------------------------------------
def topic_bytes(log_dir: Path) -> dict[str, int]:
    """Bytes of the ``.log`` segments of every topic in a Kafka log directory (partition directories
    are ``<topic>-<partition>``); index files are preallocated and not data, so they are left out,
    and so is the KRaft controller's own log, which grows by a heartbeat every half second."""
    sizes: dict[str, int] = {}
    for directory in log_dir.iterdir():
        topic, dash, number = directory.name.rpartition("-")
        if not dash or not number.isdigit() or topic == METADATA or not directory.is_dir():
            continue
        total = 0
        for segment in directory.glob("*.log"):
            try:
                total += segment.stat().st_size
            except FileNotFoundError:  # deleted meanwhile (nothing here should be, but never fail)
                pass
        sizes[topic] = sizes.get(topic, 0) + total
    return sizes


def topic_groups(names: TopicNames) -> dict[str, str]:
    """Topic name -> its group in the table; topics not named here are "other" (the guard,
    Faust's leader topic, consumer offsets)."""
    groups = {names.input: "input"}
    for topic in (names.decisions, names.clusters, names.unique, names.answers, names.dead_letters):
        groups[topic] = "output"
    for stage in Stage.ALL:
        groups[names.internal(stage)] = "internal"
        groups[names.changelog(stage)] = "changelog"
    return groups


def process_cpu(root: int) -> float:
    """CPU seconds (user + system) of a process, its live descendants, and the children it has
    waited for: a worker is one process today, but a child it might start would count too."""
    tick = os.sysconf("SC_CLK_TCK")
    table: dict[int, tuple[int, float]] = {}  # pid -> (parent, seconds)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        table[int(entry.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += table.get(pid, (0, 0.0))[1]
        todo.extend(child for child, (parent, _) in table.items() if parent == pid)
    return total


async def settle(log_dir: Path) -> float:
    """Wait until no topic's log grew for QUIET_S (trailing changelog rows, cluster updates and
    commits of the last batches land after its decisions); returns the seconds waited."""
    began = time.monotonic()
    last, since = topic_bytes(log_dir), time.monotonic()
    while time.monotonic() - since < QUIET_S and time.monotonic() - began < SETTLE_LIMIT_S:
        await asyncio.sleep(0.25)
        now = topic_bytes(log_dir)
        if now != last:
            last, since = now, time.monotonic()
    return time.monotonic() - began


# -- one run --------------------------------------------------------------------------------------------
class Decisions:
    """Follows the decisions topic from its start; keeps each page's first decision and when it came."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.first: dict[str, dict[str, Any]] = {}
        self.arrived: dict[str, float] = {}
        self.last_at = time.perf_counter()
        self.task = asyncio.create_task(self._read(bootstrap, topic))

    async def _read(self, bootstrap: str, topic: str) -> None:
        async for _, value, _, _ in read_topic(bootstrap, topic, follow=True, idle_ms=100):
            if value is None:
                continue
            record = orjson.loads(value)
            if record["id"] not in self.first:
                self.last_at = self.arrived[record["id"]] = time.perf_counter()
                self.first[record["id"]] = record

    async def wait(self, ids: Iterable[str], pool: Workers) -> int:
        """Until every page in ``ids`` has its decision or none came for STALL_S; returns how many
        are missing. A worker that died, or this reader failing, is an error."""
        wanted = set(ids)
        while missing := len(wanted - self.first.keys()):
            if time.perf_counter() - self.last_at > STALL_S:
                print(f"  ! {missing} decisions never arrived", file=sys.stderr)
                return missing
            if self.task.done():
                self.task.result()
            pool.check()
            await asyncio.sleep(0.05)
        return 0

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def feed(
    settings: Settings, bootstrap: str, topic: str, lines: list[bytes], rate: float, clock: FileClock
) -> None:
    """Send pages as ``stream-lsh produce`` does, but uncompressed whatever the app's codec, so
    that every run's input is the same bytes."""
    plain = KafkaConnection.from_settings(settings.replace(compression=Compression.NONE), bootstrap)
    await feed_lines(
        plain, topic, lines, clock=clock, rate=rate or None, max_page_bytes=settings.input.max_page_bytes
    )


async def one_run(
    codec: str, rate: float, repeat: int, corpus: list[tuple[str, bytes]], base: Settings, home: Path
) -> Run:
    """A fresh broker with its own log directory, the app's topics, one worker; removed afterwards."""
    broker = KafkaBroker(data_dir=home / "kafka", settings={"compression.type": "producer"})
    broker.start()
    try:
        settings = base.replace(compression=codec, broker=broker.bootstrap, data_dir=str(home / "worker"))
        await ensure_topics(KafkaConnection.from_settings(settings), topic_specs(settings))
        return await measure(settings, broker, corpus, Run(codec, rate, repeat, len(corpus) - 1))
    finally:
        broker.stop()
        broker.cleanup()
        shutil.rmtree(home, ignore_errors=True)


async def measure(settings: Settings, broker: KafkaBroker, corpus: list[tuple[str, bytes]], run: Run) -> Run:
    """The warm-up page (start-up is not counted), then the rest of the corpus: the bytes the log
    directory grew by and the CPU the worker and the broker spent, per page."""
    bootstrap, names, log_dir = broker.bootstrap, TopicNames.from_settings(settings), broker.home / "data"
    reader = Decisions(bootstrap, names.decisions)
    clock = settings.file_clock()  # one file, fed in two pieces
    (warm_id, warm_line), rest = corpus[0], corpus[1:]
    spawned = time.perf_counter()
    pool = Workers(settings, bootstrap, 1)
    try:
        await feed(settings, bootstrap, names.input, [warm_line], 0, clock)
        await reader.wait([warm_id], pool)
        run.startup_s = reader.arrived.get(warm_id, float("nan")) - spawned
        await settle(log_dir)
        processes = (pool.processes[0].pid, broker.pid or 0)
        before, cpu = topic_bytes(log_dir), [process_cpu(pid) for pid in processes]
        sent = time.perf_counter()
        await feed(settings, bootstrap, names.input, [line for _, line in rest], run.rate, clock)
        run.missing = await reader.wait([page_id for page_id, _ in rest], pool)
        run.wall_s = reader.last_at - sent
        cpu = [process_cpu(pid) - used for pid, used in zip(processes, cpu)]
        run.worker_cpu_ms, run.broker_cpu_ms = (1000 * seconds / run.pages for seconds in cpu)
        run.settle_s = await settle(log_dir)
        grown = {topic: size - before.get(topic, 0) for topic, size in topic_bytes(log_dir).items()}
        per_page(run, names, grown)
        run.decisions = reader.first
        return run
    finally:
        await reader.stop()
        pool.stop()


def per_page(run: Run, names: TopicNames, grown: dict[str, int]) -> None:
    """Bytes per page by group and by topic (the app id's prefix left out)."""
    groups = topic_groups(names)
    run.bytes_per_page = dict.fromkeys(GROUPS, 0.0)
    for topic, grew in grown.items():
        run.bytes_per_page[groups.get(topic, "other")] += grew / run.pages
    prefix = names.app_id + "-"
    run.topics = {
        t.removeprefix(prefix): grew / run.pages for t, grew in sorted(grown.items()) if t in groups
    }


# -- the report -----------------------------------------------------------------------------------------
def batch_decisions(lines: list[bytes], settings: Settings) -> dict[str, dict[str, Any]]:
    """``stream-lsh dedup`` on the same pages with the same engine settings: what the stream is
    meant to decide, so that a codec that changed a decision could not hide behind another."""
    out = DecisionRecords()
    run_batch(
        lines,
        Deduplicator(settings.dedup_config()),
        out=out,
        rejects=RejectSink(lambda: open(os.devnull, "wb")),
        max_page_bytes=settings.input.max_page_bytes,
    )
    return {record["id"]: record for record in out.records}


def unlike(decisions: dict[str, dict[str, Any]], reference: dict[str, dict[str, Any]]) -> tuple[int, int]:
    """Pages whose record, and whose status, differ from the reference's (missing ones count)."""
    records = sum(decisions.get(page) != record for page, record in reference.items())
    statuses = sum(
        (decisions.get(page) or {}).get("status") != record["status"] for page, record in reference.items()
    )
    return records, statuses


def compare(runs: list[Run], batch: dict[str, dict[str, Any]]) -> None:
    """Every run's decisions against batch's and against those of the first run at the same feed
    rate (another rate is another interleaving)."""
    for run in runs:
        first = next(earlier for earlier in runs if earlier.rate == run.rate)
        run.unlike_first = unlike(run.decisions, first.decisions)
        run.unlike_batch = unlike(run.decisions, batch)


def medians(runs: list[Run]) -> list[Run]:
    """One row per feed and codec: the median of each number over the repeats."""
    rows = []
    for key in dict.fromkeys((run.rate, run.codec) for run in runs):
        same = [run for run in runs if (run.rate, run.codec) == key]
        row = Run(same[0].codec, same[0].rate, len(same), same[0].pages)  # repeat: how many
        for name in ("startup_s", "wall_s", "settle_s", "worker_cpu_ms", "broker_cpu_ms"):
            setattr(row, name, statistics.median([getattr(run, name) for run in same]))
        row.bytes_per_page = {g: statistics.median([run.bytes_per_page[g] for run in same]) for g in GROUPS}
        row.topics = {t: statistics.median([run.topics.get(t, 0.0) for run in same]) for t in same[0].topics}
        row.missing = max(run.missing for run in same)
        row.unlike_first = max(run.unlike_first for run in same)
        row.unlike_batch = max(run.unlike_batch for run in same)
        rows.append(row)
    return rows


def table(rows: list[Run], title: str) -> None:
    print(
        f"\n{title}\n{'feed':>7s} {'codec':7s} {'input':>7s} {'output':>7s} {'internal':>8s} "
        f"{'changelog':>9s} {'total':>7s} {'vs none':>7s} {'worker ms':>9s} {'broker ms':>9s} "
        f"{'wall s':>6s} {'unlike 1st':>10s} {'vs batch':>9s}"
    )
    for row in rows:
        plain = next((r for r in rows if r.rate == row.rate and r.codec == "none"), None)
        saved = f"{row.app_bytes / plain.app_bytes - 1:+.0%}" if plain else "-"
        b = row.bytes_per_page
        print(
            f"{row.feed:>7s} {row.codec:7s} {b['input']:7,.0f} {b['output']:7,.0f} {b['internal']:8,.0f} "
            f"{b['changelog']:9,.0f} {row.app_bytes:7,.0f} {saved:>7s} {row.worker_cpu_ms:9.2f} "
            f"{row.broker_cpu_ms:9.2f} {row.wall_s:6.1f} {pair(row.unlike_first):>10s} "
            f"{pair(row.unlike_batch):>9s}"
        )


def pair(counts: tuple[int, int]) -> str:
    return f"{counts[0]}/{counts[1]}"


def topic_table(rows: list[Run]) -> None:
    topics = list(dict.fromkeys(t for row in rows for t in row.topics))
    short = [t.replace("-state-changelog", " cl").replace("dedup-", "") for t in topics]
    print("\nbytes per page by topic (app id's prefix left out; cl: a stage's changelog)")
    print(f"{'feed':>7s} {'codec':7s} " + " ".join(f"{s:>{max(7, len(s))}s}" for s in short))
    for row in rows:
        cells = (f"{row.topics.get(t, 0.0):{max(7, len(s))},.0f}" for t, s in zip(topics, short))
        print(f"{row.feed:>7s} {row.codec:7s} " + " ".join(cells))


def report(runs: list[Run], repeats: int) -> list[Run]:
    """The table of the issue (medians over repeats), with every run too when there were repeats."""
    rows = medians(runs)
    legend = (
        "bytes on the broker per page (.log segments; output = decisions, clusters, unique pages, answers "
        "and dead letters; internal = sites, bands, homes; total = output + internal + changelog, what "
        "the codec setting compresses; vs none: that total against the uncompressed run at the same "
        "feed); CPU ms per page (process CPU time over the feed); records/statuses unlike those of the "
        "first run at that feed, and unlike batch's (`stream-lsh dedup` on the same pages)"
    )
    if repeats > 1:
        table(runs, "every run")
    table(rows, (f"medians of {repeats} runs (differences: the most): " if repeats > 1 else "") + legend)
    topic_table(rows)
    return rows


# -- the whole benchmark --------------------------------------------------------------------------------
def load_corpus(pages: int, seed: int) -> list[tuple[str, bytes]]:
    return [(str(page["id"]), orjson.dumps(page)) for page in generate_corpus(pages, seed=seed).pages]


async def run_all(
    args: argparse.Namespace, corpus: list[tuple[str, bytes]], base: Settings, data: Path
) -> list[Run]:
    """Every codec at every rate, ``--repeats`` times; codecs interleaved, so that a machine
    growing busier shifts them all alike."""
    runs = []
    for repeat in range(args.repeats):
        for rate in args.rates:
            for codec in args.codecs:
                load = os.getloadavg()[0]
                run = await one_run(codec, rate, repeat, corpus, base, data / f"{codec}-{rate:g}-{repeat}")
                runs.append(run)
                print(
                    f"  {run.feed} {codec}: {run.app_bytes:,.0f} B/page, "
                    f"worker {run.worker_cpu_ms:.2f} ms/page, start-up {run.startup_s:.1f} s, "
                    f"{run.wall_s:.1f} s, settled in {run.settle_s:.1f} s, load average before {load:.2f}",
                    file=sys.stderr,
                    flush=True,
                )
    return runs


def comma_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def comma_floats(text: str) -> list[float]:
    return [float(x) for x in comma_list(text)]


def without_decisions(run: Run) -> dict[str, Any]:
    return {key: value for key, value in asdict(run).items() if key != "decisions"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000, help="generated pages (the first is a warm-up)")
    parser.add_argument("--codecs", type=comma_list, default=[c.value for c in Compression])
    parser.add_argument(
        "--rates", type=comma_floats, default=[0.0, 150.0], help="feed rates, pages/s; 0: a burst"
    )
    parser.add_argument("--repeats", type=int, default=1, help="runs of each codec and rate")
    parser.add_argument("--partitions", type=int, default=8, help="partitions of every topic")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--no-boilerplate", action="store_true", help="decisions then exactly repeatable")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--quick", action="store_true", help="smoke run: 400 pages, 4 partitions, a burst")
    args = parser.parse_args()
    if args.quick:
        args.pages, args.partitions, args.rates = 400, 4, [0.0]
    for codec in args.codecs:
        Compression.parse(codec)  # an unknown codec fails here, not in the fifth run
    return args


def main() -> None:
    args = parse_args()
    p = args.partitions
    base = Settings.load(
        environ={},  # the defaults, whatever the environment says: they are what is measured
        input_partitions=p,
        site_partitions=p,
        boilerplate=False if args.no_boilerplate else None,
    )
    print(
        f"# {os.cpu_count()} CPUs, shared with the broker and this feeder (and on a shared machine, with "
        f"anything else: wall-clock numbers are disturbed, CPU times much less); Python "
        f"{platform.python_version()}, faust-streaming {faust.__version__}, aiokafka {aiokafka.__version__}, "
        f"Apache Kafka {KAFKA_VERSION}"
    )
    print(
        f"# {p} partitions per topic, batch size {base.stream.batch_size}, rates "
        f"{', '.join('burst' if not r else f'{r:g}/s' for r in args.rates)}, {args.repeats} repeat(s); "
        f"load average at start {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    began = time.perf_counter()
    corpus = load_corpus(args.pages, args.seed)
    size = sum(len(line) for _, line in corpus) / len(corpus)
    print(f"# {len(corpus):,} generated pages (seed {args.seed}), {size:,.0f} bytes of JSON on average")
    with tempfile.TemporaryDirectory(prefix="bench-compression-") as data:
        try:
            runs = asyncio.run(run_all(args, corpus, base, Path(data)))
        except KeyboardInterrupt:
            sys.exit("interrupted")
    compare(runs, batch_decisions([line for _, line in corpus], base))
    rows = report(runs, args.repeats)
    print(f"\n# {time.perf_counter() - began:.0f} s in all")
    if args.json:
        document: dict[str, Any] = {
            "cpus": os.cpu_count(),
            "args": vars(args),
            "runs": [without_decisions(run) for run in runs],
            "medians": [without_decisions(row) for row in rows],
        }
        args.json.write_text(json.dumps(document, indent=2, default=str))


if __name__ == "__main__":
    main()
