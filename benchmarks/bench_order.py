"""Ordering benchmark: the in-process pipeline fed in the interleavings a consumer of 8 input partitions sees.

Each site's pages stay in file order on input partition xxh3(site) % 8 (as the feeder puts them);
the consumer takes chunks of random size from random partitions (``chunks``), or one partition
entirely first (``extreme``: a random partition, then the rest in chunks), or partition after
partition (``serial``). Pages reach ingest in micro-batches of 1..256 with a random number of
scheduler steps in between (``--steps``), under LocalPipeline's random scheduler.

Per run: pairwise F1 of the stream and of batch run in arrival order, both against batch in file
order, and how many pages got another status than in file-order batch.

    python benchmarks/bench_order.py --runs 20 --mode chunks [--arrival-order]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import xxhash

from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.page import page_from_dict
from stream_lsh.evaluation import pair_scores
from stream_lsh.pipeline.local import LocalPipeline
from stream_lsh.pipeline.routing import Layout
from stream_lsh.synthetic import generate_corpus

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from consumer_order import consumer_order

INPUT_PARTITIONS = 8


def partition_of(page: dict) -> int:
    site = page_from_dict(page).site
    return xxhash.xxh3_64_intdigest(site.encode("utf-8", "surrogatepass")) % INPUT_PARTITIONS


def arrival(pages: list[dict], mode: str, rng: random.Random) -> list[dict]:
    if mode == "file":
        return list(pages)
    if mode == "serial":
        queues: dict[int, list[dict]] = {}
        for p in pages:
            queues.setdefault(partition_of(p), []).append(p)
        return [p for part in rng.sample(sorted(queues), len(queues)) for p in queues[part]]
    return consumer_order(pages, partition_of, rng, max_chunk=256, whole_first=mode == "extreme")


def labels(decisions: list[dict]) -> dict[str, str]:
    return {d["id"]: d["cluster_id"] or "\x00" + d["id"] for d in decisions}


def batch(pages: list[dict]) -> list[dict]:
    engine = Deduplicator()
    return [engine.process(page_from_dict(p)).to_dict() for p in pages]


def run_stream(
    pages: list[dict],
    order: list[dict],
    rng: random.Random,
    steps: int,
    layout: Layout,
    pipe_kwargs: dict,
    stats: dict,
    max_batch: int = 256,
    idle_after: int = 0,
) -> list[dict]:
    """Feed ``order`` (``pages`` as a consumer meets them; each record stamped with the clock a
    producer gives the file of ``pages``) in ingest batches of 1..256 (input partition of each page
    kept), a random number of scheduler steps in between; an input partition is declared idle
    once its last page is in. ``stats``: delay of each decision in pages fed meanwhile, most probes
    held, messages."""
    pipe = LocalPipeline(DedupConfig(), layout, rng=rng, **pipe_kwargs)
    stamps = dict(zip((p["id"] for p in pages), pipe.stamp(orjson.dumps(p) for p in pages)))
    lines = [orjson.dumps(p) for p in order]
    parts = [partition_of(p) for p in order]
    remaining = Counter(parts)
    position = {p["id"]: i for i, p in enumerate(order)}
    delays: list[int] = []
    step_delays: list[int] = []
    clock = [0]
    fed_at: dict[str, int] = {}
    held = [0]
    messages = Counter()
    deliver = pipe._deliver

    def counting(out):  # type: ignore[no-untyped-def]
        for section in (out.first, out.internal):
            for partitions in section.values():
                for records in partitions.values():
                    if records:
                        messages["messages"] += 1
                        marks = sum(r.KIND == "wm" for r in records)
                        messages["wm records"] += marks
                        messages["wm-only messages"] += marks == len(records)
        deliver(out)

    pipe._deliver = counting
    seen = [0]
    fed = [0]

    def observe() -> None:
        new = pipe.outputs.decisions[seen[0] :]
        seen[0] += len(new)
        delays.extend(fed[0] - 1 - position[pid] for pid, _ in new)
        step_delays.extend(clock[0] - fed_at[pid] for pid, _ in new)
        held[0] = max(held[0], len(pipe.stages["decide"][0].held))

    quiet = Counter()
    for part in range(INPUT_PARTITIONS):
        if not remaining[part]:
            pipe.idle(part)  # an empty partition: the stream's idle timer says so at once
    i = 0
    while i < len(lines):
        n = rng.randint(1, max_batch)
        for p in order[i : i + n]:
            fed_at[p["id"]] = clock[0]
        pipe.feed(
            lines[i : i + n],
            partition=parts[i : i + n],
            timestamps=[stamps[p["id"]] for p in order[i : i + n]],
        )
        fed[0] = min(i + n, len(lines))
        for part in parts[i : i + n]:
            remaining[part] -= 1
            if remaining[part] == 0:
                pipe.idle(part)
            quiet[part] = 0
        if idle_after:
            for part in range(INPUT_PARTITIONS):
                quiet[part] += 1
                if quiet[part] == idle_after + 1 and remaining[part]:
                    pipe.idle(part)
        i += n
        observe()
        for _ in range(rng.randint(0, steps)):
            pipe.step()
            clock[0] += 1
            observe()
    while pipe.step():
        clock[0] += 1
        observe()
    stats["late"] = pipe.stages["decide"][0].late
    stats.update(delays=delays, step_delays=step_delays, held=held[0], **messages)
    return [v for _, v in pipe.outputs.decisions]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=400)
    ap.add_argument("--corpus-seed", type=int, default=8)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--mode", default="chunks", choices=["file", "chunks", "extreme", "serial"])
    ap.add_argument("--steps", type=int, default=40, help="most scheduler steps between two ingest batches")
    ap.add_argument("--sites", type=int, default=8, help="site partitions")
    ap.add_argument(
        "--idle-after",
        type=int,
        default=0,
        help="declare an input partition idle after this many ingest batches without a page from it "
        "(a live consumer with no lag); 0: only once its last page is in",
    )
    ap.add_argument("--max-batch", type=int, default=256, help="most pages per ingest batch")
    ap.add_argument("--no-arrival-batch", action="store_true")
    ap.add_argument(
        "--arrival-order",
        action="store_true",
        help="no watermarks: the decide partition applies pages as they come (the stream's --order arrival)",
    )
    args = ap.parse_args(argv)
    layout = Layout(args.sites)
    pipe_kwargs = {} if args.arrival_order else {"inputs": INPUT_PARTITIONS}
    pages = generate_corpus(args.pages, seed=args.corpus_seed).pages
    truth_decisions = batch(pages)
    truth = labels(truth_decisions)
    truth_status = {d["id"]: d["status"] for d in truth_decisions}
    truth_by_id = {d["id"]: d for d in truth_decisions}
    rows = []
    started = time.perf_counter()
    for seed in range(args.first_seed, args.first_seed + args.runs):
        rng = random.Random(seed)
        order = arrival(pages, args.mode, rng)
        stats: dict = {}
        got = run_stream(
            pages, order, rng, args.steps, layout, pipe_kwargs, stats, args.max_batch, args.idle_after
        )
        counts = Counter(d["id"] for d in got)
        assert len(counts) == len(pages) and max(counts.values()) == 1, "not one decision per page"
        f1 = pair_scores(truth, labels(got)).f1
        status = sum(d["status"] != truth_status[d["id"]] for d in got)
        delays = sorted(stats.pop("delays"))
        step_delays = sorted(stats.pop("step_delays"))
        row = {
            "seed": seed,
            "f1": f1,
            "status_diff": status,
            "decision_diff": sum(d != truth_by_id[d["id"]] for d in got),
            "delay_median": delays[len(delays) // 2],
            "delay_p95": delays[int(len(delays) * 0.95)],
            "steps_median": step_delays[len(delays) // 2],
            "steps_p95": step_delays[int(len(delays) * 0.95)],
            **stats,
        }
        if not args.no_arrival_batch:
            arrival_batch = batch(order)
            row["arrival_batch_f1"] = pair_scores(truth, labels(arrival_batch)).f1
            row["arrival_batch_status_diff"] = sum(
                d["status"] != truth_status[d["id"]] for d in arrival_batch
            )
            row["f1_vs_arrival_batch"] = pair_scores(labels(arrival_batch), labels(got)).f1
        rows.append(row)
        print(orjson.dumps(row).decode(), flush=True)
    f1s = sorted(r["f1"] for r in rows)
    diffs = sorted(r["status_diff"] for r in rows)
    print(f"mode={args.mode} runs={len(rows)} kw={pipe_kwargs} {time.perf_counter() - started:.0f}s")
    print(
        f"  stream F1 vs file batch: min {f1s[0]:.4f} median {statistics.median(f1s):.4f} max {f1s[-1]:.4f} "
        f"mean {statistics.mean(f1s):.4f}; runs < 0.99: {sum(f < 0.99 for f in f1s)}; == 1.0: "
        f"{sum(f == 1.0 for f in f1s)}"
    )
    print(f"  status differs: min {diffs[0]} median {statistics.median(diffs)} max {diffs[-1]}")
    for key in (
        "decision_diff",
        "delay_median",
        "delay_p95",
        "steps_median",
        "steps_p95",
        "held",
        "late",
        "messages",
        "wm records",
        "wm-only messages",
    ):
        values = [r.get(key, 0) for r in rows]
        print(f"  {key}: median {statistics.median(values)} max {max(values)}")
    if not args.no_arrival_batch:
        a = sorted(r["arrival_batch_f1"] for r in rows)
        print(
            f"  arrival-order batch F1 vs file batch: min {a[0]:.4f} median {statistics.median(a):.4f} "
            f"max {a[-1]:.4f}; status differs median "
            f"{statistics.median(r['arrival_batch_status_diff'] for r in rows)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
