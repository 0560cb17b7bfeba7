"""Regression floor on generated news: the defaults must keep finding copies across sites
and keep different stories of one site apart, with site-wide prose on every page, in pseudo-words
and in real English news prose, in the page shapes real feeds send (stream_lsh.synthetic.shapes).
The real prose is fetched from PyPI on first use (stream_lsh.synthetic.real_prose)."""

from __future__ import annotations

import io

import orjson
import pytest

from stream_lsh.batch import DecisionRecords, RejectSink, run_batch
from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.evaluation import pair_scores, predicted_clusters
from stream_lsh.synthetic import Shapes, generate_corpus

HARD_CASES = {"teasers": 0.06, "quotes": 0.06, "short_stories": 0.1}
EVERY_SHAPE = Shapes.parse(["one-line", "fixed-list", "div-only", "trimmed", "cold-sites"])
REAL_PROSE = {"pages": 600, "prose": "real"}


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
    assert s.f1 >= 0.99, s  # measured 0.9951; the run is deterministic
    assert s.precision >= 0.995 and s.recall >= 0.98, s  # 1.0, 0.9902


@pytest.mark.slow
def test_with_teasers_and_quotes_containment_finds_the_teasers_jaccard_alone_misses():
    """6% teasers (duplicates of their story), 6% quoting pages (not duplicates), short stories."""
    defaults = scores(DedupConfig(), **HARD_CASES)
    assert defaults.f1 >= 0.985, defaults  # measured 0.9927
    assert defaults.precision >= 0.99 and defaults.recall >= 0.98, defaults  # 0.9988, 0.9867
    jaccard_alone = scores(DedupConfig(containment=None), **HARD_CASES)
    # measured 0.9637 (0.9458 before a story joined another site's earlier page with its
    # headline, which joins some stories to the teaser that came first under either setting)
    assert jaccard_alone.recall < defaults.recall - 0.015, jaccard_alone


@pytest.mark.slow
def test_boilerplate_learning_is_what_carries_the_site_prose_case():
    # measured 0.593 (0.49 before the fuller-member check kept some site-prose matches apart),
    # against 0.995 with learning
    assert scores(DedupConfig(boilerplate=False)).f1 < 0.7


@pytest.mark.slow
def test_every_shape_at_once_keeps_stories_apart():
    """One-line bodies, a fixed list of headlines in the body, HTML of <div>s alone, copies
    trimmed to 55-100% with teasers and quotes of them, sites whose first pages come first."""
    s = scores(DedupConfig(), shapes=EVERY_SHAPE, **HARD_CASES)
    assert s.precision >= 0.99 and s.f1 >= 0.98, s  # measured 0.9945, 0.9924


@pytest.mark.slow
def test_real_prose_in_every_shape_keeps_stories_apart():
    s = scores(DedupConfig(), shapes=EVERY_SHAPE, **HARD_CASES, **REAL_PROSE)
    assert s.precision >= 0.99 and s.f1 >= 0.98, s  # measured 0.9936, 0.9892


@pytest.mark.slow
def test_the_lead_keeps_quotes_of_trimmed_copies_apart():
    """Real prose, copies trimmed to 55-100%, pages quoting them: without the lead counting twice,
    a quote holds most of a trimmed copy and joins its story. Since pages are named apart
    (core/names.py), a quote that names other people than its story's is kept apart without the
    lead too, and on some seeds (11) the lead no longer changes precision; on seeds 4-8 it is
    1.0/1.0/1.0/0.9988/0.9989 with the lead, 0.990/0.9941/0.9952/0.9951/0.9966 without."""
    trimmed = {"shapes": Shapes(trimmed=True), **HARD_CASES, **REAL_PROSE}
    with_lead = scores(DedupConfig(), seed=4, **trimmed)
    without = scores(DedupConfig(lead_share=0.0), seed=4, **trimmed)
    assert with_lead.precision >= 0.995 > without.precision, (with_lead, without)  # 1.0, 0.990


@pytest.mark.slow
def test_digests_in_real_prose_stay_apart_from_the_stories_they_list():
    """Newsletters of the day's stories hold a teaser of each; the fuller-member check keeps most
    of them out of those stories' clusters (stream_lsh.core.fuller): precision 0.9753 without it."""
    s = scores(DedupConfig(), **HARD_CASES, digests=0.03, **REAL_PROSE)
    assert s.precision >= 0.98 and s.f1 >= 0.96, s  # measured 0.9987, 0.9898
