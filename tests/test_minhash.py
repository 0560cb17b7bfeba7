import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.minhash import MinHasher, agreement, signature_matrix


def test_mmds_example_3_8():
    # Fig. 3.4: S1 = {a, d}, S2 = {c}, S3 = {b, d, e}, S4 = {a, c, d} with rows a..e = 0..4.
    sets = [{0, 3}, {2}, {1, 3, 4}, {0, 2, 3}]
    h1 = lambda x: (x + 1) % 5  # noqa: E731
    h2 = lambda x: (3 * x + 1) % 5  # noqa: E731
    assert signature_matrix(sets, [h1, h2], rows=5).tolist() == [[1, 3, 0, 1], [0, 2, 0, 0]]


def test_signature_matrix_validates_rows():
    with pytest.raises(ValueError):
        signature_matrix([{7}], [lambda x: x], rows=5)


def test_signatures_are_deterministic_from_the_seed():
    shingles = np.arange(1, 200, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert np.array_equal(
        MinHasher(64, seed=5).signature(shingles), MinHasher(64, seed=5).signature(shingles)
    )
    assert not np.array_equal(
        MinHasher(64, seed=5).signature(shingles), MinHasher(64, seed=6).signature(shingles)
    )
    assert MinHasher(64).signature(shingles).dtype == np.uint32


@pytest.mark.parametrize("num_perm, seed", [(0, 1), (-3, 1), (8, -1)])
def test_bad_parameters_are_refused(num_perm, seed):
    with pytest.raises(ValueError):
        MinHasher(num_perm, seed)


def _pair_with_jaccard(rng, jaccard, union_size):
    """Two sets of random 64-bit values whose Jaccard similarity is exactly round(j*u)/u."""
    values = np.unique(rng.integers(0, 2**63, size=union_size * 2, dtype=np.uint64))[:union_size]
    rng.shuffle(values)
    shared = round(jaccard * union_size)
    rest = values[shared:]
    half = rest.size // 2
    a = np.concatenate([values[:shared], rest[:half]])
    b = np.concatenate([values[:shared], rest[half:]])
    return np.unique(a), np.unique(b), shared / union_size


@pytest.mark.parametrize("target", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_agreement_estimates_jaccard_without_bias(target):
    """MMDS sec. 3.3.3: the fraction of agreeing rows estimates J; its spread is binomial."""
    rng = np.random.default_rng(20261122)
    minhasher = MinHasher(128, seed=1)
    errors, exact = [], None
    for _ in range(400):
        a, b, exact = _pair_with_jaccard(rng, target, union_size=int(rng.integers(100, 600)))
        estimate = agreement(minhasher.signature(a), minhasher.signature(b)[None, :])[0]
        errors.append(estimate - exact)
    errors = np.array(errors)
    expected_spread = np.sqrt(target * (1 - target) / 128)
    assert abs(errors.mean()) < 0.01
    assert 0.8 * expected_spread < errors.std() < 1.2 * expected_spread


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 2**32 - 1), min_size=1, max_size=300), st.integers(0, 2**32))
def test_identical_sets_agree_fully_and_disjoint_sets_not_at_all(values, seed):
    """A shingle is represented by its top 32 bits, so disjointness is taken there."""
    minhasher = MinHasher(32, seed=seed)
    a = np.array(sorted(v << 32 | 0xABCD for v in values), dtype=np.uint64)
    assert agreement(minhasher.signature(a), minhasher.signature(a.copy())[None, :])[0] == 1.0
    others = sorted({v ^ 0xFFFF_FFFF for v in values} - values)
    if others:
        b = np.array([v << 32 for v in others], dtype=np.uint64)
        assert agreement(minhasher.signature(a), minhasher.signature(b)[None, :])[0] == 0.0


@settings(max_examples=40, deadline=None)
@given(st.sets(st.integers(0, 2**64 - 1), min_size=2, max_size=200))
def test_signature_of_a_superset_is_elementwise_no_larger(values):
    """Adding elements can only lower each minimum: monotonicity of minhash."""
    minhasher = MinHasher(16, seed=3)
    full = np.array(sorted(values), dtype=np.uint64)
    assert np.all(minhasher.signature(full) <= minhasher.signature(full[: full.size // 2]))


def test_agreement_checks_lengths():
    with pytest.raises(ValueError):
        agreement(np.zeros(4, np.uint32), np.zeros((2, 5), np.uint32))


def test_a_set_larger_than_a_chunk_gets_the_same_signature(monkeypatch):
    from stream_lsh.core import minhash as module

    values = np.random.default_rng(4).integers(0, 2**63, size=50_000, dtype=np.uint64)
    minhasher = MinHasher(64, seed=2)
    whole = minhasher.signature(values)
    monkeypatch.setattr(module, "_CHUNK", 1_000)
    assert np.array_equal(minhasher.signature(values), whole)
    batch = minhasher.signatures(np.concatenate([values[:10], values]), np.array([0, 10, 50_010]))
    assert np.array_equal(batch[1], whole)
