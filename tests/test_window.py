"""The band window (stream_lsh.core.window): the one store of indexed pages for batch and stream."""

from dataclasses import dataclass, field

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.window import BandWindow


@dataclass
class Entry:
    keys: list[int]
    content_hash: int | None = None
    event_time: float | None = 0.0
    opening: int = 0
    headline: int = 0
    site_headline: int = 0
    tag: str = field(default="", compare=False)


def test_lookup_reports_where_each_page_was_met_first_in_order():
    window: BandWindow[Entry] = BandWindow(bucket_cap=8, ttl=None)
    window.insert("a", Entry([10, 20]))
    window.insert("b", Entry([20, 30]))
    window.insert("c", Entry([30]))
    assert window.lookup([(0, 20), (1, 30)]) == {"a": (0, 0), "b": (0, 1), "c": (1, 1)}
    assert list(window.lookup([(0, 30), (1, 20)])) == ["b", "c", "a"]  # the order met, not inserted


def test_a_full_bucket_drops_its_oldest_and_removal_still_works():
    window: BandWindow[Entry] = BandWindow(bucket_cap=2, ttl=None)
    for name in "abc":
        window.insert(name, Entry([1, 2]))
    assert list(window.lookup([(0, 1)])) == ["b", "c"]
    assert window.remove("a") is not None and window.remove("a") is None
    assert len(window) == 2 and window.buckets == {1: ["b", "c"], 2: ["b", "c"]}


def test_the_exact_map_names_the_first_page_with_the_content():
    window: BandWindow[Entry] = BandWindow(bucket_cap=8, ttl=None)
    window.insert("a", Entry([1], content_hash=42))
    window.insert("b", Entry([1], content_hash=42))
    window.insert("c", Entry([2], content_hash=None))
    assert window.exact(42) == "a" and window.exact(None) is None
    window.remove("a")
    assert window.exact(42) is None


def test_the_clock_only_moves_forward_and_pages_leave_after_the_window():
    window: BandWindow[Entry] = BandWindow(bucket_cap=8, ttl=10.0)
    window.insert("old", Entry([1], event_time=100.0))
    window.insert("new", Entry([2], event_time=105.0))
    window.insert("timeless", Entry([3], event_time=None))
    assert window.advance(109_000) == [] and window.clock_ms == 109_000
    assert [e.event_time for e in window.advance(112_000)] == [100.0]
    assert window.advance(50_000) == [] and window.clock_ms == 112_000  # never back
    assert window.advance(None) == [] and window.clock_ms == 112_000
    assert set(window.entries) == {"new", "timeless"}
    window.advance(10**12)
    assert set(window.entries) == {"timeless"}


def test_a_page_reinserted_with_a_later_time_is_expired_by_it():
    window: BandWindow[Entry] = BandWindow(bucket_cap=8, ttl=10.0)
    window.insert("a", Entry([1], event_time=100.0))
    window.insert("a", Entry([1], event_time=200.0))
    assert window.advance(150_000) == [] and "a" in window
    assert len(window.advance(250_000)) == 1 and "a" not in window


def test_invalid_parameters_are_refused():
    with pytest.raises(ValueError, match="bucket_cap"):
        BandWindow(bucket_cap=0, ttl=None)
    with pytest.raises(ValueError, match="ttl"):
        BandWindow(bucket_cap=1, ttl=0)


operations = st.lists(
    st.tuples(
        st.sampled_from(["insert", "remove", "advance"]),
        st.integers(0, 6),
        st.lists(st.integers(0, 4), min_size=1, max_size=3),
        st.integers(0, 50),
    ),
    max_size=50,
)


@settings(max_examples=150, deadline=None)
@given(operations)
def test_saved_tables_restore_a_window_that_behaves_the_same(ops):
    """Saved mid-way (as JSON) and restored, a window goes on exactly like one never saved."""

    def apply(window, op, number, keys, time):
        if op == "insert":
            window.insert(f"p{number}", Entry(keys, content_hash=keys[0], event_time=float(time)))
        elif op == "remove":
            window.remove(f"p{number}")
        else:
            window.advance(time * 1000)

    half = len(ops) // 2
    kept: BandWindow[Entry] = BandWindow(bucket_cap=2, ttl=5.0)
    for op in ops[:half]:
        apply(kept, *op)
    tables = orjson.loads(orjson.dumps(kept.tables()))
    restored: BandWindow[Entry] = BandWindow(bucket_cap=2, ttl=5.0)
    restored.load(
        {page_id: Entry(list(e.keys), e.content_hash, e.event_time) for page_id, e in kept.entries.items()},
        tables,
    )
    for op in ops[half:]:
        apply(kept, *op)
        apply(restored, *op)
    assert restored.entries == kept.entries and restored.buckets == kept.buckets
    assert restored.by_content == kept.by_content and restored.clock_ms == kept.clock_ms
