import random

import orjson
import pytest

from stream_lsh.core.boilerplate import BoilerplateLearner


def fps(n, base):
    return [base + i for i in range(n)]


def test_prose_next_to_different_stories_is_learnt_on_the_second_page():
    learner = BoilerplateLearner(min_pages=2)
    prose = [11_111, 22_222, 33_333]  # the smallest fingerprints: they fill both pages' sketches
    learner.observe("a.com", prose + fps(10, 1_000_000))
    assert not any(map(lambda b: learner.is_boilerplate(b, "a.com"), prose))
    learner.observe("a.com", prose + fps(10, 2_000_000))
    assert all(map(lambda b: learner.is_boilerplate(b, "a.com"), prose))
    assert not any(map(lambda b: learner.is_boilerplate(b, "a.com"), fps(10, 2_000_000)))


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
        assert not any(map(lambda b: learner.is_boilerplate(b, "a.com"), paragraphs))


def test_site_prose_is_learnt_within_a_few_pages():
    rng = random.Random(8)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        for _ in range(3):
            learner.observe("a.com", prose + [rng.getrandbits(64) for _ in range(6)])
        assert all(map(lambda b: learner.is_boilerplate(b, "a.com"), prose))


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
        assert not any(map(lambda b: learner.is_boilerplate(b, "a.com"), story[:6]))


def test_without_the_excerpt_test_the_teaser_teaches_the_lead_as_prose():
    """What the excerpt test prevents, whichever of the two pages comes first."""
    rng = random.Random(10)
    prose = [rng.getrandbits(64) for _ in range(3)]
    story, teaser = teaser_and_story(rng, prose)
    for first, second in ((story, teaser), (teaser, story)):
        jaccard_alone = BoilerplateLearner(min_pages=2, same_page_containment=1.0, excerpt_ratio=100.0)
        jaccard_alone.observe("a.com", first)
        jaccard_alone.observe("a.com", second)
        assert all(jaccard_alone.is_boilerplate(b, "a.com") for b in story[:6])


def test_a_story_after_its_teaser_keeps_the_lead():
    """A teaser (or an early version) seen *before* its story: the story holds it, and stands for
    it from then on, so neither the story nor a later copy of it loses its lead."""
    rng = random.Random(12)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        story, teaser = teaser_and_story(rng, prose)
        learner.observe("a.com", teaser)
        learner.observe("a.com", story)  # the teaser is its lead
        learner.observe("a.com", story[:14] + [rng.getrandbits(64)] + prose)  # an update of the story
        assert not any(learner.is_boilerplate(b, "a.com") for b in story[:6])


def test_prose_of_a_page_of_little_else_is_still_learnt():
    """A site's first page is a gallery: its site prose and nothing learnable else. Every story
    page holds it, after the story, and the prose is learnt on the first story even when it is
    over half of it: a story only stands for a smaller page that was its lead. And the other
    way round: the gallery after the story is not a teaser of it."""
    rng = random.Random(13)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        learner.observe("a.com", prose, [40, 40, 40])
        article = [rng.getrandbits(64) for _ in range(2)]
        learner.observe("a.com", article + prose, [50, 50, 40, 40, 40])
        assert all(learner.is_boilerplate(b, "a.com") for b in prose)
        after = BoilerplateLearner(min_pages=2)
        after.observe("a.com", article + prose, [50, 50, 40, 40, 40])
        after.observe("a.com", prose, [40, 40, 40])
        assert all(after.is_boilerplate(b, "a.com") for b in prose)


def test_short_stories_of_a_site_still_teach_its_prose():
    """Two short stories, each mostly the site's prose (3 of 5 blocks): alike in size, so neither is
    an excerpt of the other, and the prose is learnt on the second page."""
    rng = random.Random(11)
    for _ in range(100):
        learner = BoilerplateLearner(min_pages=2)
        prose = [rng.getrandbits(64) for _ in range(3)]
        for _ in range(2):
            learner.observe("a.com", [rng.getrandbits(64) for _ in range(2)] + prose)
        assert all(map(lambda b: learner.is_boilerplate(b, "a.com"), prose))


def test_pages_of_few_blocks_are_compared_exactly():
    """A page of at most k blocks is kept whole: Jaccard similarity and containment of its words."""
    from stream_lsh.core.boilerplate import _containment, _similarity, weighted_context

    a = weighted_context([1, 2, 3], [10, 20, 30], 8)
    b = weighted_context([2, 3, 4], [20, 30, 50], 8)
    assert _similarity(a, b, 8) == pytest.approx(50 / 110)
    assert _containment(a, b, 8) == pytest.approx(50 / 60)
    assert _containment(b, a, 8) == pytest.approx(50 / 100)
    assert _similarity(a, a, 8) == 1.0 and _similarity(a, weighted_context([9], [5], 8), 8) == 0.0


def test_samples_of_large_pages_estimate_their_words():
    """Pages of 60 blocks, sampled to 32: over many draws the estimates centre on the truth."""
    from stream_lsh.core.boilerplate import _containment, _similarity, weighted_context

    rng = random.Random(3)
    errors_j, errors_c = [], []
    for _ in range(300):
        shared = [(rng.getrandbits(64), rng.randint(1, 60)) for _ in range(30)]
        own_a = [(rng.getrandbits(64), rng.randint(1, 60)) for _ in range(30)]
        own_b = [(rng.getrandbits(64), rng.randint(1, 60)) for _ in range(30)]
        a = weighted_context(*zip(*(shared + own_a)), 32)
        b = weighted_context(*zip(*(shared + own_b)), 32)
        words = [sum(w for _, w in part) for part in (shared, own_a, own_b)]
        errors_j.append(_similarity(a, b, 32) - words[0] / sum(words))
        errors_c.append(_containment(a, b, 32) - words[0] / (words[0] + words[1]))
    for errors in (errors_j, errors_c):
        assert abs(sum(errors) / len(errors)) < 0.02
        assert (sum(e * e for e in errors) / len(errors)) ** 0.5 < 0.12


@pytest.mark.parametrize(
    "bad", [{"same_page_containment": 0.0}, {"same_page_containment": 1.5}, {"excerpt_ratio": 0.5}]
)
def test_the_excerpt_test_is_validated(bad):
    with pytest.raises(ValueError):
        BoilerplateLearner(**bad)


def test_boilerplate_is_only_ever_the_site_own():
    """A block learnt at one site is that site's boilerplate only: a story's sentence that an
    aggregator repeats in its digests is not cut from the story's other copies. Learnt at a second
    site too, it is still no third site's: each site learns from its own pages, which is what lets
    one learner per site partition know what batch's one learner knows."""
    learner = BoilerplateLearner(min_pages=2)
    shared = 424_242
    learner.observe("a.com", [shared] + fps(5, 10_000))
    learner.observe("b.com", [shared] + fps(5, 20_000))
    assert not learner.is_boilerplate(shared, "a.com")  # one context on each site
    learner.observe("a.com", [shared] + fps(5, 30_000))
    assert learner.is_boilerplate(shared, "a.com") and not learner.is_boilerplate(shared, "c.com")
    learner.observe("b.com", [shared] + fps(5, 40_000))
    assert learner.is_boilerplate(shared, "b.com") and not learner.is_boilerplate(shared, "c.com")
    assert learner.boilerplate_blocks == 2  # once for each site that learnt it


def test_state_saved_when_a_block_learnt_at_two_sites_was_everybody_is_still_read():
    """Format 3 kept one site per block, or None once two sites had learnt it: such a block stays
    everybody's (it was learnt, and is not learnt again), the others their site's."""
    learner = BoilerplateLearner()
    learner.load_state({"format": 3, "contexts": {}, "boilerplate": [[7, "a.com"], [8, None]]})
    assert learner.is_boilerplate(7, "a.com") and not learner.is_boilerplate(7, "b.com")
    assert learner.is_boilerplate(8, "z.com")
    again = BoilerplateLearner()
    again.load_state(learner.state())
    assert again.boilerplate_state() == learner.boilerplate_state() == [[7, "a.com"], [8, None]]
    again.observe("a.com", fps(5, 50_000))  # a site with no boilerplate of its own still reads it
    assert again.is_boilerplate(8, "a.com")


def test_blocks_weigh_their_words():
    """A one-line article (one block of 160 words) beside eleven blocks of site chrome (a header, a
    list of headlines, a newsletter pitch, a footer: 100 words): two stories of the site are
    different pages by their text, so the chrome is learnt on the second page. Counted as blocks,
    the two pages share 11 of 13 and look like one story updated."""
    chrome = fps(11, 500)
    chrome_words = [9] * 8 + [8, 14, 14]
    for weighted in (True, False):
        learner = BoilerplateLearner(min_pages=2)
        for story in (1_000_001, 2_000_002):
            learner.observe("a.com", chrome + [story], chrome_words + [160] if weighted else None)
        assert all(learner.is_boilerplate(b, "a.com") for b in chrome) == weighted


def test_briefs_beside_more_site_prose_than_story_teach_it_on_the_second_page():
    """Two briefs of 50 words, each beside the site's 130 words of prose in eight blocks (a cookie
    notice, a newsletter pitch, an "about us"): the pages share 130 of 230 words (0.57), more than
    they differ in, yet they are two stories; at a bar of one half they looked like one story
    updated, the prose was never learnt, and the briefs matched through it."""
    prose = fps(8, 500)
    prose_words = [16] * 7 + [18]
    learner = BoilerplateLearner(min_pages=2)
    for story in (1_000_001, 2_000_002):
        learner.observe("a.com", [story] + prose, [50] + prose_words)
    assert all(learner.is_boilerplate(b, "a.com") for b in prose)


def test_a_short_story_with_a_paragraph_rewritten_is_still_one_context():
    """The other side of the bar: four paragraphs, one rewritten (3 of 5 alike, 0.6), versions of
    one story, with or without the site's prose beside them."""
    for prose in ([], fps(3, 500)):
        learner = BoilerplateLearner(min_pages=2)
        story = fps(4, 9_000)
        learner.observe("a.com", story + prose, [40] * 4 + [30] * len(prose))
        learner.observe("a.com", [7_777] + story[1:] + prose, [40] * 4 + [30] * len(prose))
        assert not any(learner.is_boilerplate(b, "a.com") for b in story)


def test_an_earlier_version_is_judged_without_the_prose_its_site_learnt_since():
    """A wire reissues a release with a note on top and one paragraph corrected. When the first
    issue was read, the company's "About" and forward-looking paragraphs beside it were not yet
    known as prose; by the reissue they are, so the reissue's context no longer holds them. Judged
    with them, the first issue was 360 words against the reissue's 260 and alike at 0.48: its
    paragraphs were learnt as the wire's prose and cut from the reissue (the thirtieth outside
    set: it found no candidate). Judged on what the site has not learnt, 240 against 260, alike at
    0.67: one story updated."""
    learner = BoilerplateLearner(min_pages=2)
    story, about = fps(6, 9_000), fps(2, 500)
    learner.observe("wire.com", story + about, [40] * 6 + [60] * 2)
    for other in (1_000_000, 2_000_000):  # two other releases of the company teach its prose
        learner.observe("wire.com", fps(4, other) + about, [40] * 4 + [60] * 2)
    assert all(learner.is_boilerplate(b, "wire.com") for b in about)
    reissue = [7_000, *story[:-1], 7_001]  # a note; the last paragraph corrected
    assert learner.observe("wire.com", reissue, [20] + [40] * 6) == []
    assert not any(learner.is_boilerplate(b, "wire.com") for b in story)


@pytest.mark.parametrize("blocks", [1, 2, 50])
def test_rules_hold_for_pages_of_one_two_and_fifty_blocks(blocks):
    """Site prose beside stories of ``blocks`` blocks is learnt; versions of one story (a block in
    ten rewritten) and a teaser of it keep their text; a lone block is never judged."""
    rng = random.Random(blocks)
    learner = BoilerplateLearner(min_pages=2)
    prose = [rng.getrandbits(64) for _ in range(2)]
    words = max(8, 400 // blocks)
    story = [rng.getrandbits(64) for _ in range(blocks)]
    learner.observe("a.com", story + prose, [words] * blocks + [30, 30])
    for _ in range(3):
        version = list(story)
        if blocks >= 10:
            version[rng.randrange(blocks)] = rng.getrandbits(64)
        learner.observe("a.com", version + prose, [words] * blocks + [30, 30])
    teaser = story[: max(1, blocks // 4)]
    learner.observe("a.com", [rng.getrandbits(64)] + teaser, [10] + [words] * len(teaser))
    assert not any(learner.is_boilerplate(b, "a.com") for b in story)
    other = [rng.getrandbits(64) for _ in range(blocks)]
    learner.observe("a.com", other + prose, [words] * blocks + [30, 30])
    assert all(learner.is_boilerplate(b, "a.com") for b in prose)
    alone = BoilerplateLearner(min_pages=2)
    for _ in range(3):
        alone.observe("a.com", [99], [words])
    assert not alone.is_boilerplate(99, "a.com")


def test_a_lone_block_never_becomes_boilerplate():
    learner = BoilerplateLearner(min_pages=2)
    for _ in range(3):
        learner.observe("a.com", [99])
    assert not learner.is_boilerplate(99, "a.com")


def test_bounds_hold():
    learner = BoilerplateLearner(min_pages=2, max_blocks_per_site=100, max_boilerplate=10)
    for page in range(200):
        learner.observe("a.com", [7, 8] + fps(3, 1000 * page + 100))
    assert len(learner._contexts["a.com"]) <= 100
    assert learner.boilerplate_blocks <= 10


def test_a_site_read_for_long_holds_the_default_bound_and_still_learns_its_prose():
    """With the default bound a site's table stops growing (its memory is the bound's, however many
    of its pages are read), and prose that comes back within the last ~100 pages of a site is
    still learnt: the bound forgets only what a site stopped repeating."""
    learner = BoilerplateLearner()
    weekly, rare = 5, 6  # once every 60 pages; once, then again 300 pages later
    for page in range(3000):
        blocks = fps(20, 1000 * page + 100)  # the story's paragraphs: new on every page
        if page % 60 == 0 and page:
            blocks.append(weekly)
        if page in (10, 310):
            blocks.append(rare)
        learner.observe("a.com", blocks)
        assert len(learner._contexts["a.com"]) <= 2_000  # ~100 of these pages: the default bound
    assert learner.is_boilerplate(weekly, "a.com")
    assert not learner.is_boilerplate(rare, "a.com")  # forgotten in between: one context each time


def test_learnable_blocks_need_enough_words():
    learner = BoilerplateLearner(min_words=5)
    assert learner.learnable("one two three four five") and not learner.learnable("read more")


def test_state_round_trip():
    learner = BoilerplateLearner()
    learner.observe("a.com", [1, 2, 3])
    learner.observe("a.com", [1, 4, 5])
    copy = BoilerplateLearner()
    copy.load_state(orjson.loads(orjson.dumps(learner.state())))
    assert copy.state() == learner.state() and copy.is_boilerplate(1, "a.com")


def test_a_page_fetched_again_at_its_address_keeps_its_story():
    """A short story beside a sidebar of teasers that changed, fetched again once readers' comments
    filled in: judged by its words alone it is another page, and its paragraphs would be learnt as
    the site's prose. Its address says it is the same page."""
    story = [101, 102, 103]
    first = story + fps(4, 1_000)
    again = story + fps(4, 2_000) + fps(6, 3_000)  # new teasers, then comments
    for address, learnt in ((0, True), (77, False)):
        learner = BoilerplateLearner(min_pages=2)
        learner.observe("a.com", first, [20, 21, 11, 25, 25, 25, 25], address=address)
        learner.observe("a.com", again, [20, 21, 11] + [25] * 4 + [6] * 6, address=address)
        assert all(learner.is_boilerplate(b, "a.com") for b in story) is learnt


def test_another_address_still_teaches_the_sites_prose():
    learner = BoilerplateLearner(min_pages=2)
    prose = [11_111, 22_222, 33_333]
    learner.observe("a.com", prose + fps(10, 1_000_000), address=1)
    learner.observe("a.com", prose + fps(10, 2_000_000), address=2)
    assert all(learner.is_boilerplate(b, "a.com") for b in prose)


def test_state_keeps_each_pages_address_and_reads_the_fourth_format():
    learner = BoilerplateLearner()
    learner.observe("a.com", [1, 2, 3], address=9)
    copy = BoilerplateLearner()
    copy.load_state(orjson.loads(orjson.dumps(learner.state())))
    assert copy._contexts["a.com"][1][0].address == 9
    copy.observe("a.com", [1, 4, 5], address=9)
    assert not copy.is_boilerplate(1, "a.com")
    fourth = {
        "format": 4,
        "contexts": {
            "a.com": {"pages": [[3, [[1, 1, 0], [2, 1, 333]], False]], "blocks": [[1, [0]], [2, [0]]]}
        },
        "boilerplate": [],
    }
    old = BoilerplateLearner()
    old.load_state(fourth)
    assert old._contexts["a.com"][1][0].address == 0


def test_state_of_the_first_format_keeps_its_boilerplate_for_every_site():
    """Format 1 counted blocks and shared one set of boilerplate: its contexts cannot be compared
    with weighed ones and are learnt afresh; its boilerplate blocks stay everybody's."""
    learner = BoilerplateLearner()
    learner.load_state({"contexts": {"a.com": [[5, [[5, 6, 7]]]]}, "boilerplate": [1, 2]})
    assert learner.is_boilerplate(1, "b.com") and learner.is_boilerplate(2, "a.com")
    assert learner.state()["contexts"]["a.com"]["pages"][0][2] is True  # judged as that version judged it


def test_a_pages_context_is_saved_once_for_all_its_blocks_and_shared_again_when_loaded():
    learner = BoilerplateLearner()
    learner.observe("a.com", [1, 2, 3, 4], [9, 9, 9, 9])
    learner.observe("a.com", [1, 5, 6, 7], [9, 9, 9, 9])
    saved = learner.state()["contexts"]["a.com"]
    assert learner.is_boilerplate(1, "a.com")  # in two pages: learnt, and no longer in the table
    assert len(saved["pages"]) == 2 and len(saved["blocks"]) == 6  # not one context per block
    copy = BoilerplateLearner()
    copy.load_state(orjson.loads(orjson.dumps(learner.state())))
    tables = copy._contexts["a.com"]
    assert tables[2][0] is tables[3][0] is tables[4][0]  # one object, as before saving
    assert copy.state() == learner.state()


def test_state_of_the_second_format_is_read_and_its_contexts_shared():
    """Format 2 saved every block's contexts in full."""
    context = [18, [[2, 9, 0], [3, 9, 500]], False]
    learner = BoilerplateLearner()
    learner.load_state(
        {"format": 2, "contexts": {"a.com": [[2, [context]], [3, [context]]]}, "boilerplate": []}
    )
    assert learner._contexts["a.com"][2][0] is learner._contexts["a.com"][3][0]
    assert learner.state()["contexts"]["a.com"] == {"pages": [[*context, 0]], "blocks": [[2, [0]], [3, [0]]]}


@pytest.mark.parametrize("kwargs", [dict(min_pages=1), dict(min_words=0), dict(max_boilerplate=0)])
def test_bad_parameters_are_refused(kwargs):
    with pytest.raises(ValueError):
        BoilerplateLearner(**kwargs)


def test_a_listing_that_teases_a_story_teaches_its_site_nothing():
    """A section page gives each story's headline over its first sentence: beside the story's own
    page that sentence is a block in two contexts, and the site learnt its stories' leads as
    chrome. A listing is filtered with what its site knows, and teaches nothing."""
    from conftest import prose

    from stream_lsh.core.dedup import Deduplicator
    from stream_lsh.core.page import Page

    lead = "Taylor Park Primary School will be closed today due to severe storm damage and power outages."
    story = f"{lead}\n{prose(71, 60)}\n{prose(72, 50)}"
    cards = "\n".join(
        [
            "Taylor Park Primary School closed today",
            lead,
            "Cougars too strong for the Rovers",
            "The Cougars defeated the Rovers by two points in round twelve of the valley league.",
            "Council approves the new library",
            "The council approved the new library on Monday night after a long debate in chambers.",
        ]
    )
    engine = Deduplicator()
    site = "mail.example"
    engine.process_batch(
        [
            Page(id="story", text=story, url=f"https://{site}/story/585813/school-closed", source=site),
            Page(id="section", text=cards, url=f"https://{site}/news/education/", source=site),
            Page(id="front", text=cards, url=f"https://{site}/", source=site),
        ]
    )
    again = engine.prepare(
        Page(
            id="print", text=story, url=f"https://{site}/story/585813/school-closed?print=true", source=site
        ),
        None,
    )
    assert again.text.startswith("taylor park primary school will be closed"), again.text[:80]
