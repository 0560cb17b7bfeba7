"""The decision rule (stream_lsh.core.decision), which batch and the stream's homes both call."""

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core.decision import DUPLICATE, NO_CONTENT, UNIQUE, Decision, Match, cluster_name, decide
from stream_lsh.core.verification import Verification


def rule(candidates, *, exact=None, signed=True, threshold=0.5, containment=None, founds="p"):
    return decide(
        "p",
        signed=signed,
        exact=exact,
        candidates=candidates,
        rule=Verification(threshold, containment),
        founds=founds,
    )


def test_an_exact_copy_wins_over_everything():
    decision = rule([Match("b", 0.9, "B")], exact=Match("a", 1.0, "A"))
    assert decision == Decision("p", DUPLICATE, "A", "a", 1.0, 1, match="jaccard", containment=1.0)


def test_an_exact_copy_that_is_not_earlier_does_not_count():
    assert rule([Match("b", 0.9, "B")], exact=Match("a", 1.0, None)).duplicate_of == "b"


def test_unsigned_pages_have_no_content():
    assert rule([], signed=False) == Decision("p", NO_CONTENT, None)


def test_no_candidates_founds_a_cluster():
    assert rule([]) == Decision("p", UNIQUE, "p", None, None, 0)


def test_the_most_similar_earlier_candidate_is_the_original_ties_to_the_first():
    decision = rule([Match("a", 0.6, "A"), Match("b", 0.8, "B"), Match("c", 0.8, "C")])
    assert decision == Decision("p", DUPLICATE, "B", "b", 0.8, 3, match="jaccard", containment=0.8)


def test_candidates_that_are_not_earlier_are_skipped_but_counted():
    decision = rule([Match("later", 0.9, None), Match("a", 0.7, "A")])
    assert decision == Decision("p", DUPLICATE, "A", "a", 0.7, 2, match="jaccard", containment=0.7)
    assert rule([Match("later", 0.9, None)]) == Decision("p", UNIQUE, "p", None, None, 1)


def test_below_the_threshold_the_page_is_unique_with_its_best_similarity():
    decision = rule([Match("a", 0.2, "A"), Match("b", 0.4, None)], threshold=0.5)
    assert decision == Decision("p", UNIQUE, "p", None, 0.4, 2, containment=0.4)


def test_a_candidate_exactly_at_the_threshold_is_a_duplicate():
    """At exactly the threshold, a verified candidate is a duplicate (>=, as batch verifies)."""
    assert rule([Match("a", 0.5, "A")], threshold=0.5).status == DUPLICATE


def test_a_contained_page_is_a_duplicate_by_containment_below_the_jaccard_threshold():
    """A teaser: Jaccard 0.25 with its story, but 0.9 of it lies in the story."""
    decision = rule([Match("story", 0.25, "S", 0.9)], threshold=0.5, containment=0.8)
    assert decision == Decision("p", DUPLICATE, "S", "story", 0.25, 1, match="containment", containment=0.9)


def test_a_quoting_page_is_unique_however_close_its_jaccard_similarity():
    """A quote: Jaccard 0.33, half of the page shared: below both thresholds."""
    decision = rule([Match("quoted", 0.33, "Q", 0.5)], threshold=0.5, containment=0.8)
    assert decision == Decision("p", UNIQUE, "p", None, 0.33, 1, containment=0.5)


def test_without_a_containment_threshold_containment_is_only_reported():
    assert rule([Match("story", 0.25, "S", 0.95)], threshold=0.5).status == UNIQUE


def test_a_candidate_without_a_containment_estimate_is_judged_by_its_jaccard_similarity():
    """Reported before containment existed: the Jaccard similarity, a lower bound, stands in."""
    decision = rule([Match("a", 0.6, "A")], threshold=0.5, containment=0.8)
    assert decision.match == "jaccard" and decision.containment == 0.6
    assert rule([Match("a", 0.4, "A")], threshold=0.5, containment=0.8).status == UNIQUE


def test_any_earlier_match_beats_a_closer_candidate_that_does_not_match():
    decision = rule([Match("quote", 0.45, "Q", 0.6), Match("teaser", 0.3, "T", 0.95)], containment=0.8)
    assert decision.duplicate_of == "teaser" and decision.match == "containment"


def test_the_record_says_which_rule_matched_and_the_containment():
    decision = rule([Match("story", 0.25, "S", 0.91234)], threshold=0.5, containment=0.8)
    record = decision.to_dict()
    assert record["match"] == "containment" and record["containment"] == 0.9123
    assert Decision.from_dict(record) == dataclasses.replace(decision, containment=0.9123)
    old = {k: v for k, v in record.items() if k not in ("match", "containment")}
    assert Decision.from_dict(old).match is None  # records written before containment still load


def test_cluster_names_never_name_two_live_clusters():
    assert cluster_name("a", set()) == "a"
    assert cluster_name("a", {"a", "a#2"}) == "a#3"


@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.booleans()), max_size=12),
    st.floats(0.05, 0.95),
    st.one_of(st.none(), st.floats(0.05, 1.0)),
)
def test_a_duplicate_always_joins_the_most_similar_earlier_match(rows, threshold, containment):
    candidates = [
        Match(f"c{i}", j, f"C{i}" if earlier else None, max(j, c)) for i, (j, c, earlier) in enumerate(rows)
    ]
    verification = Verification(threshold, containment)
    decision = rule(candidates, threshold=threshold, containment=containment)
    matches = [c for c in candidates if verification.match(c.similarity, c.contained) and c.cluster_id]
    assert decision.candidates == len(candidates)
    if decision.status == DUPLICATE:
        chosen = next(c for c in candidates if c.id == decision.duplicate_of)
        assert chosen in matches and chosen.cluster_id == decision.cluster_id
        assert all(c.similarity <= chosen.similarity for c in matches)
        assert decision.match == verification.match(chosen.similarity, chosen.contained)
    else:
        assert not matches and decision.match is None
