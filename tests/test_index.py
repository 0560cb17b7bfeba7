import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.banding import Banding
from stream_lsh.core.index import IndexEntry, LSHIndex
from stream_lsh.core.scheme import Scheme

SCHEME = Scheme(shingles="word", shingle_size=3, num_perm=8, seed=1)
BANDING = Banding(bands=4, rows=2, num_perm=8)
FP = SCHEME.fingerprint


def entry(page_id, signature, event_time=0.0, content_hash=None):
    signature = np.asarray(signature, dtype=np.uint32)
    return IndexEntry(
        id=page_id,
        signature=signature,
        band_keys=BANDING.band_keys(signature),
        cluster_id=page_id,
        event_time=event_time,
        content_hash=hash(page_id) if content_hash is None else content_hash,
        scheme=SCHEME.fingerprint,
    )


def test_query_finds_pages_sharing_a_band():
    index = LSHIndex(SCHEME, BANDING)
    index.insert(entry("a", [1, 2, 3, 4, 5, 6, 7, 8]))
    index.insert(entry("b", [1, 2, 9, 9, 9, 9, 9, 9]))  # shares band 0 with a
    index.insert(entry("c", [0, 0, 0, 0, 0, 0, 0, 0]))
    probe = BANDING.band_keys(np.array([1, 2, 3, 4, 7, 7, 7, 7], np.uint32))
    assert [e.id for e in index.query(probe, FP)] == ["a", "b"]


def test_remove_unindexes_and_reports():
    index = LSHIndex(SCHEME, BANDING)
    index.insert(entry("a", [1] * 8))
    assert index.remove("a") and not index.remove("a")
    assert index.query(BANDING.band_keys(np.ones(8, np.uint32)), FP) == []
    assert index.bucket_count() == 0 and len(index) == 0


def test_bucket_cap_keeps_the_newest():
    index = LSHIndex(SCHEME, BANDING, bucket_cap=2)
    for name in "abc":
        index.insert(entry(name, [1] * 8))
    assert [e.id for e in index.query(BANDING.band_keys(np.ones(8, np.uint32)), FP)] == ["b", "c"]
    assert index.remove("a")  # pushed out of its buckets but still removable
    assert len(index) == 2


def test_ttl_evicts_by_event_time():
    index = LSHIndex(SCHEME, BANDING, ttl=10.0)
    index.insert(entry("old", [1] * 8, event_time=100.0))
    index.insert(entry("new", [2] * 8, event_time=105.0))
    assert index.expire(109.0) == 0
    assert index.expire(112.0) == 1
    assert "old" not in index and "new" in index
    assert index.query(BANDING.band_keys(np.ones(8, np.uint32)), FP) == []


def test_exact_content_lookup():
    index = LSHIndex(SCHEME, BANDING)
    index.insert(entry("a", [1] * 8, content_hash=42))
    index.insert(entry("b", [1] * 8, content_hash=42))
    assert index.exact(42).id == "a"
    index.remove("a")
    assert index.exact(42) is None  # the map names the first page only; b is still found by LSH


def test_scheme_and_banding_must_agree():
    with pytest.raises(ValueError):
        LSHIndex(SCHEME, Banding(bands=4, rows=4, num_perm=16))
    with pytest.raises(ValueError):
        LSHIndex(SCHEME, BANDING, bucket_cap=0)


operations = st.lists(
    st.tuples(
        st.sampled_from(["insert", "remove"]),
        st.integers(0, 9),
        st.lists(st.integers(0, 2), min_size=8, max_size=8),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(operations, st.lists(st.integers(0, 2), min_size=8, max_size=8))
def test_index_matches_a_brute_force_model(ops, probe):
    """After any sequence of inserts and removes, query == the pages that share a band key."""
    index = LSHIndex(SCHEME, BANDING, bucket_cap=1000)
    model: dict[str, np.ndarray] = {}
    for op, number, signature in ops:
        page_id = f"p{number}"
        if op == "insert":
            index.insert(entry(page_id, signature))
            model.pop(page_id, None)
            model[page_id] = BANDING.band_keys(np.asarray(signature, np.uint32))
        else:
            assert index.remove(page_id) == (model.pop(page_id, None) is not None)
    keys = BANDING.band_keys(np.asarray(probe, np.uint32))
    expected = {pid for pid, their in model.items() if np.any(their == keys)}
    assert {e.id for e in index.query(keys, FP)} == expected
    assert len(index) == len(model)
    for page_id in list(model):
        index.remove(page_id)
    assert index.bucket_count() == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1000), min_size=1, max_size=40), st.floats(0, 1000), st.floats(1, 100))
def test_expire_removes_exactly_the_pages_outside_the_window(times, watermark, ttl):
    index = LSHIndex(SCHEME, BANDING, ttl=ttl)
    for i, t in enumerate(times):
        index.insert(entry(f"p{i}", [i % 3] * 8, event_time=t))
    index.expire(watermark)
    assert {e.id for e in index} == {f"p{i}" for i, t in enumerate(times) if t >= watermark - ttl}


def test_signatures_of_another_scheme_are_refused():
    from stream_lsh.errors import StateMismatchError

    index = LSHIndex(SCHEME, BANDING)
    other = Scheme(shingles="word", shingle_size=3, num_perm=8, seed=2).fingerprint
    with pytest.raises(StateMismatchError, match="signed under scheme"):
        index.query(BANDING.band_keys(np.ones(8, np.uint32)), other)
    foreign = entry("a", [1] * 8)
    foreign.scheme = other
    with pytest.raises(StateMismatchError):
        index.insert(foreign)
