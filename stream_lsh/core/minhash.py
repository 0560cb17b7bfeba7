"""Minhash signatures (MMDS sec. 3.3), vectorised with numpy.

A random permutation of the rows is simulated by a hash function (sec. 3.3.5). Shingle hashes are
uniformly spread 64-bit values (their words' xxh3 hashes, mixed), so each shingle is represented by
its top 32 bits x, and each of the ``n`` functions is an affine map ``h_i(x) = a_i * x + b_i mod
2**32`` with random odd ``a_i``: a bijection of the 32-bit space, two numpy operations on 32-bit
integers for the whole (n x shingles) matrix, which is what keeps signing cheap. Two different
shingles of a page share x with probability 2**-32, too rarely to move an estimate, and a signature
costs 4 bytes per value. The estimator's bias and spread are property-tested.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

__all__ = ["EMPTY_VALUE", "MinHasher", "agreement", "signature_matrix"]

#: Every value of the signature of no shingles.
EMPTY_VALUE = np.uint32(0xFFFFFFFF)
_CHUNK = 8_192  # values per (num_perm x chunk) matrix: 4 MB of uint32 at num_perm = 128


class MinHasher:
    """Computes minhash signatures of ``num_perm`` values from a seed.

    Args:
        num_perm: number of hash functions (signature length), >= 1.
        seed: seeds the hash functions; the same seed always gives the same functions.
    """

    def __init__(self, num_perm: int = 128, seed: int = 1) -> None:
        if not isinstance(num_perm, int) or num_perm < 1:
            raise ValueError(f"num_perm must be a positive integer, got {num_perm!r}")
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.num_perm = num_perm
        self.seed = seed
        rng = np.random.Generator(np.random.PCG64(seed))
        top = np.iinfo(np.uint32).max
        self._a = rng.integers(0, top, size=num_perm, dtype=np.uint32, endpoint=True) | np.uint32(1)
        self._b = rng.integers(0, top, size=num_perm, dtype=np.uint32, endpoint=True)

    def signature(self, shingles: np.ndarray) -> np.ndarray:
        """uint32 signature of one shingle set (uint64 hashes). The empty set gets all-ones."""
        signature: np.ndarray = self.signatures(shingles, np.array([0, shingles.size]))[0]
        return signature

    def signatures(self, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Signatures of many sets at once: set i is ``values[offsets[i]:offsets[i+1]]``.

        Returns a (sets, num_perm) uint32 array; an empty set gets all-ones. Repeated values do
        not change a minimum, so the sets need not be deduplicated. Work is done in chunks of about
        ``_CHUNK`` values so the (num_perm x values) matrix stays small.
        A set with no values gets all-ones; so, with probability 2**-32 per value, does a real minimum.
        """
        counts = np.diff(offsets)
        out = np.full((counts.size, self.num_perm), EMPTY_VALUE, dtype=np.uint32)
        values = (values >> np.uint64(32)).astype(np.uint32)
        filled = np.flatnonzero(counts > 0)
        start = 0
        while start < filled.size:
            stop = start + 1
            while stop < filled.size and offsets[filled[stop] + 1] - offsets[filled[start]] <= _CHUNK:
                stop += 1
            sets = filled[start:stop]
            low, high = offsets[sets[0]], offsets[sets[-1] + 1]
            if high - low > _CHUNK:  # one set larger than a chunk: a running minimum over its pieces
                out[sets[0]] = self._large(values[low:high])
            else:
                matrix = np.multiply.outer(self._a, values[low:high])  # wraps modulo 2**32, as intended
                matrix += self._b[:, None]
                out[sets] = np.minimum.reduceat(matrix, offsets[sets] - low, axis=1).T
            start = stop
        return out

    def _large(self, values: np.ndarray) -> np.ndarray:
        minimum = np.full(self.num_perm, EMPTY_VALUE, dtype=np.uint32)
        for low in range(0, values.size, _CHUNK):
            matrix = np.multiply.outer(self._a, values[low : low + _CHUNK])
            matrix += self._b[:, None]
            np.minimum(minimum, matrix.min(axis=1), out=minimum)
        return minimum


def agreement(signature: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Fraction of rows on which ``signature`` agrees with each row of ``others`` (sec. 3.3.3).

    This is an unbiased estimate of the Jaccard similarity of the underlying sets.
    """
    others = np.atleast_2d(others)
    if others.shape[1] != signature.shape[0]:
        raise ValueError(f"signature lengths differ: {signature.shape[0]} vs {others.shape[1]}")
    agreeing: np.ndarray = np.count_nonzero(others == signature, axis=1) / signature.shape[0]
    return agreeing


def signature_matrix(
    sets: Sequence[Iterable[int]],
    hash_functions: Sequence[Callable[[int], int]],
    rows: int | None = None,
) -> np.ndarray:
    """The signature matrix of MMDS sec. 3.3.5 with explicit hash functions on row numbers.

    Args:
        sets: for each column (set), the row numbers in which it has a 1.
        hash_functions: functions of the row number standing in for permutations.
        rows: number of rows of the characteristic matrix (default: one past the largest row used).

    Returns:
        int64 array of shape (len(hash_functions), len(sets)); a set with no rows keeps the
        book's "infinity", represented as the largest int64.

    MMDS Example 3.8 (rows 0-4; S1={0,3}, S2={2}, S3={1,3,4}, S4={0,2,3}; h1=x+1 mod 5,
    h2=3x+1 mod 5) gives [[1, 3, 0, 1], [0, 2, 0, 0]].
    """
    columns = [sorted(set(rows_of_set)) for rows_of_set in sets]
    used = [row for column in columns for row in column]
    if any(row < 0 for row in used):
        raise ValueError("row numbers must be non-negative")
    n_rows = rows if rows is not None else (max(used) + 1 if used else 0)
    if used and max(used) >= n_rows:
        raise ValueError(f"row {max(used)} is outside the {n_rows} rows")
    infinity = np.iinfo(np.int64).max
    result = np.full((len(hash_functions), len(columns)), infinity, dtype=np.int64)
    for i, function in enumerate(hash_functions):
        values = np.array([function(row) for row in range(n_rows)], dtype=np.int64)
        for j, column in enumerate(columns):
            if column:
                result[i, j] = values[column].min()
    return result
