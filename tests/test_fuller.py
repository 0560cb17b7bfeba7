"""The fuller-member check (stream_lsh.core.fuller): a page that holds a story's teaser among other
stories' is not a copy of that story, and a copy of the story still is."""

from conftest import prose
from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core import decision as decision_module
from stream_lsh.core.decision import DUPLICATE, UNIQUE, Match, decide
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.fuller import FULLER, HOLDS, refusals
from stream_lsh.core.page import Page
from stream_lsh.core.verification import CONTAINMENT, JACCARD, Verification

RULE = Verification(0.3, 0.7)


def sized(page_id, cluster, *, similarity, contained, of_page, of_candidate):
    return Match(page_id, similarity, cluster, contained, of_page, of_candidate)


# A digest holds the whole teaser (a tenth of the digest's size) and a sentence of the full story,
# which is four times the teaser's size.
TEASER = sized("teaser", "S", similarity=0.1, contained=1.0, of_page=0.1, of_candidate=1.0)
STORY = sized("story", "S", similarity=0.05, contained=0.25, of_page=0.1, of_candidate=0.025)


class Window:
    """The check's neighbours: which members agree, and which page each was decided a copy of."""

    def __init__(self, agreeing=True, originals=None):
        self.agreeing, self.originals = agreeing, originals or {}

    def agree(self, first, second):
        return self.agreeing if isinstance(self.agreeing, bool) else first.id in self.agreeing

    def original(self, member):
        return self.originals.get(member.id)


always, never = Window(True), Window(False)


def test_a_fuller_member_that_holds_the_matched_one_refuses_its_cluster():
    assert refusals([TEASER, STORY], [CONTAINMENT, None], always) == {"S": "story"}


def test_nothing_is_refused_when_the_fuller_page_is_not_the_matched_pages_story():
    assert refusals([TEASER, STORY], [CONTAINMENT, None], never) == {}


def test_a_page_is_never_refused_a_cluster_whose_match_holds_it():
    # the page is the teaser: what it matches is larger than it
    story = sized("story", "S", similarity=0.25, contained=0.95, of_page=0.95, of_candidate=0.25)
    other = sized("other", "S", similarity=0.1, contained=0.4, of_page=0.4, of_candidate=0.1)
    assert refusals([story, other], [CONTAINMENT, None], always) == {}


def test_a_fuller_member_that_holds_half_the_page_refuses_nothing():
    # a copy with a long opening of its own: half of it is the story
    story = STORY._replace(of_page=HOLDS, of_candidate=HOLDS * 0.25)
    assert refusals([TEASER, story], [CONTAINMENT, None], always) == {}


def test_a_member_not_fuller_enough_refuses_nothing():
    size = TEASER.of_page / TEASER.of_candidate * FULLER * 0.9
    story = STORY._replace(of_candidate=STORY.of_page / size)
    assert refusals([TEASER, story], [CONTAINMENT, None], always) == {}


def test_a_fuller_member_that_matches_the_page_refuses_nothing():
    assert refusals([TEASER, STORY], [CONTAINMENT, JACCARD], always) == {}


def test_candidates_without_shares_or_a_cluster_are_never_asked():
    assert refusals([TEASER, STORY._replace(of_page=None)], [CONTAINMENT, None], always) == {}
    assert refusals([TEASER, STORY._replace(cluster_id=None)], [CONTAINMENT, None], always) == {}


def test_the_page_a_member_was_decided_a_copy_of_is_asked_too():
    """The story's full page shares no band with the digest, but the teaser joined it."""
    assert refusals([TEASER], [CONTAINMENT], Window(True, {"teaser": (STORY, None)})) == {"S": "story"}
    assert refusals([TEASER], [CONTAINMENT], Window(True, {"teaser": (STORY, JACCARD)})) == {}
    elsewhere = STORY._replace(cluster_id="T")  # a page of another cluster (the teaser was retold)
    assert refusals([TEASER], [CONTAINMENT], Window(True, {"teaser": (elsewhere, None)})) == {}


def test_the_rule_joins_another_cluster_or_founds_one_and_names_the_refusing_page():
    other = Match("copy", 0.5, "C", 0.6, 0.6, 0.6)
    asked = dict(signed=True, exact=None, rule=RULE, founds="p", neighbours=always)
    alone = decide("p", candidates=[TEASER, STORY], **asked)
    assert (alone.status, alone.cluster_id, alone.refused_by) == (UNIQUE, "p", "story")
    assert alone.similarity == TEASER.similarity  # the closest candidate is still reported
    assert alone.to_dict()["refused_by"] == "story"
    elsewhere = decide("p", candidates=[TEASER, STORY, other], **asked)
    assert (elsewhere.status, elsewhere.cluster_id, elsewhere.refused_by) == (DUPLICATE, "C", "story")
    unasked = decide("p", candidates=[TEASER, STORY], **{**asked, "neighbours": None})
    assert (unasked.cluster_id, unasked.refused_by) == ("S", None)
    assert "refused_by" not in unasked.to_dict()
    assert decision_module.Decision.from_dict(alone.to_dict()) == alone


shares = st.floats(0.0, 1.0)


@given(st.lists(st.tuples(shares, shares, shares, shares, st.sampled_from("ABC"), st.booleans()), max_size=8))
def test_a_refused_cluster_is_one_the_page_matched_only_through_smaller_pages(rows):
    candidates = [
        Match(f"c{i}", j, cluster, max(j, k), p, q) for i, (j, k, p, q, cluster, _) in enumerate(rows)
    ]
    verdicts = [RULE.match(c.similarity, c.contained) for c in candidates]
    agreeing = {c.id for c, row in zip(candidates, rows) if row[-1]}
    refused = refusals(candidates, verdicts, Window(agreeing))
    for cluster, by in refused.items():
        matched = [c for c, v in zip(candidates, verdicts) if v and c.cluster_id == cluster]
        assert matched and all(c.of_page < c.of_candidate for c in matched)
        fuller = next(c for c in candidates if c.id == by)
        assert fuller.cluster_id == cluster and RULE.match(fuller.similarity, fuller.contained) is None
        assert fuller.of_page < HOLDS and by in agreeing
        largest = max(c.of_page / c.of_candidate for c in matched)
        assert fuller.of_page / fuller.of_candidate >= FULLER * largest


def page(page_id, text, site):
    return Page(id=page_id, text=text, source=site)


def first_words(text, n):
    return " ".join(text.split()[:n]) + "."


def test_a_digest_that_holds_a_teaser_founds_its_own_cluster_and_a_copy_still_joins():
    """The engine end to end: a story, its teaser at another outlet, then a roundup of six stories'
    first sentences, the story's among them (most of the teaser: the digest matches it, so only
    the fuller member keeps it out); a copy with reader comments below it comes last."""
    story = prose(1, 400)
    others = [first_words(prose(seed, 60), 40) for seed in range(2, 7)]
    digest = "\n".join([first_words(story, 50), *others])
    comments = story + "\n" + prose(99, 250)
    engine = Deduplicator()
    decisions = engine.process_batch(
        [
            page("story", story, "wire.example"),
            page("teaser", first_words(story, 60), "cards.example"),
            page("digest", digest, "letters.example"),
            page("comments", comments, "forum.example"),
        ]
    )
    _, teaser_d, digest_d, comments_d = decisions
    assert teaser_d.cluster_id == "story" and teaser_d.match == CONTAINMENT
    assert digest_d.status == UNIQUE and digest_d.refused_by == "story", digest_d
    assert comments_d.cluster_id == "story" and comments_d.refused_by is None
    assert engine.checks["refused"] == 1


def test_without_the_story_in_the_window_a_digest_still_joins_its_teaser():
    """The documented limit: with one member of the story at hand, nothing is fuller."""
    story = prose(1, 400)
    digest = "\n".join([first_words(story, 50), *[first_words(prose(s, 60), 40) for s in range(2, 7)]])
    engine = Deduplicator()
    _, digest_d = engine.process_batch(
        [page("teaser", first_words(story, 60), "cards.example"), page("digest", digest, "letters.example")]
    )
    assert digest_d.cluster_id == "teaser" and digest_d.refused_by is None


def test_a_digest_that_shares_no_band_with_the_story_is_refused_by_the_page_its_teaser_joined():
    """A long story, and a digest that lists its teaser fourth of twelve: the digest's one item of
    it is too little to share a band with the story, so the story is not among the digest's
    candidates; the teaser's own decision names it. (Sharing 200 words of 800, the digest meets
    the story in a band about two times in three: this story's text is one whose bands it misses.)"""
    story = prose(400, 800)
    others = [first_words(prose(seed, 60), 40) for seed in range(2, 14)]
    digest = "\n".join([*others[:3], first_words(story, 200), *others[3:]])
    engine = Deduplicator()
    _, teaser_d, digest_d = engine.process_batch(
        [
            page("story", story, "wire.example"),
            page("teaser", first_words(story, 200), "cards.example"),
            page("digest", digest, "letters.example"),
        ]
    )
    assert teaser_d.duplicate_of == "story" and teaser_d.match == CONTAINMENT
    assert digest_d.candidates == 1  # the teaser alone
    assert digest_d.status == UNIQUE and digest_d.refused_by == "story", digest_d
