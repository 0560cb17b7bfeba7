"""Batch-path benchmark: stream-lsh stage by stage, and a datasketch pipeline on the same pages.

    python benchmarks/bench_batch.py [--pages 3000] [--seed 7] [--threshold 0.3] [--jobs 2]

Pages: ~600-word plain-text news pages cut from the synthetic corpus (so copies stay copies). Each
stage is timed over all pages in a separate pass (parse = JSON + validation + text extraction +
normalisation + boilerplate filter; shingle = shingles and the lead's tagged copies; signature =
minhash + band keys; index = query, verify, decide, insert), then the whole batch path is timed
end to end from JSON lines to decision lines. The datasketch pipeline gets the same normalised
text, makes the same stop-word shingles in plain Python, and runs MinHash(num_perm=128) +
MinHashLSH(threshold) query-then-insert.
Everything runs on one core, in one process, in the same run, except the last row: the end-to-end
path again with ``--jobs`` processes preparing and signing pages (``dedup --jobs``).
"""

from __future__ import annotations

import argparse
import io
import platform
import sys
import time
import tracemalloc

import numpy as np
import orjson

from stream_lsh.batch import DEFAULT_BATCH_SIZE, RejectSink, run_batch
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.lead import with_lead
from stream_lsh.core.page import page_from_dict
from stream_lsh.core.prepare import SignedPage
from stream_lsh.core.shingles import tokenize
from stream_lsh.core.stopwords import StopWordLists
from stream_lsh.core.text import html_to_text
from stream_lsh.synthetic import generate_corpus

WORDS = 600


def text_pages(count: int, seed: int) -> list[bytes]:
    """JSON lines of ~600-word English text pages (long synthetic pages cut to 600 words).

    English only, so that the datasketch side can use one stop-word set without a language step.
    """
    lines: list[bytes] = []
    for record in generate_corpus(count * 5, seed).pages:
        if (record.get("lang") or record.get("language")) != "en":
            continue
        body = record.get("text") or record.get("maintext") or html_to_text(record.get("html", ""))
        kept, words = [], 0
        for line in body.splitlines():
            if words >= WORDS:
                break
            kept.append(line)
            words += len(line.split())
        if words >= WORDS * 0.95:
            lines.append(
                orjson.dumps(
                    {
                        "id": record["id"],
                        "text": "\n".join(kept),
                        "source": record.get("source") or record.get("source_domain"),
                        "published_at": record.get("published_at"),
                        "lang": "en",
                    }
                )
            )
        if len(lines) == count:
            return lines
    raise SystemExit(f"only {len(lines)} long English pages in the corpus; ask for fewer")


def timed(label: str, function, items, results: dict) -> list:
    started = time.perf_counter()
    out = [function(item) for item in items]
    results[label] = time.perf_counter() - started
    return out


def stages(lines: list[bytes], config: DedupConfig, batch_size: int = DEFAULT_BATCH_SIZE) -> dict[str, float]:
    """Seconds per stage for stream-lsh over all pages, in micro-batches as the batch runner does."""
    engine = Deduplicator(config)
    preparer = engine.preparer
    seconds = dict.fromkeys(["parse", "shingle", "signature", "index"], 0.0)
    for low in range(0, len(lines), batch_size):
        clock = time.perf_counter()
        pages = [page_from_dict(orjson.loads(raw)) for raw in lines[low : low + batch_size]]
        prepared = [
            engine.prepare(page, engine.file_clock.tick(page.date, page.site), learn=True) for page in pages
        ]
        t0 = time.perf_counter()
        plain = preparer.shingler.shingle_batch([p.text for p in prepared], [p.lang for p in prepared])
        batch = with_lead(plain, config.lead_share, [p.lead_at for p in prepared])
        t1 = time.perf_counter()
        signatures = preparer.minhasher.signatures(batch.values, batch.offsets)
        keys = preparer.banding.band_keys(signatures)
        counts = plain.counts()
        signed = [
            SignedPage(p, signatures[i], keys[i], None)
            if counts[i] >= config.min_shingles
            else SignedPage(p, None, None, None)
            for i, p in enumerate(prepared)
        ]
        t2 = time.perf_counter()
        for page in signed:
            engine.process_signed(page)
        t3 = time.perf_counter()
        seconds["parse"] += t0 - clock
        seconds["shingle"] += t1 - t0
        seconds["signature"] += t2 - t1
        seconds["index"] += t3 - t2
    return seconds


def forget_sentences() -> None:
    """Empty the caches of each sentence's names and slots, so that a pass over pages the stage
    pass read does not find their article sentences there (a site's chrome repeats; a story's
    sentences do not)."""
    try:
        from stream_lsh.core.names import _hashed
    except ImportError:  # a checkout from before names were kept, run for comparison
        return
    _hashed.cache_clear()
    try:
        from stream_lsh.core.wording import _slots
    except ImportError:  # ... or before their wording was
        return
    _slots.cache_clear()


def end_to_end(lines: list[bytes], config: DedupConfig, jobs: int = 1) -> tuple[float, int]:
    engine = Deduplicator(config)
    out = io.BytesIO()
    summary = run_batch(lines, engine, out=out, rejects=RejectSink(io.BytesIO), jobs=jobs)
    return summary.seconds, summary.duplicates


def memory_per_page(lines: list[bytes], config: DedupConfig) -> float:
    """Bytes of Python heap held per indexed page: index entries, buckets, learner state.

    The engine is built before the first snapshot, so its fixed tables (stop words, the 16 MB
    word-hash cache) are not counted; neither is the table of powers used for word pre-hashes
    (sized to the largest batch), and the word cache is emptied of what the run put in it.
    """
    engine = Deduplicator(config)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    run_batch(lines, engine, out=io.BytesIO(), rejects=RejectSink(io.BytesIO))
    hasher = engine.preparer.shingler.hasher
    hasher._by_text.clear()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    fixed = hasher._powers.up.nbytes + hasher._powers.down.nbytes
    return (grown - fixed) / max(1, len(engine.index))


def datasketch_pipeline(lines: list[bytes], threshold: float, num_perm: int) -> tuple[float, int]:
    """Same pages, same normalised text and stop-word shingles, datasketch MinHash + MinHashLSH."""
    from datasketch import MinHash, MinHashLSH

    engine = Deduplicator(DedupConfig(boilerplate=False))
    english = set(StopWordLists.load(("en",)).words["en"])
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    duplicates = 0
    started = time.perf_counter()
    for raw in lines:
        page = page_from_dict(orjson.loads(raw))
        text = engine.prepare(page, None).text
        tokens = tokenize(text)
        shingles = {
            " ".join(tokens[i : i + 3]).encode() for i in range(len(tokens) - 2) if tokens[i] in english
        }
        if len(shingles) < 5:
            continue
        minhash = MinHash(num_perm=num_perm)
        minhash.update_batch(list(shingles))
        if lsh.query(minhash):
            duplicates += 1
        lsh.insert(page.id, minhash)
    return time.perf_counter() - started, duplicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--threshold", type=float, default=DedupConfig().threshold)
    parser.add_argument(
        "--jobs",
        type=int,
        default=2,
        help="also time the end-to-end path with this many signing processes (dedup --jobs); 1: not",
    )
    args = parser.parse_args()
    config = DedupConfig(threshold=args.threshold)
    lines = text_pages(args.pages, args.seed)
    words = np.mean([len(orjson.loads(line)["text"].split()) for line in lines])
    print(
        f"# {len(lines)} text pages, {words:.0f} words on average; Python {platform.python_version()}, "
        f"numpy {np.__version__}, {platform.machine()}"
    )
    end_to_end(text_pages(200, args.seed + 1), config)  # warm-up on other pages: imports, tables
    forget_sentences()
    seconds = stages(lines, config)
    total_stages = sum(seconds.values())
    print(f"{'stage':10s} {'µs/page':>9s} {'share':>6s}")
    for stage, value in seconds.items():
        print(f"{stage:10s} {value / len(lines) * 1e6:9.1f} {value / total_stages:6.1%}")
    forget_sentences()
    e2e, dups = end_to_end(lines, config)
    ds, ds_dups = datasketch_pipeline(lines, args.threshold, config.num_perm)
    ours = len(lines) / e2e
    theirs = len(lines) / ds
    print(f"stream-lsh end to end : {ours:8,.0f} pages/s  ({e2e:.2f} s, {dups} duplicates)")
    print(f"datasketch pipeline   : {theirs:8,.0f} pages/s  ({ds:.2f} s, {ds_dups} pages with candidates)")
    print(f"ratio                 : {ours / theirs:8.1f}x")
    if args.jobs > 1:
        forget_sentences()
        parallel, parallel_dups = end_to_end(lines, config, args.jobs)
        assert parallel_dups == dups, f"{args.jobs} processes found {parallel_dups} duplicates, one {dups}"
        print(
            f"stream-lsh, --jobs {args.jobs}  : {len(lines) / parallel:8,.0f} pages/s  ({parallel:.2f} s, "
            f"{e2e / parallel:.2f}x one process, pool start included)"
        )
    print(
        f"memory per indexed page: {memory_per_page(lines, config) / 1024:.2f} KiB "
        "(index + learner, tracemalloc)"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
