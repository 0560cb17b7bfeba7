"""Quality grid: shingle schemes x Jaccard thresholds x containment thresholds, on generated news;
or, with ``--by-shape``, the defaults on every page shape, in pseudo-words and in real prose.

    python benchmarks/eval_grid.py [--pages 4000] [--seed 1] [--thresholds 0.3,0.4,0.5]
        [--containments none,0.6,0.7,0.8] [--plain] [--learning on] [--prose pseudo]
    python benchmarks/eval_grid.py --by-shape [--pages 2000] [--real-pages 600] [--seeds 1,2,3]

By default the pages include the two kinds that pull a Jaccard threshold apart: teasers (the
first 25-40% of a story: duplicates) and pages quoting 20-50% of their words from another story
(not duplicates), 6% of the pages each, and 10% of stories 60-100 words long (``--plain``: none
of them). Prints a Markdown table of pairwise precision, recall, F1 and adjusted Rand index per
setting, with how many teasers joined their story and how many quoting pages joined the story
they quote; the README's table and the chosen defaults come from this script.

``--by-shape`` scores the engine's defaults on each page shape of :mod:`stream_lsh.synthetic.shapes`
(one-line bodies, fixed and rotating in-body headline lists, ``<div>``-only HTML, copies trimmed
to 55-100% with teasers and quotes of them, sites whose first pages come first, all of them at
once, and teasers before their story), with the hard cases (and, in a row of their own, 3%
newsletter digests), in pseudo-word prose and in real English news prose (the Lee corpus,
fetched from PyPI on first use: :mod:`stream_lsh.synthetic.real_prose`).
"""

from __future__ import annotations

import argparse
import io
from collections import defaultdict
from statistics import mean
from typing import Any

import orjson

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.shingles import ShingleSpec
from stream_lsh.evaluation import PairScores, pair_scores, predicted_clusters
from stream_lsh.synthetic import PageTruth, generate_corpus_with_truth
from stream_lsh.synthetic.shapes import Shapes

SCHEMES = [("stopword", 3), ("word", 3), ("char", 9)]
HARD_CASES: dict[str, float] = {"teasers": 0.06, "quotes": 0.06, "short_stories": 0.1}
#: ... and newsletter digests of the day's stories (not duplicates of any), for their own row.
WITH_DIGESTS = {**HARD_CASES, "digests": 0.03}
#: The rows of ``--by-shape``: a name, the shapes, and the hard cases in it.
SHAPE_ROWS: list[tuple[str, list[str], dict[str, float]]] = [
    ("plain copies", [], {}),
    ("teasers and quotes", [], HARD_CASES),
    ("teasers, quotes and digests", [], WITH_DIGESTS),
    ("one-line bodies", ["one-line"], HARD_CASES),
    ("one-line bodies and a fixed list", ["one-line", "fixed-list"], HARD_CASES),
    ("fixed list", ["fixed-list"], HARD_CASES),
    ("rotating list", ["rotating-list"], HARD_CASES),
    ("div-only HTML", ["div-only"], HARD_CASES),
    ("trimmed 55-100% with teasers and quotes", ["trimmed"], HARD_CASES),
    ("cold sites", ["cold-sites"], HARD_CASES),
    ("teasers before their story", ["early-teasers"], HARD_CASES),
    ("hard-wrapped text", ["hard-wrapped"], HARD_CASES),
    ("notices in place of articles", ["notices"], HARD_CASES),
    ("script-built pages", ["script-built"], HARD_CASES),
    ("all shapes at once", ["one-line", "fixed-list", "div-only", "trimmed", "cold-sites"], HARD_CASES),
]


def kinds_joined(
    truth: dict[str, PageTruth], labels: dict[str, str], predicted: dict[str, str]
) -> tuple[int, int, int, int, int, int]:
    """Teasers joined to their story, teasers; quoting pages joined to the story they quote,
    quoting pages; digests in a cluster with any other page, digests."""
    members: dict[str, list[str]] = defaultdict(list)
    for page_id, label in labels.items():
        members[label].append(page_id)
    clustered: dict[str, int] = defaultdict(int)
    for cluster in predicted.values():
        clustered[cluster] += 1
    teasers = [p for p, t in truth.items() if t.kind == "teaser"]
    quotes = [p for p, t in truth.items() if t.kind == "quote"]
    digests = [p for p, t in truth.items() if t.kind == "digest"]
    joined = sum(any(predicted[m] == predicted[p] for m in members[labels[p]] if m != p) for p in teasers)
    merged = sum(any(predicted[m] == predicted[p] for m in members[truth[p].quoted or ""]) for p in quotes)
    digests_merged = sum(clustered[predicted[p]] > 1 for p in digests)
    return joined, len(teasers), merged, len(quotes), digests_merged, len(digests)


def score(lines: list[bytes], labels: dict[str, str], config: DedupConfig) -> tuple[PairScores, dict, float]:
    out = DecisionRecords()
    summary = run_batch(lines, Deduplicator(config), out=out, rejects=RejectSink(io.BytesIO))
    predicted = predicted_clusters(out.records, labels)
    return pair_scores(labels, predicted), predicted, summary.pages_per_second


def _containment(text: str) -> float | None:
    return None if text == "none" else float(text)


def by_shape(pages: int, real_pages: int, seeds: list[int], rows: list[str] | None) -> None:
    """The defaults on every shape, in pseudo-words and in real prose (see the module doc): the
    mean over the seeds, with the lowest F1, and the hard cases summed."""
    hard_cases = ", ".join(f"{k} {v}" for k, v in HARD_CASES.items())
    print(f"defaults; seeds {', '.join(map(str, seeds))}; hard cases: {hard_cases}\n")
    print(
        "| prose | shape | pages | precision | recall | F1 | lowest F1 | teasers joined | quotes merged "
        "| digests merged |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for prose, count in (("pseudo", pages), ("real", real_pages)):
        for name, shapes, hard_cases_of_row in SHAPE_ROWS:
            if rows and name not in rows:
                continue
            found: list[PairScores] = []
            joined = [0] * 6
            for seed in seeds:
                options: dict[str, Any] = dict(hard_cases_of_row, prose=prose, shapes=Shapes.parse(shapes))
                corpus, truth = generate_corpus_with_truth(count, seed, **options)
                lines = [orjson.dumps(page) for page in corpus.pages]
                s, predicted, _ = score(lines, corpus.labels, DedupConfig())
                found.append(s)
                joined = [a + b for a, b in zip(joined, kinds_joined(truth, corpus.labels, predicted))]
            print(
                f"| {prose} | {name} | {count:,} | {mean(s.precision for s in found):.3f} | "
                f"{mean(s.recall for s in found):.3f} | {mean(s.f1 for s in found):.3f} | "
                f"{min(s.f1 for s in found):.3f} | {joined[0]}/{joined[1]} | {joined[2]}/{joined[3]} | "
                f"{joined[4]}/{joined[5]} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--thresholds", default="0.3,0.4,0.5")
    parser.add_argument("--containments", default="none,0.6,0.7,0.8")
    parser.add_argument("--schemes", default=",".join(f"{kind}:{k}" for kind, k in SCHEMES))
    parser.add_argument("--learning", default="on", help="boilerplate learning: on, off or on,off")
    parser.add_argument("--plain", action="store_true", help="no teasers, quoting pages or short stories")
    parser.add_argument("--prose", default="pseudo", choices=("pseudo", "real"), help="the grid's prose")
    parser.add_argument("--by-shape", action="store_true", help="the defaults on every page shape")
    parser.add_argument("--real-pages", type=int, default=600, help="pages of real prose (--by-shape)")
    parser.add_argument("--rows", help="--by-shape: only these rows (names, comma-separated)")
    parser.add_argument("--seeds", help="--by-shape: the mean over these seeds (comma-separated)")
    args = parser.parse_args()
    if args.by_shape:
        seeds = [int(seed) for seed in args.seeds.split(",")] if args.seeds else [args.seed]
        by_shape(args.pages, args.real_pages, seeds, args.rows.split(",") if args.rows else None)
        return
    hard = {} if args.plain else HARD_CASES
    corpus, truth = generate_corpus_with_truth(args.pages, args.seed, prose=args.prose, **hard)
    lines = [orjson.dumps(page) for page in corpus.pages]
    what = "plain" if args.plain else ", ".join(f"{k} {v}" for k, v in HARD_CASES.items())
    print(f"{len(lines)} generated pages, seed {args.seed} ({what})\n")
    print(
        "| shingles | learning | threshold | containment | precision | recall | F1 | ARI "
        "| teasers joined | quotes merged | pages/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for scheme in args.schemes.split(","):
        kind, k = scheme.split(":")
        for learn in args.learning.split(","):
            for threshold in (float(t) for t in args.thresholds.split(",")):
                for containment in args.containments.split(","):
                    config = DedupConfig(
                        threshold=threshold,
                        containment=_containment(containment),
                        shingles=ShingleSpec(kind, int(k)),
                        boilerplate=learn == "on",
                    )
                    s, predicted, rate = score(lines, corpus.labels, config)
                    joined = kinds_joined(truth, corpus.labels, predicted)
                    teasers, of_teasers, quotes, of_quotes = joined[:4]
                    print(
                        f"| {kind} k={k} | {learn} | {threshold} | {containment} | {s.precision:.3f} | "
                        f"{s.recall:.3f} | {s.f1:.3f} | {s.ari:.3f} | "
                        f"{teasers}/{of_teasers} | {quotes}/{of_quotes} | {rate:,.0f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
