"""Regression floor on generated news: the defaults must keep finding copies across sites
and keep different stories of one site apart, with site-wide prose on every page."""

from __future__ import annotations

import io

import orjson
import pytest

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.evaluation import pair_scores, predicted_clusters
from stream_lsh.synthetic import generate_corpus

HARD_CASES = {"teasers": 0.06, "quotes": 0.06, "short_stories": 0.1}


def scores(config: DedupConfig, pages: int = 1500, seed: int = 11, **hard: float):
    corpus = generate_corpus(pages, seed, **hard)
    out = DecisionRecords()
    run_batch(
        [orjson.dumps(p) for p in corpus.pages], Deduplicator(config), out=out, rejects=RejectSink(io.BytesIO)
    )
    return pair_scores(corpus.labels, predicted_clusters(out.records, corpus.labels))


@pytest.mark.slow
def test_defaults_stay_above_the_floor():
    s = scores(DedupConfig())
    assert s.f1 >= 0.99, s  # measured 0.9942; the run is deterministic
    assert s.precision >= 0.99 and s.recall >= 0.98, s


@pytest.mark.slow
def test_with_teasers_and_quotes_containment_finds_the_teasers_jaccard_alone_misses():
    """6% teasers (duplicates of their story), 6% quoting pages (not duplicates), short stories."""
    defaults = scores(DedupConfig(), **HARD_CASES)
    assert defaults.f1 >= 0.975, defaults  # measured 0.979
    assert defaults.precision >= 0.985 and defaults.recall >= 0.965, defaults  # 0.988, 0.970
    jaccard_alone = scores(DedupConfig(containment=None), **HARD_CASES)
    assert jaccard_alone.recall < defaults.recall - 0.03, jaccard_alone  # measured 0.905


@pytest.mark.slow
def test_boilerplate_learning_is_what_carries_the_site_prose_case():
    assert scores(DedupConfig(boilerplate=False)).f1 < 0.5
