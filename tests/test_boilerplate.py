import random

import pytest

from stream_lsh.core.boilerplate import BoilerplateLearner


def fps(n, base):
    return [base + i for i in range(n)]


def test_prose_next_to_different_stories_is_learnt_on_the_second_page():
    learner = BoilerplateLearner(min_pages=2)
    prose = [11_111, 22_222, 33_333]  # the smallest fingerprints: they fill both pages' sketches
    learner.observe("a.com", prose + fps(10, 1_000_000))
    assert not any(map(learner.is_boilerplate, prose))
    learner.observe("a.com", prose + fps(10, 2_000_000))
    assert all(map(learner.is_boilerplate, prose))
    assert not any(map(learner.is_boilerplate, fps(10, 2_000_000)))


def test_the_same_page_again_teaches_nothing():
    learner = BoilerplateLearner(min_pages=2)
    page = fps(8, 5)
    for _ in range(5):
        learner.observe("a.com", page)
    assert learner.boilerplate_blocks == 0


def test_updated_versions_of_one_story_keep_their_paragraphs():
    """Eight versions of a 12-paragraph story, each with one paragraph rewritten: one context."""
    rng = random.Random(7)
    for _ in range(200):
        learner = BoilerplateLearner(min_pages=2)
        paragraphs = [rng.getrandbits(64) for _ in range(12)]
        for _ in range(8):
            edited = list(paragraphs)
            edited[rng.randrange(12)] = rng.getrandbits(64)
            learner.observe("a.com", edited)
        assert not any(map(learner.is_boilerplate, paragraphs))


def test_site_prose_is_learnt_within_a_few_pages():
    rng = random.Random(8)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        for _ in range(3):
            learner.observe("a.com", prose + [rng.getrandbits(64) for _ in range(6)])
        assert all(map(learner.is_boilerplate, prose))


def teaser_and_story(rng, prose):
    """A 20-paragraph story and its teaser at one site: the first 6 paragraphs, under a headline
    and byline of its own, with the site's prose on both."""
    story = [rng.getrandbits(64) for _ in range(20)]
    teaser = [rng.getrandbits(64), rng.getrandbits(64)] + story[:6]
    return story + prose, teaser + prose


def test_a_teaser_of_a_story_the_site_published_keeps_the_lead():
    """The teaser shares the story's lead and the site's prose; the story is over twice its size,
    and 6 + 3 of its 11 blocks are in the story: an excerpt, not a new context of the lead."""
    rng = random.Random(9)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        story, teaser = teaser_and_story(rng, prose)
        learner.observe("a.com", story)
        learner.observe("a.com", teaser)
        assert not any(map(learner.is_boilerplate, story[:6]))


def test_without_the_excerpt_test_the_teaser_teaches_the_lead_as_prose():
    """What the excerpt test prevents, and its one-way limit: a teaser seen *before* its story."""
    rng = random.Random(10)
    prose = [rng.getrandbits(64) for _ in range(3)]
    story, teaser = teaser_and_story(rng, prose)
    jaccard_alone = BoilerplateLearner(min_pages=2, same_page_containment=1.0, excerpt_ratio=100.0)
    jaccard_alone.observe("a.com", story)
    jaccard_alone.observe("a.com", teaser)
    assert all(map(jaccard_alone.is_boilerplate, story[:6]))
    teaser_first = BoilerplateLearner(min_pages=2)
    teaser_first.observe("a.com", teaser)
    teaser_first.observe("a.com", story)
    assert all(map(teaser_first.is_boilerplate, story[:6]))


def test_short_stories_of_a_site_still_teach_its_prose():
    """Two short stories, each mostly the site's prose (3 of 5 blocks): alike in size, so neither is
    an excerpt of the other, and the prose is learnt on the second page."""
    rng = random.Random(11)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        for _ in range(2):
            learner.observe("a.com", [rng.getrandbits(64) for _ in range(2)] + prose)
        assert all(map(learner.is_boilerplate, prose))


def test_containment_estimate_from_sketches():
    from stream_lsh.core.boilerplate import _containment

    assert _containment((1, 2, 3), (1, 2, 3, 4, 5), 8) == 1.0  # both sketches hold all: exact
    assert _containment((1, 2, 6, 7), (1, 2, 3, 4, 5), 8) == 0.5
    assert _containment((1, 2, 6, 7), (1, 2, 3), 3) == 1.0  # 6 and 7 lie beyond B's full sketch
    assert _containment((6, 7), (1, 2, 3), 3) == 0.0  # nothing B's sketch can answer for


@pytest.mark.parametrize(
    "bad", [{"same_page_containment": 0.0}, {"same_page_containment": 1.5}, {"excerpt_ratio": 0.5}]
)
def test_the_excerpt_test_is_validated(bad):
    with pytest.raises(ValueError):
        BoilerplateLearner(**bad)


def test_contexts_are_per_site_but_boilerplate_is_global():
    learner = BoilerplateLearner(min_pages=2)
    shared = 424_242
    learner.observe("a.com", [shared] + fps(5, 10_000))
    learner.observe("b.com", [shared] + fps(5, 20_000))
    assert not learner.is_boilerplate(shared)  # one context on each site
    learner.observe("a.com", [shared] + fps(5, 30_000))
    assert learner.is_boilerplate(shared)


def test_a_lone_block_never_becomes_boilerplate():
    learner = BoilerplateLearner(min_pages=2)
    for _ in range(3):
        learner.observe("a.com", [99])
    assert not learner.is_boilerplate(99)


def test_similarity_estimate_from_sketches():
    from stream_lsh.core.boilerplate import _similarity

    assert _similarity((1, 2, 3), (1, 2, 3), 3) == 1.0
    assert _similarity((1, 2, 3), (4, 5, 6), 3) == 0.0
    assert _similarity((1, 2, 3, 4), (1, 2, 5, 6), 4) == 0.5  # bottom-4 of the union: 1 2 3 4


def test_bounds_hold():
    learner = BoilerplateLearner(min_pages=2, max_blocks_per_site=100, max_boilerplate=10)
    for page in range(200):
        learner.observe("a.com", [7, 8] + fps(3, 1000 * page + 100))
    assert len(learner._contexts["a.com"]) <= 100
    assert learner.boilerplate_blocks <= 10


def test_learnable_blocks_need_enough_words():
    learner = BoilerplateLearner(min_words=5)
    assert learner.learnable("one two three four five") and not learner.learnable("read more")


def test_state_round_trip():
    learner = BoilerplateLearner()
    learner.observe("a.com", [1, 2, 3])
    learner.observe("a.com", [1, 4, 5])
    copy = BoilerplateLearner()
    copy.load_state(learner.state())
    assert copy.state() == learner.state() and copy.is_boilerplate(1)


@pytest.mark.parametrize("kwargs", [dict(min_pages=1), dict(min_words=0), dict(max_boilerplate=0)])
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        BoilerplateLearner(**kwargs)
