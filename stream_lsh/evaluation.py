"""Scoring a clustering of pages against a known one: pairwise precision/recall/F1 and the ARI.

A near-duplicate filter makes one decision per *pair* of pages (same story or not), so the natural
scores count pairs: precision is the share of predicted same-cluster pairs that are truly
same-cluster, recall the share of true pairs that were found. The adjusted Rand index (Hubert &
Arabie, 1985) adds a chance-corrected single number that also rewards getting the many
"different story" pairs right.

Everything is computed from the contingency table (how many pages have true label ``t`` and
predicted label ``p``) with sums of C(n, 2), never by enumerating pairs: a corpus of a few million
pages has ~10^12 pairs, but its contingency table has at most one cell per page. The arithmetic is
done in exact integers and divided once at the end, so scores do not drift with corpus size.

Conventions for degenerate cases (each follows from "nothing to get wrong counts as perfect"):

* no predicted pairs (every page predicted alone): precision is 1.0;
* no true pairs (every page truly alone): recall is 1.0;
* F1 is 0.0 only when precision and recall are both 0.0;
* ARI's denominator vanishes only when both partitions are all singletons or both are one single
  cluster (or there are fewer than two pages); the partitions are then identical and ARI is 1.0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DECIDED_AS",
    "PairScores",
    "decisions_by_page",
    "pair_scores",
    "predicted_clusters",
    "repeats_that_differ",
]

#: How many offending ids a mismatch error names: enough to debug, short enough to log.
_IDS_IN_ERROR = 5
#: Prefix of the label of a page the engine put in no cluster; cluster ids never contain NUL.
_ALONE = "\x00"


@dataclass(frozen=True)
class PairScores:
    """Pair-counting scores of a predicted clustering.

    ``true_pairs``/``predicted_pairs``/``correct_pairs`` are unordered page pairs put in one cluster
    by the truth, by the prediction, and by both; ``pages`` is how many pages were scored.
    """

    precision: float
    recall: float
    f1: float
    ari: float
    true_pairs: int
    predicted_pairs: int
    correct_pairs: int
    pages: int


def _pairs(n: int) -> int:
    """C(n, 2): unordered pairs among ``n`` pages of one cluster."""
    return n * (n - 1) // 2


def _sum_pairs(sizes: Iterable[int]) -> int:
    return sum(_pairs(size) for size in sizes)


def _check_same_ids(truth: Mapping[str, str], predicted: Mapping[str, str]) -> None:
    """Refuse mismatched id sets: scoring only the overlap would silently hide lost pages."""
    if truth.keys() == predicted.keys():
        return
    only_truth = sorted(truth.keys() - predicted.keys())
    only_predicted = sorted(predicted.keys() - truth.keys())
    parts = []
    if only_truth:
        parts.append(f"{len(only_truth)} id(s) only in truth, e.g. {only_truth[:_IDS_IN_ERROR]}")
    if only_predicted:
        parts.append(f"{len(only_predicted)} id(s) only in predicted, e.g. {only_predicted[:_IDS_IN_ERROR]}")
    raise ValueError("truth and predicted cover different pages: " + "; ".join(parts))


def _ratio(numerator: int, denominator: int) -> float:
    """numerator / denominator, with 1.0 for an empty denominator (nothing to get wrong)."""
    return numerator / denominator if denominator else 1.0


def _f1(precision: float, recall: float) -> float:
    total = precision + recall
    return 2 * precision * recall / total if total else 0.0


def _adjusted_rand(correct: int, true_pairs: int, predicted_pairs: int, pages: int) -> float:
    """Hubert & Arabie's ARI, (index - expected) / (max - expected), in exact integers.

    With N = C(pages, 2): expected = T * P / N and max = (T + P) / 2; multiplying numerator and
    denominator by 2N keeps everything integral.
    """
    all_pairs = _pairs(pages)
    numerator = 2 * (correct * all_pairs - true_pairs * predicted_pairs)
    denominator = all_pairs * (true_pairs + predicted_pairs) - 2 * true_pairs * predicted_pairs
    if denominator == 0:
        return 1.0  # only reachable with identical partitions, see the module docstring
    return numerator / denominator


def pair_scores(truth: Mapping[str, str], predicted: Mapping[str, str]) -> PairScores:
    """Score ``predicted`` (page id -> cluster label) against ``truth`` (same shape).

    Labels are only compared for equality within one map, so the two maps may use unrelated
    label names. Both maps must cover the same ids; otherwise ValueError names a few of the
    offending ids.
    """
    _check_same_ids(truth, predicted)
    cells = Counter((label, predicted[page]) for page, label in truth.items())
    true_pairs = _sum_pairs(Counter(truth.values()).values())
    predicted_pairs = _sum_pairs(Counter(predicted.values()).values())
    correct = _sum_pairs(cells.values())
    precision = _ratio(correct, predicted_pairs)
    recall = _ratio(correct, true_pairs)
    return PairScores(
        precision=precision,
        recall=recall,
        f1=_f1(precision, recall),
        ari=_adjusted_rand(correct, true_pairs, predicted_pairs, len(truth)),
        true_pairs=true_pairs,
        predicted_pairs=predicted_pairs,
        correct_pairs=correct,
        pages=len(truth),
    )


def predicted_clusters(records: Iterable[Mapping[str, Any]], truth: Mapping[str, str]) -> dict[str, str]:
    """Page id -> predicted cluster, from the engine's decision records (``id``, ``cluster_id``).

    A page the engine put in no cluster (``no_content``) or never decided on (rejected: no record)
    is alone in its own cluster: it was merged with nothing, which is what pair scores should see.
    ``truth`` supplies the ids of those missing pages; ids that only the records have are kept, so
    :func:`pair_scores` reports them instead of the mismatch going unnoticed.
    """
    predicted: dict[str, str] = {}
    for record in records:
        page_id = str(record["id"])
        cluster = record.get("cluster_id")
        predicted[page_id] = str(cluster) if cluster is not None else _ALONE + page_id
    for page_id in truth:
        predicted.setdefault(page_id, _ALONE + page_id)
    return predicted


#: What a repeated decision must repeat: the fields that say what a page is.
DECIDED_AS = ("status", "cluster_id", "duplicate_of")


def decisions_by_page(records: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Every decision record of each page, in the order they came: a stream sends a decision again
    after a crash, and read from the start, its decisions topic has every one of them."""
    by_page: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        by_page.setdefault(str(record["id"]), []).append(record)
    return by_page


def repeats_that_differ(by_page: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, list[tuple[Any, ...]]]:
    """Pages whose repeated decisions do not all say the same (:data:`DECIDED_AS`), with what each
    of them said: the stream promises none."""
    said = {
        page_id: [tuple(record.get(key) for key in DECIDED_AS) for record in records]
        for page_id, records in by_page.items()
    }
    return {page_id: outcomes for page_id, outcomes in said.items() if len(set(outcomes)) > 1}
