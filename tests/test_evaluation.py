"""Pair-counting scores: hand-computed examples, textbook ARI values, and properties."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.evaluation import PairScores, pair_scores, predicted_clusters


def _partition(labels: str) -> dict[str, str]:
    """'aabc' -> {'p0': 'a', 'p1': 'a', 'p2': 'b', 'p3': 'c'}: compact test fixtures."""
    return {f"p{i}": label for i, label in enumerate(labels)}


def _brute_force(truth: dict[str, str], predicted: dict[str, str]) -> tuple[int, int, int, float]:
    """Pair counts and ARI by enumerating every pair: the definition the fast path must match.

    ARI from the 2x2 pair table (Hubert & Arabie's pair-counting form):
    2 (ad - bc) / ((a + b)(b + d) + (a + c)(c + d)), a = together in both, d = apart in both.
    """
    a = b = c = d = 0
    for x, y in combinations(sorted(truth), 2):
        same_true, same_pred = truth[x] == truth[y], predicted[x] == predicted[y]
        a += same_true and same_pred
        b += same_true and not same_pred
        c += same_pred and not same_true
        d += not same_true and not same_pred
    denominator = (a + b) * (b + d) + (a + c) * (c + d)
    ari = 2 * (a * d - b * c) / denominator if denominator else 1.0
    return a + b, a + c, a, ari


def test_hand_computed_example() -> None:
    # truth: {p0,p1,p2} {p3,p4} {p5}      -> true pairs 3 + 1 + 0 = 4
    # pred:  {p0,p1} {p2,p3,p4} {p5}      -> predicted pairs 1 + 3 + 0 = 4
    # both:  (p0,p1) and (p3,p4)          -> correct pairs 2
    # precision = 2/4, recall = 2/4, F1 = 0.5
    # N = C(6,2) = 15; expected = 4*4/15 = 16/15; max = (4+4)/2 = 4
    # ARI = (2 - 16/15) / (4 - 16/15) = (14/15) / (44/15) = 14/44 = 7/22
    scores = pair_scores(_partition("aaabbc"), _partition("xxyyyz"))
    assert scores == PairScores(
        precision=0.5,
        recall=0.5,
        f1=0.5,
        ari=pytest.approx(7 / 22),
        true_pairs=4,
        predicted_pairs=4,
        correct_pairs=2,
        pages=6,
    )


def test_textbook_values() -> None:
    # {p0,p1}{p2,p3} vs {p0,p1}{p2}{p3}: N = 6, T = 2, P = 1, index = 1
    # expected = 2*1/6 = 1/3, max = 3/2 -> ARI = (2/3) / (7/6) = 4/7 (the value sklearn documents)
    assert pair_scores(_partition("aabb"), _partition("aabc")).ari == pytest.approx(4 / 7)
    # {p0,p1}{p2,p3} vs {p0,p2}{p1,p3}: index 0, expected 4/6, max 2 -> ARI = -(2/3) / (4/3) = -1/2
    assert pair_scores(_partition("aabb"), _partition("abab")).ari == pytest.approx(-0.5)


def test_precision_and_recall_count_pairs_not_pages() -> None:
    # truth: one cluster of 4 (6 pairs); pred splits it 2+2 (2 pairs, both right)
    scores = pair_scores(_partition("aaaa"), _partition("xxyy"))
    assert (scores.precision, scores.recall) == (1.0, pytest.approx(2 / 6))
    assert scores.f1 == pytest.approx(2 * 1.0 * (1 / 3) / (1 + 1 / 3))  # = 0.5


def test_identical_partitions_score_one() -> None:
    for labels in ("aabbbc", "abcdef", "aaaaaa", "a", ""):
        scores = pair_scores(_partition(labels), _partition(labels))
        assert (scores.precision, scores.recall, scores.f1, scores.ari) == (1.0, 1.0, 1.0, 1.0)


def test_degenerate_conventions() -> None:
    # all singletons predicted, truth has pairs: nothing predicted -> precision 1, recall 0
    scores = pair_scores(_partition("aab"), _partition("xyz"))
    assert (scores.precision, scores.recall, scores.f1) == (1.0, 0.0, 0.0)
    # truth all singletons, one predicted pair: no true pairs -> recall 1, precision 0
    scores = pair_scores(_partition("abc"), _partition("xxz"))
    assert (scores.precision, scores.recall, scores.f1) == (0.0, 1.0, 0.0)
    # all-singletons vs one cluster: ARI 0 (index equals its expectation)
    assert pair_scores(_partition("abcd"), _partition("xxxx")).ari == 0.0


def test_relabelling_does_not_change_scores() -> None:
    truth = _partition("aaabbcddde")
    predicted = _partition("xxyyyzzwwv")
    renamed = {page: f"cluster-{ord(label) * 7919}" for page, label in predicted.items()}
    assert pair_scores(truth, renamed) == pair_scores(truth, predicted)


def test_mismatched_ids_are_named() -> None:
    with pytest.raises(ValueError, match=r"only in truth, e\.g\. \['p2'\].*only in predicted.*'q9'"):
        pair_scores(_partition("aab"), {"p0": "x", "p1": "x", "q9": "y"})


def test_scales_without_enumerating_pairs() -> None:
    # 200,000 pages: 2e10 pairs, impossible to enumerate; the table has a few thousand cells.
    pages = 200_000
    truth = {f"p{i}": f"t{i // 50}" for i in range(pages)}
    predicted = {f"p{i}": f"q{i // 100}" for i in range(pages)}
    scores = pair_scores(truth, predicted)
    assert scores.true_pairs == 4_000 * 1_225 and scores.predicted_pairs == 2_000 * 4_950
    assert scores.correct_pairs == scores.true_pairs and scores.precision == pytest.approx(0.4949, abs=1e-4)


def test_predicted_clusters_from_decision_records() -> None:
    truth = {"a": "s1", "b": "s1", "c": "s2", "d": "s3", "e": "s4"}
    records = [
        {"id": "a", "status": "unique", "cluster_id": "a", "duplicate_of": None},
        {"id": "b", "status": "duplicate", "cluster_id": "a", "duplicate_of": "a"},
        {"id": "c", "status": "no_content", "cluster_id": None, "duplicate_of": None},
        {"id": "d", "status": "unique", "cluster_id": "c"},  # a cluster id that equals another page's id
    ]  # "e" was rejected: no record
    predicted = predicted_clusters(records, truth)
    assert predicted.keys() == truth.keys()
    assert predicted["a"] == predicted["b"] == "a"
    assert len({predicted["c"], predicted["d"], predicted["e"], "a"}) == 4  # alone, not merged by name
    scores = pair_scores(truth, predicted)
    assert (scores.precision, scores.recall, scores.ari) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="only in predicted"):
        pair_scores(truth, predicted_clusters([*records, {"id": "zz", "cluster_id": "a"}], truth))


@st.composite
def _partition_pairs(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str]]:
    size = draw(st.integers(min_value=0, max_value=30))
    label = st.integers(min_value=0, max_value=5)
    first = draw(st.lists(label, min_size=size, max_size=size))
    second = draw(st.lists(label, min_size=size, max_size=size))
    return ({f"p{i}": f"t{x}" for i, x in enumerate(first)}, {f"p{i}": f"q{x}" for i, x in enumerate(second)})


@settings(max_examples=200, deadline=None)
@given(_partition_pairs())
def test_scores_stay_in_range(pair: tuple[dict[str, str], dict[str, str]]) -> None:
    scores = pair_scores(*pair)
    for value in (scores.precision, scores.recall, scores.f1):
        assert 0.0 <= value <= 1.0
    assert -1.0 <= scores.ari <= 1.0 + 1e-12


@settings(max_examples=200, deadline=None)
@given(_partition_pairs())
def test_swapping_truth_and_prediction_swaps_precision_and_recall(
    pair: tuple[dict[str, str], dict[str, str]],
) -> None:
    truth, predicted = pair
    forward, backward = pair_scores(truth, predicted), pair_scores(predicted, truth)
    assert (backward.precision, backward.recall) == (forward.recall, forward.precision)
    assert backward.f1 == pytest.approx(forward.f1)
    assert backward.ari == pytest.approx(forward.ari)
    assert (backward.true_pairs, backward.predicted_pairs) == (forward.predicted_pairs, forward.true_pairs)


@settings(max_examples=200, deadline=None)
@given(_partition_pairs())
def test_contingency_table_matches_pair_enumeration(pair: tuple[dict[str, str], dict[str, str]]) -> None:
    truth, predicted = pair
    scores = pair_scores(truth, predicted)
    true_pairs, predicted_pairs, correct, ari = _brute_force(truth, predicted)
    assert (scores.true_pairs, scores.predicted_pairs, scores.correct_pairs) == (
        true_pairs,
        predicted_pairs,
        correct,
    )
    assert scores.ari == pytest.approx(ari)


def test_repeated_decisions_are_grouped_per_page_and_the_differing_ones_named():
    from stream_lsh.evaluation import decisions_by_page, repeats_that_differ

    records = [
        {"id": "a", "status": "unique", "cluster_id": "a", "duplicate_of": None, "similarity": None},
        {"id": "b", "status": "duplicate", "cluster_id": "a", "duplicate_of": "a", "similarity": 0.9},
        {"id": "a", "status": "unique", "cluster_id": "a", "duplicate_of": None, "similarity": None},
        {"id": "b", "status": "duplicate", "cluster_id": "a", "duplicate_of": "a", "similarity": 0.8},
        {"id": "c", "status": "unique", "cluster_id": "c", "duplicate_of": None},
        {"id": "c", "status": "duplicate", "cluster_id": "a", "duplicate_of": "b"},
    ]
    by_page = decisions_by_page(records)
    assert [len(by_page[k]) for k in "abc"] == [2, 2, 2] and by_page["b"][1]["similarity"] == 0.8
    assert repeats_that_differ(by_page) == {"c": [("unique", "c", None), ("duplicate", "a", "b")]}
