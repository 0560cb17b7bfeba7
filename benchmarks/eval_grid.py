"""Quality grid: shingle schemes x thresholds x boilerplate learning on generated news pages.

    python benchmarks/eval_grid.py [--pages 4000] [--seed 1] [--thresholds 0.3,0.4,0.5,0.6,0.7]

Prints a Markdown table of pairwise precision, recall, F1 and adjusted Rand index per setting;
the README's table and the chosen defaults come from this script.
"""

from __future__ import annotations

import argparse
import io
import time

import orjson

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.shingles import ShingleSpec
from stream_lsh.evaluation import pair_scores, predicted_clusters
from stream_lsh.synthetic import generate_corpus

SCHEMES = [("stopword", 3), ("word", 3), ("char", 9)]


def score(lines: list[bytes], truth: dict[str, str], config: DedupConfig) -> tuple:
    out = DecisionRecords()
    summary = run_batch(lines, Deduplicator(config), out=out, rejects=RejectSink(io.BytesIO))
    return pair_scores(truth, predicted_clusters(out.records, truth)), summary.pages_per_second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--thresholds", default="0.3,0.4,0.5,0.6,0.7")
    parser.add_argument("--schemes", default=",".join(f"{kind}:{k}" for kind, k in SCHEMES))
    args = parser.parse_args()
    corpus = generate_corpus(args.pages, args.seed)
    lines = [orjson.dumps(page) for page in corpus.pages]
    thresholds = [float(t) for t in args.thresholds.split(",")]
    print(f"{len(lines)} generated pages, seed {args.seed}\n")
    print("| shingles | boilerplate learning | threshold | precision | recall | F1 | ARI | pages/s |")
    print("|---|---|---|---|---|---|---|---|")
    for scheme in args.schemes.split(","):
        kind, k = scheme.split(":")
        for learn in (True, False):
            for threshold in thresholds:
                config = DedupConfig(
                    threshold=threshold, shingles=ShingleSpec(kind, int(k)), boilerplate=learn
                )
                started = time.perf_counter()
                s, rate = score(lines, corpus.labels, config)
                print(
                    f"| {kind} k={k} | {'on' if learn else 'off'} | {threshold} | {s.precision:.3f} | "
                    f"{s.recall:.3f} | {s.f1:.3f} | {s.ari:.3f} | {rate:,.0f} |",
                    flush=True,
                )
                del started


if __name__ == "__main__":
    main()
