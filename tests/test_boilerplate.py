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
