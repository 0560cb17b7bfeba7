"""The disk window's buckets in memory (stream_lsh.stores.band_table): a multimap that answers
as a dict of lists does, through growth, tombstones and rebuilds."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.stores.band_table import BandTable

# a few keys, so that runs collide; the largest keys land in the last slots and wrap round
KEYS = [0, 1, 2, 3, 17, 2**63, 2**64 - 1, 2**64 - 2]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(st.sampled_from(KEYS), min_size=1, max_size=8, unique=True)),
        st.tuples(st.just("discard"), st.integers(1, 12)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(steps, st.sampled_from([16, 64]))
def test_the_table_answers_as_a_dict_of_lists(steps, capacity):
    table, model, page = BandTable(capacity), {}, 0
    for step in steps:
        if step[0] == "add":
            page += 1
            table.add(np.array(step[1], np.uint64), np.full(len(step[1]), page))
            for key in step[1]:
                model.setdefault(key, []).append(page)
        else:
            pairs = [(k, p) for k, ps in sorted(model.items()) for p in ps][: step[1]]
            if pairs:
                table.discard(np.array([k for k, _ in pairs], np.uint64), np.array([p for _, p in pairs]))
            for key, p in pairs:
                model[key].remove(p)
                if not model[key]:
                    del model[key]
        assert table.buckets(np.array(KEYS, np.uint64)) == model
        assert len(table) == sum(map(len, model.values()))
    keys, pages = table.pairs()
    assert sorted(zip(pages.tolist(), keys.tolist())) == sorted((p, k) for k, ps in model.items() for p in ps)


def test_the_table_grows_and_clears_its_tombstones():
    table = BandTable(16)
    rng = np.random.default_rng(1)
    for page in range(1, 2001):
        table.add(rng.integers(0, 2**63, 43, dtype=np.uint64), np.full(43, page))
    keys, pages = table.pairs()
    table.discard(keys[: 43 * 1500], pages[: 43 * 1500])
    table.add(np.array([5], np.uint64), np.array([2001]))
    assert len(table) == 43 * 500 + 1 and table.slots >= len(table) / 0.75
    assert table.buckets(np.array([5], np.uint64)) == {5: [2001]}
    assert table.buckets(keys[-43:]) == {k: [2000] for k in keys[-43:].tolist()}


@given(st.lists(st.tuples(st.sampled_from(KEYS), st.integers(1, 30)), unique=True, max_size=60))
def test_a_table_built_in_one_pass_answers_as_one_built_pair_by_pair(pairs):
    keys = np.array([k for k, _ in pairs], np.uint64)
    pages = np.array([p for _, p in pairs], np.int64)
    one_by_one = BandTable(16)
    for key, page in pairs:
        one_by_one.add(np.array([key], np.uint64), np.array([page]))
    built = BandTable.of_pairs(keys, pages)
    probe = np.array(KEYS, np.uint64)
    assert built.buckets(probe) == one_by_one.buckets(probe) and len(built) == len(pairs)
    built.add(np.array([5], np.uint64), np.array([31]))  # and it goes on as any table
    assert built.buckets(np.array([5], np.uint64))[5][-1] == 31


def test_a_pair_not_in_the_table_is_an_error():
    table = BandTable()
    table.add(np.array([1], np.uint64), np.array([1]))
    with pytest.raises(KeyError):
        table.discard(np.array([1], np.uint64), np.array([2]))
    with pytest.raises(ValueError):
        table.add(np.array([1], np.uint64), np.array([0]))  # page numbers start at 1
