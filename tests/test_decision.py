"""The decision rule (stream_lsh.core.decision), which batch and the stream's homes both call."""

from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core.decision import DUPLICATE, NO_CONTENT, UNIQUE, Decision, Match, cluster_name, decide


def rule(candidates, *, exact=None, signed=True, threshold=0.5, founds="p"):
    return decide("p", signed=signed, exact=exact, candidates=candidates, threshold=threshold, founds=founds)


def test_an_exact_copy_wins_over_everything():
    decision = rule([Match("b", 0.9, "B")], exact=Match("a", 1.0, "A"))
    assert decision == Decision("p", DUPLICATE, "A", "a", 1.0, 1)


def test_an_exact_copy_that_is_not_earlier_does_not_count():
    assert rule([Match("b", 0.9, "B")], exact=Match("a", 1.0, None)).duplicate_of == "b"


def test_unsigned_pages_have_no_content():
    assert rule([], signed=False) == Decision("p", NO_CONTENT, None)


def test_no_candidates_founds_a_cluster():
    assert rule([]) == Decision("p", UNIQUE, "p", None, None, 0)


def test_the_most_similar_earlier_candidate_is_the_original_ties_to_the_first():
    decision = rule([Match("a", 0.6, "A"), Match("b", 0.8, "B"), Match("c", 0.8, "C")])
    assert decision == Decision("p", DUPLICATE, "B", "b", 0.8, 3)


def test_candidates_that_are_not_earlier_are_skipped_but_counted():
    decision = rule([Match("later", 0.9, None), Match("a", 0.7, "A")])
    assert decision == Decision("p", DUPLICATE, "A", "a", 0.7, 2)
    assert rule([Match("later", 0.9, None)]) == Decision("p", UNIQUE, "p", None, None, 1)


def test_below_the_threshold_the_page_is_unique_with_its_best_similarity():
    decision = rule([Match("a", 0.2, "A"), Match("b", 0.4, None)], threshold=0.5)
    assert decision == Decision("p", UNIQUE, "p", None, 0.4, 2)


def test_a_candidate_exactly_at_the_threshold_is_a_duplicate():
    """At exactly the threshold, a verified candidate is a duplicate (>=, as batch verifies)."""
    assert rule([Match("a", 0.5, "A")], threshold=0.5).status == DUPLICATE


def test_cluster_names_never_name_two_live_clusters():
    assert cluster_name("a", set()) == "a"
    assert cluster_name("a", {"a", "a#2"}) == "a#3"


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=12), st.floats(0.05, 0.95))
def test_a_duplicate_always_joins_an_earlier_page_at_or_above_the_threshold(rows, threshold):
    candidates = [Match(f"c{i}", s, f"C{i}" if earlier else None) for i, (s, earlier) in enumerate(rows)]
    decision = rule(candidates, threshold=threshold)
    assert decision.candidates == len(candidates)
    if decision.status == DUPLICATE:
        chosen = next(c for c in candidates if c.id == decision.duplicate_of)
        assert chosen.cluster_id == decision.cluster_id and chosen.similarity >= threshold
        assert all(c.similarity <= chosen.similarity for c in candidates if c.cluster_id is not None)
    else:
        assert not any(c.similarity >= threshold and c.cluster_id is not None for c in candidates)
