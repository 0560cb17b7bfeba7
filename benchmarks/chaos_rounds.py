"""Crash and rebalance rounds with real processes, scored against batch (issue 12's procedure).

    python benchmarks/chaos_rounds.py [--broker tansu|kafka] [--pages 2000] [--rate 80]
        [--rounds keep:5,drop:5,graceful:5] [--seed 1] [--json out.json] [--keep DIR]
        [--hard-cases] [--messy-dates] [--prose real] [--shape one-line ...]
        [--pages-file PAGES.jsonl] [--ttl-hours H]

Each round is what an operator does, with the real commands and no test harness in between: a
fresh embedded broker, `stream-lsh topics`, `stream-lsh produce PAGES --rate R` in the background,
and workers (`python -m stream_lsh worker`) that are interrupted:

* ``keep``: five times, a worker runs 6-10 s and is killed with SIGKILL; the next reuses its data dir.
* ``drop``: the same, but the data dir is deleted after each kill (state comes from the changelogs).
* ``graceful``: two workers; three times one is stopped with SIGTERM after 6-10 s and restarted.
* ``kill2``: two workers; three times one is killed with SIGKILL after 6-10 s and restarted.

Then one last worker (two for the two-worker rounds) runs until every page has a decision. The
decisions topic is read from its start, every record (repeats included), and compared:
undecided pages, pages whose repeated decisions differ (status, cluster, duplicate_of), and the
final clusters' pairwise F1 and status changes against `stream-lsh dedup` on the same file.
Pauses are drawn from a seeded generator, so a round's schedule is repeatable (its outcome
depends on timing, which is the point). ``--hard-cases`` adds teasers, quoting pages and short
stories (6%, 6%, 10%: decisions by containment), ``--messy-dates`` the dates of a real feed,
``--prose real`` real news prose (about 600 pages at most) and ``--shape`` the page shapes of
``stream-lsh generate``. ``--pages-file`` feeds a file of one's own instead (the pages of
../shared/repro/rebalance-handover, say), and ``--ttl-hours`` sets the window for batch and the
workers alike: a window that holds a fraction of the feed makes a page that comes late lose its
copies (decided unique), where a long one only swaps it with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.record import split_lines
from stream_lsh.evaluation import decisions_by_page, pair_scores, repeats_that_differ
from stream_lsh.settings import Settings
from stream_lsh.stream.brokers import embedded_broker
from stream_lsh.stream.client import read_topic
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames
from stream_lsh.synthetic import Shapes, generate_corpus


@dataclass
class Round:
    variant: str
    index: int
    undecided: int
    decided_differently: int
    f1: float
    status_changes: int
    decisions: int
    seconds: float


def batch_decisions(pages_file: Path, settings: Settings) -> dict[str, dict]:
    """`stream-lsh dedup` on the same file, with the workers' engine settings: the reference."""
    out = DecisionRecords()
    run_batch(
        split_lines(pages_file.read_bytes()),
        Deduplicator(settings.dedup_config()),
        out=out,  # type: ignore[arg-type]
        rejects=RejectSink(lambda: open(os.devnull, "wb")),
    )
    return {r["id"]: r for r in out.records}


async def read_decisions(bootstrap: str, topic: str) -> list[dict]:
    return [
        orjson.loads(value)
        async for _, value, _, _ in read_topic(bootstrap, topic, follow=False, idle_ms=500)
        if value is not None
    ]


async def wait_decided(
    bootstrap: str, topic: str, ids: set[str], workers: list[Workers], timeout: float
) -> None:
    """Until every page has a decision (or ``timeout`` s); a worker that dies is an error."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pool in workers:
            pool.check()
        if ids <= {record["id"] for record in await read_decisions(bootstrap, topic)}:
            return
        await asyncio.sleep(2)


def score(variant: str, index: int, records: list[dict], batch: dict[str, dict], seconds: float) -> Round:
    by_page = decisions_by_page(records)
    differing = len(repeats_that_differ(by_page))
    final = {page_id: decided[-1] for page_id, decided in by_page.items()}
    truth = {k: v["cluster_id"] or k for k, v in batch.items()}
    got = {k: (final[k]["cluster_id"] or k) if k in final else k for k in batch}
    changes = sum(1 for k, v in batch.items() if k in final and final[k]["status"] != v["status"])
    return Round(
        variant,
        index,
        len(set(batch) - set(final)),
        differing,
        round(pair_scores(truth, got).f1, 4),
        changes,
        len(records),
        round(seconds, 1),
    )


async def one_round(
    kind: str,
    variant: str,
    index: int,
    pages_file: Path,
    ids: set[str],
    rate: float,
    rng: random.Random,
    base: Path,
    engine: dict[str, Any],
) -> list[dict]:
    data = base / f"{variant}-{index}"
    broker = embedded_broker(kind).start()
    try:
        settings = Settings.load(environ={}, broker=broker.bootstrap, data_dir=str(data), **engine)
        env = {**os.environ, **settings.to_environ(), "STREAM_LSH_BROKER": broker.bootstrap}
        subprocess.run(
            [sys.executable, "-m", "stream_lsh", "topics"], env=env, check=True, capture_output=True
        )
        producer = subprocess.Popen(
            [sys.executable, "-m", "stream_lsh", "produce", str(pages_file), "--rate", str(rate)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            survivors = await interrupt(variant, settings, broker.bootstrap, rng, data)
            producer.wait(timeout=3600)
            names = TopicNames.from_settings(settings)
            await wait_decided(broker.bootstrap, names.decisions, ids, survivors, timeout=300)
            for pool in survivors:
                pool.stop()
            return await read_decisions(broker.bootstrap, names.decisions)
        finally:
            if producer.poll() is None:
                producer.kill()
    finally:
        broker.stop()
        broker.cleanup()


async def interrupt(
    variant: str, settings: Settings, bootstrap: str, rng: random.Random, data: Path
) -> list[Workers]:
    """Run the round's kills or stops; return the workers that finish the work."""
    if variant in ("keep", "drop"):
        for _ in range(5):
            pool = Workers(settings, bootstrap, 1)
            await asyncio.sleep(rng.uniform(6, 10))
            pool.stop(how=signal.SIGKILL)
            if variant == "drop":
                shutil.rmtree(data / "worker-0", ignore_errors=True)
        return [Workers(settings, bootstrap, 1)]
    if variant in ("graceful", "kill2"):
        how = signal.SIGTERM if variant == "graceful" else signal.SIGKILL
        steady = Workers(settings, bootstrap, 1)
        for _ in range(3):
            other = Workers(settings, bootstrap, 1, first=1)
            await asyncio.sleep(rng.uniform(6, 10))
            other.stop(how=how)
        return [steady, Workers(settings, bootstrap, 1, first=1)]
    raise ValueError(f"unknown variant {variant!r}")


async def main(args: argparse.Namespace) -> list[Round]:
    base = Path(tempfile.mkdtemp(prefix="chaos-rounds-"))
    pages_file = base / "pages.jsonl"
    if args.pages_file is not None:
        pages_file.write_bytes(args.pages_file.read_bytes())
    else:
        hard = {"teasers": 0.06, "quotes": 0.06, "short_stories": 0.1} if args.hard_cases else {}
        corpus = generate_corpus(
            args.pages,
            seed=args.seed,
            messy_dates=args.messy_dates,
            prose=args.prose,
            shapes=Shapes.parse(args.shape),
            **hard,
        )
        pages_file.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in corpus.pages))
    engine: dict[str, Any] = {} if args.ttl_hours is None else {"ttl_hours": args.ttl_hours}
    batch = batch_decisions(pages_file, Settings.load(environ={}, **engine))
    ids = set(batch)
    rng = random.Random(args.seed)
    results = []
    try:
        for variant, count in args.rounds:
            for index in range(count):
                started = time.monotonic()
                records = await one_round(
                    args.broker, variant, index, pages_file, ids, args.rate, rng, base, engine
                )
                result = score(variant, index, records, batch, time.monotonic() - started)
                results.append(result)
                if args.keep is not None:  # every decision record of the round, for a closer look
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"{variant}-{index}.jsonl").write_bytes(
                        b"".join(orjson.dumps(r) + b"\n" for r in records)
                    )
                    (args.keep / "batch.jsonl").write_bytes(
                        b"".join(orjson.dumps(r) + b"\n" for r in batch.values())
                    )
                print(
                    f"{result.variant:9s} {result.index}: undecided {result.undecided}, decided differently "
                    f"{result.decided_differently}, F1 {result.f1}, status changes {result.status_changes} "
                    f"({result.decisions} decisions, {result.seconds} s)",
                    flush=True,
                )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return results


def rounds(text: str) -> list[tuple[str, int]]:
    out = []
    for part in text.split(","):
        variant, _, count = part.partition(":")
        out.append((variant.strip(), int(count or 1)))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", choices=["tansu", "kafka"], default="tansu")
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=80.0)
    parser.add_argument("--rounds", type=rounds, default=rounds("keep:5,drop:5,graceful:5"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", type=Path, help="write each round's decision records (and batch's) here")
    parser.add_argument("--hard-cases", action="store_true", help="teasers, quoting pages, short stories")
    parser.add_argument("--messy-dates", action="store_true", help="arrival order, dates as feeds send them")
    parser.add_argument("--prose", choices=["pseudo", "real"], default="pseudo", help="real: real news prose")
    parser.add_argument("--shape", action="append", default=[], help="a page shape (repeat), as generate's")
    parser.add_argument(
        "--pages-file", type=Path, help="feed this JSON lines file instead of a generated corpus"
    )
    parser.add_argument(
        "--ttl-hours",
        type=float,
        help="the window, for batch and the workers alike (a short one makes late pages lose their copies)",
    )
    arguments = parser.parse_args()
    found = asyncio.run(main(arguments))
    ok = all(r.undecided == 0 and r.decided_differently == 0 and r.f1 >= 0.99 for r in found)
    print(
        f"{sum(1 for r in found if r.undecided == 0 and r.decided_differently == 0 and r.f1 >= 0.99)} of "
        f"{len(found)} rounds: every page decided, none differently, F1 >= 0.99"
    )
    if arguments.json:
        arguments.json.write_text(json.dumps([asdict(r) for r in found], indent=2))
    sys.exit(0 if ok else 1)
