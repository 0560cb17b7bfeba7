"""Verification (stream_lsh.core.verification): Jaccard similarity and containment, and the rule."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.minhash import MinHasher, signature_matrix
from stream_lsh.core.verification import MIN_SHARE, Verification, estimate, measure, measure_sets, of_sets

# MMDS Fig. 3.2 / Example 3.8: rows a..e = 0..4
S1, S3, S4 = {0, 3}, {1, 3, 4}, {0, 2, 3}


def _all_permutations(sets):
    """The signature matrix over every permutation of the 5 rows: the estimator's expectation."""
    functions = [lambda x, p=p: p[x] for p in itertools.permutations(range(5))]
    return signature_matrix(sets, functions, rows=5).T  # one signature per set


def test_over_every_permutation_the_estimates_are_the_true_jaccard_and_containment():
    """MMDS sec. 3.3.3 says agreement over all permutations is the Jaccard similarity; the same
    row-by-row comparison splits the union, so its containment is exact too."""
    s1, s3, s4 = _all_permutations([S1, S3, S4])
    jaccard, containment = estimate(s1, s4[None, :])
    assert jaccard[0] == pytest.approx(2 / 3) and containment[0] == pytest.approx(1.0)  # S1 inside S4
    jaccard, containment = estimate(s3, s4[None, :])
    assert jaccard[0] == pytest.approx(1 / 5) and containment[0] == pytest.approx(1 / 3)  # {d} of 3


def test_over_every_permutation_the_shares_are_exact():
    """The share of each set in the other, from the same split of the union: S1 = {a, d} lies
    whole in S4 = {a, c, d}, which lies 2/3 in S1."""
    s1, s3, s4 = _all_permutations([S1, S3, S4])
    _, _, of_page, of_other = measure(s1, s4[None, :])
    assert of_page[0] == pytest.approx(1.0) and of_other[0] == pytest.approx(2 / 3)
    _, _, of_page, of_other = measure(s3, np.stack([s4, s3]))
    assert of_page == pytest.approx([1 / 3, 1.0]) and of_other == pytest.approx([1 / 3, 1.0])
    a, b = np.array(sorted(S1), np.uint64), np.array(sorted(S4), np.uint64)
    _, _, of_page, of_other = measure_sets(a, [b, np.zeros(0, np.uint64), None])
    assert of_page == pytest.approx([1.0, 0.0, 0.0]) and of_other == pytest.approx([2 / 3, 0.0, 0.0])


def test_the_estimated_shares_give_a_teasers_size_against_its_story():
    """A quarter-size teaser inside its story: the ratio of the two shares is the size ratio."""
    rng = np.random.default_rng(5)
    teaser, story = _pair(rng, 250, 1000, 250)
    hasher = MinHasher(128, seed=3)
    _, _, of_page, of_other = measure(hasher.signature(story), hasher.signature(teaser)[None, :])
    assert of_other[0] == pytest.approx(1.0)
    assert of_page[0] / of_other[0] == pytest.approx(0.25, abs=0.1)


def test_exact_resemblance_of_sets():
    a, b = np.array(sorted(S1), np.uint64), np.array(sorted(S4), np.uint64)
    assert of_sets(a, b) == pytest.approx((2 / 3, 1.0))
    assert of_sets(a, np.zeros(0, np.uint64)) == (0.0, 0.0)


def test_a_page_too_small_to_judge_reports_its_jaccard_similarity_as_containment():
    """A 10-shingle page inside a 1,000-shingle page: containment is not judged below MIN_SHARE."""
    big = np.arange(1, 1001, dtype=np.uint64)
    small = big[:10]
    assert of_sets(small, big) == pytest.approx((0.01, 0.01))
    hasher = MinHasher(128, seed=3)
    jaccard, containment = estimate(hasher.signature(_spread(small)), hasher.signature(_spread(big)))
    assert containment[0] == jaccard[0] < MIN_SHARE


def _spread(values: np.ndarray) -> np.ndarray:
    """Shingle hashes are uniformly spread 64-bit values; small integers are not."""
    return (values * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(0xD6E8FEB86659FD93)


def _pair(rng: np.random.Generator, smaller: int, larger: int, shared: int) -> tuple[np.ndarray, np.ndarray]:
    union = rng.integers(1, 2**63, size=smaller + larger - shared, dtype=np.uint64)
    return union[:smaller], np.concatenate([union[:shared], union[smaller:]])


@pytest.mark.parametrize(
    "smaller, larger, shared",
    [(30, 120, 27), (42, 120, 38), (100, 200, 50), (100, 300, 35), (90, 130, 80), (12, 40, 11)],
    ids=["teaser-25%", "teaser-35%", "quote-50%", "quote-35%", "trimmed-copy", "short-teaser"],
)
def test_containment_from_signatures_is_unbiased_and_tighter_than_from_set_sizes(smaller, larger, shared):
    """Measured over 300 pairs: mean error < 0.02, spread within 25% of the binomial over the
    rows the smaller page holds, and no wider than the estimate J(|A|+|B|)/((1+J)|A|) from the
    Jaccard estimate and the set sizes (the alternative the module doc rejects)."""
    rng = np.random.default_rng(smaller * 1000 + shared)
    hasher = MinHasher(128, seed=11)
    true = shared / smaller
    ours, from_sizes = [], []
    for _ in range(300):
        a, b = _pair(rng, smaller, larger, shared)
        jaccard, containment = estimate(hasher.signature(a), hasher.signature(b))
        ours.append(containment[0])
        j = jaccard[0]
        from_sizes.append(j * (smaller + larger) / ((1 + j) * smaller))
    union = smaller + larger - shared
    binomial = np.sqrt(true * (1 - true) / (128 * smaller / union))
    assert abs(np.mean(ours) - true) < 0.02
    assert np.std(ours) <= 1.25 * binomial + 1e-9
    assert np.std(ours) <= np.std(from_sizes) * 1.05


@settings(max_examples=60, deadline=None)
@given(st.integers(5, 400), st.integers(5, 400), st.floats(0, 1), st.integers(0, 2**32))
def test_estimates_are_probabilities_and_containment_is_at_least_jaccard(size_a, size_b, share, seed):
    rng = np.random.default_rng(seed)
    shared = int(share * min(size_a, size_b))
    a, b = _pair(rng, size_a, size_b, shared)
    hasher = MinHasher(64, seed=seed % 1000)
    jaccard, containment = estimate(hasher.signature(a), hasher.signature(b))
    assert 0.0 <= jaccard[0] <= containment[0] <= 1.0
    exact = of_sets(np.sort(a), np.sort(b))
    assert 0.0 <= exact.jaccard <= exact.containment <= 1.0


def test_estimates_are_symmetric():
    rng = np.random.default_rng(5)
    a, b = _pair(rng, 40, 160, 36)
    hasher = MinHasher(128, seed=2)
    sa, sb = hasher.signature(a), hasher.signature(b)
    assert estimate(sa, sb) == estimate(sb, sa)


def test_signature_lengths_must_agree():
    with pytest.raises(ValueError, match="lengths differ"):
        estimate(np.zeros(4, np.uint32), np.zeros((1, 8), np.uint32))


def test_the_rule_names_the_measure_that_matched():
    rule = Verification(0.5, 0.8)
    assert rule.match(0.6, 0.7) == "jaccard"
    assert rule.match(0.3, 0.9) == "containment"
    assert rule.match(0.3, 0.5) is None
    assert Verification(0.5).match(0.3, 1.0) is None  # containment off


@pytest.mark.parametrize("jaccard, containment", [(0.0, 0.8), (1.0, 0.8), (0.5, 0.0), (0.5, 1.5)])
def test_thresholds_are_validated(jaccard, containment):
    with pytest.raises(ValueError, match=r"threshold|containment"):
        Verification(jaccard, containment)


def test_candidates_must_reach_teasers_a_quarter_of_their_story():
    """A page a quarter the size of another, contained to 0.8, has J = 0.2/1.05."""
    assert Verification(0.5, 0.8).lowest_jaccard() == pytest.approx(0.2 / 1.05)
    assert Verification(0.3).lowest_jaccard() == 0.3
    assert Verification(0.1, 0.8).lowest_jaccard() == 0.1
