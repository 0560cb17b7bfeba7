"""Verification: how much two pages resemble each other, and whether that makes one a copy.

Two measures, because news has two kinds of copy that one Jaccard threshold cannot serve:

* **Jaccard similarity** ``|A∩B| / |A∪B|`` (MMDS sec. 3.1.1): edited copies of one story.
* **Containment** ``|A∩B| / min(|A|, |B|)``: how much of the smaller page lies in the larger one.
  A teaser or excerpt (the first quarter of a story) is all but contained in the full story,
  while its Jaccard similarity with it is only about 0.25; a page quoting a long passage of
  another shares 20-50% of its own words, and no more of the other's.

A pair is a match when its Jaccard similarity reaches the Jaccard threshold (``match
"jaccard"``), or else its containment reaches the containment threshold (``match
"containment"``). Containment is only judged when the smaller page holds at least
:data:`MIN_SHARE` of the two pages' union: below that the signatures hold too few of its
shingles to estimate it, and a page an eighth the size of another is a mention, not a copy.
Then its containment is reported as the Jaccard similarity, which is always a lower bound of it.

**Estimating containment from signatures alone.** Row i of a minhash signature is the minimum
of one hash function over the page's shingles, so comparing two signatures row by row says where
the minimum over the union ``A∪B`` lies: in both pages (the rows are equal, chance
``|A∩B|/|A∪B|``), only in A (A's row is lower, chance ``|A∖B|/|A∪B|``) or only in B. Counted
over n rows these split the union three ways, and the containment of A in B is
``equal / (equal + only_A)``, the share of A's rows in which B agrees. Nothing but the two
signatures is needed, so band tables keep nothing new. It is binomial over the ``n·|A|/|A∪B|``
rows A holds: for a teaser a quarter of its story's size, at n = 128, a spread of 0.05, less
than half that of the estimate from the Jaccard estimate and the two shingle-set sizes,
``J(|A|+|B|)/((1+J)|A|)`` (0.12); for pages of equal size the two are alike
(``tests/test_verification.py`` measures both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np

__all__ = [
    "CONTAINMENT",
    "JACCARD",
    "MIN_SHARE",
    "Measures",
    "Resemblance",
    "Verification",
    "estimate",
    "measure",
    "measure_sets",
    "of_sets",
]

JACCARD: Final = "jaccard"
CONTAINMENT: Final = "containment"

#: The smaller page must hold at least this share of the pair's union for containment to count.
MIN_SHARE: Final = 1 / 8


class Resemblance(NamedTuple):
    """How alike two pages are: the Jaccard similarity and the containment of the smaller one."""

    jaccard: float
    containment: float


class Measures(NamedTuple):
    """One page against each of several others, one value per other in each list: the Jaccard
    similarity, the containment of the smaller page, the share of the page that lies in the other
    (``|A∩B|/|A|``) and the share of the other that lies in the page (``|A∩B|/|B|``)."""

    jaccard: list[float]
    containment: list[float]
    of_page: list[float]
    of_other: list[float]


def measure(signature: np.ndarray, others: np.ndarray) -> Measures:
    """The :class:`Measures` of one signature against each row of ``others``, estimated from the
    rows (see the module doc): the share of A that lies in B is ``equal / (equal + only_A)``, and
    the ratio of the two shares is the ratio of the two sizes, which the fuller-member check
    (:mod:`.fuller`) needs to tell a page that holds a teaser from the story.

    The two row counts are numpy's; the rest is plain arithmetic, since a page has few candidates
    and small-array numpy calls would cost more than they save."""
    others = np.atleast_2d(others)
    n = signature.shape[0]
    if others.shape[1] != n:
        raise ValueError(f"signature lengths differ: {n} vs {others.shape[1]}")
    equal_rows = np.count_nonzero(others == signature, axis=1).tolist()
    page_rows = np.count_nonzero(others > signature, axis=1).tolist()  # the minimum is in the page alone
    judged_from = MIN_SHARE * n
    found = Measures([], [], [], [])
    for equal, only_page in zip(equal_rows, page_rows):
        only_other = n - equal - only_page
        smaller_rows = equal + min(only_page, only_other)  # the rows the smaller page holds
        found.jaccard.append(equal / n)
        found.containment.append(equal / smaller_rows if smaller_rows >= judged_from else equal / n)
        found.of_page.append(equal / (equal + only_page) if equal else 0.0)
        found.of_other.append(equal / (equal + only_other) if equal else 0.0)
    return found


def estimate(signature: np.ndarray, others: np.ndarray) -> tuple[list[float], list[float]]:
    """(Jaccard estimates, containment estimates) of one signature against each row of ``others``:
    the first two of its :func:`measure`."""
    found = measure(signature, others)
    return found.jaccard, found.containment


def measure_sets(page: np.ndarray, others: Sequence[np.ndarray | None]) -> Measures:
    """The exact :class:`Measures` of a set of distinct shingle hashes against each of ``others``
    (a missing set shares nothing), each intersection counted once: the twin of :func:`measure`
    for exact verification."""
    found = Measures([], [], [], [])
    for other in others:
        values = _exact(page, other if other is not None else np.zeros(0, np.uint64))
        for column, value in zip(found, values, strict=True):
            column.append(value)
    return found


def of_sets(a: np.ndarray, b: np.ndarray) -> Resemblance:
    """Exact Jaccard similarity and containment of two sets of distinct shingle hashes."""
    jaccard, containment, _, _ = _exact(a, b)
    return Resemblance(jaccard, containment)


def _exact(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, float]:
    """Jaccard similarity, containment of the smaller set, and the share of each set in the other,
    of two sets of distinct hashes (the containment rule of the module doc, as :func:`measure`)."""
    if a.size == 0 or b.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    shared = np.intersect1d(a, b, assume_unique=True).size
    union = a.size + b.size - shared
    smaller = min(a.size, b.size)
    jaccard = shared / union
    containment = shared / smaller if smaller >= MIN_SHARE * union else jaccard
    return jaccard, containment, shared / a.size, shared / b.size


@dataclass(frozen=True)
class Verification:
    """The rule that makes a candidate a match.

    Args:
        jaccard: Jaccard similarity from which a pair matches, in (0, 1).
        containment: containment from which a pair matches, in (0, 1]; None judges by Jaccard
            similarity alone.
    """

    jaccard: float
    containment: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.jaccard < 1.0:
            raise ValueError(f"threshold must be in (0, 1), got {self.jaccard!r}")
        if self.containment is not None and not 0.0 < self.containment <= 1.0:
            raise ValueError(f"containment must be in (0, 1] or None, got {self.containment!r}")

    def match(self, jaccard: float, containment: float) -> str | None:
        """``"jaccard"``, ``"containment"`` or None: which measure makes the pair a match."""
        if jaccard >= self.jaccard:
            return JACCARD
        if self.containment is not None and containment >= self.containment:
            return CONTAINMENT
        return None

    def lowest_jaccard(self, share: float = 1 / 4) -> float:
        """The lowest Jaccard similarity of a matching pair whose smaller page is ``share`` of the
        larger one's size: what candidate generation must reach (a teaser is a quarter or more
        of its story). A page contained to ``c`` in one ``1/share`` times its size has
        ``J = c·share / (1 + share − c·share)``."""
        if self.containment is None:
            return self.jaccard
        c = self.containment
        return min(self.jaccard, c * share / (1 + share - c * share))
