"""A page's opening (stream_lsh.core.opening): a teaser too short to compare joins the story whose
article opens with its words, nothing longer joins anything that way, and a story that comes after
its teaser joins the teaser."""

import numpy as np
import pytest
from conftest import entry_written_with, prose
from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core.decision import DUPLICATE, NO_CONTENT, OPENING, UNIQUE, Match, decide
from stream_lsh.core.dedup import Deduplicator, export_state, import_state
from stream_lsh.core.keyed import no_shingles
from stream_lsh.core.opening import (
    MAX_SIZE_OF_HELD,
    MIN_SHARE_IN_ORIGINAL,
    OPENING_SHINGLES,
    SHORT_SHINGLES,
    holds_earlier_opening,
    joins_by_opening,
    lies_in_earlier_opening,
    openings,
)
from stream_lsh.core.page import Page
from stream_lsh.core.shingles import ShingleBatch
from stream_lsh.core.verification import Verification
from stream_lsh.stores.disk_index import DiskIndex

RULE = Verification(0.3, 0.7)


def batch(*pages: list[int]) -> ShingleBatch:
    """Pages of shingle values, each shingle starting at its position."""
    values = np.array([v for p in pages for v in p], dtype=np.uint64)
    offsets = np.concatenate(([0], np.cumsum([len(p) for p in pages])))
    starts = np.array([i for p in pages for i in range(len(p))], dtype=np.int64)
    return ShingleBatch(values, offsets, starts)


def test_pages_that_open_with_the_same_shingles_share_their_key_whatever_follows():
    keys, _ = openings(batch([1, 2, 3, 4, 9, 9], [1, 2, 3, 4], [1, 2, 3, 5], [2, 1, 3, 4]))
    assert keys[0] == keys[1] != 0
    assert keys[2] != keys[0] and keys[3] != keys[0]  # another shingle, or the same in another order


def test_the_opening_counts_from_where_the_article_begins():
    keys, _ = openings(batch([7, 8, 1, 2, 3, 4], [1, 2, 3, 4]), begins=[2, 0])
    assert keys[0] == keys[1]


def test_a_page_with_too_few_shingles_has_no_opening():
    keys, _ = openings(batch(list(range(OPENING_SHINGLES - 1)), [5, 6, 7, 8, 9]), begins=[0, 2])
    assert keys.tolist() == [0, 0]


def test_a_page_is_short_when_it_is_all_lead():
    _, short = openings(batch(list(range(SHORT_SHINGLES)), list(range(SHORT_SHINGLES + 1))))
    assert short.tolist() == [True, False]


@given(st.lists(st.lists(st.integers(1, 50), max_size=40), min_size=1, max_size=8))
def test_a_key_depends_on_the_first_shingles_alone(pages):
    """Property: two pages have one key exactly when both have enough shingles and their first
    OPENING_SHINGLES agree (up to hash collisions, which 64 bits make negligible here)."""
    keys, short = openings(batch(*pages))
    for i, a in enumerate(pages):
        assert short[i] == (len(a) <= SHORT_SHINGLES)
        assert (keys[i] == 0) == (len(a) < OPENING_SHINGLES)
        for j, b in enumerate(pages):
            if keys[i] and keys[j]:
                assert (keys[i] == keys[j]) == (a[:OPENING_SHINGLES] == b[:OPENING_SHINGLES])


def test_only_a_short_page_mostly_in_the_other_joins_by_its_opening():
    assert joins_by_opening(True, None)  # unsigned: nothing to measure it with
    assert joins_by_opening(True, MIN_SHARE_IN_ORIGINAL)
    assert not joins_by_opening(True, MIN_SHARE_IN_ORIGINAL - 0.01)
    assert not joins_by_opening(False, 1.0)


def test_the_rule_joins_an_unsigned_or_unmatched_page_to_its_opening_only():
    story = Match("story", 0.05, "S", 0.9, 0.9, 0.05)
    kwargs = {"exact": None, "rule": RULE, "founds": "p"}
    unsigned = decide("p", signed=False, candidates=[], opening=story, **kwargs)
    assert (unsigned.status, unsigned.cluster_id, unsigned.match, unsigned.similarity) == (
        DUPLICATE,
        "S",
        OPENING,
        None,
    )
    assert decide("p", signed=False, candidates=[], **kwargs).status == NO_CONTENT
    alone = decide("p", signed=True, candidates=[], opening=story, **kwargs)
    assert (alone.status, alone.duplicate_of, alone.match, alone.similarity) == (
        DUPLICATE,
        "story",
        OPENING,
        0.05,
    )
    other = Match("other", 0.8, "T")
    matched = decide("p", signed=True, candidates=[other], opening=story, **kwargs)
    assert (matched.cluster_id, matched.match) == ("T", "jaccard")  # a match by the measures comes first
    assert decide("p", signed=True, candidates=[], **kwargs).status == UNIQUE


def page(page_id: str, text: str, site: str) -> Page:
    return Page(id=page_id, text=text, source=site)


def first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n]) + "…"


def story_and_teasers():
    """A story, then pages at other outlets: a card of its first nine words (too few shingles to
    sign), a brief of its first fourteen (signed, but far below any threshold against the story),
    and a roundup that opens with its first sentence and goes on with another story."""
    story = prose(1, 400)
    roundup = first_words(story, 20) + "\n" + prose(2, 300)
    return [
        page("story", story, "wire.example"),
        page("card", first_words(story, 9), "cards.example"),
        page("brief", first_words(story, 14), "feeds.example"),
        page("roundup", roundup, "letters.example"),
    ]


def test_a_teaser_too_short_to_compare_joins_its_story_and_a_longer_page_does_not():
    engine = Deduplicator()
    story_d, card_d, brief_d, roundup_d = engine.process_batch(story_and_teasers())
    assert story_d.status == UNIQUE
    assert (card_d.status, card_d.duplicate_of, card_d.match, card_d.similarity) == (
        DUPLICATE,
        "story",
        OPENING,
        None,
    ), card_d
    assert (brief_d.duplicate_of, brief_d.match) == ("story", OPENING), brief_d
    assert brief_d.similarity is not None and brief_d.similarity < RULE.jaccard
    assert roundup_d.status == UNIQUE, roundup_d
    card = engine.index.get("card")  # unsigned, it is found by its keys only (core/keyed.py)
    assert card is not None and card.band_keys.size == 0 and no_shingles(card.signature)


def test_without_openings_the_card_stays_apart():
    """What the rule changes: the same pages, with the story's opening unknown to the window."""
    engine = Deduplicator()
    story, card, *_ = story_and_teasers()
    engine.process(story)
    engine.index.get("story").opening = 0
    engine.index.window.by_content = {
        k: v for k, v in engine.index.window.by_content.items() if k == engine.index.get("story").content_hash
    }
    alone = engine.process(card)  # found by nothing, it founds a cluster of its own (core/keyed.py)
    assert (alone.status, alone.cluster_id, alone.duplicate_of) == (UNIQUE, "card", None)


def test_a_saved_window_keeps_the_openings():
    pages = story_and_teasers()
    engine = Deduplicator()
    engine.process(pages[0])
    header, arrays = export_state(engine)
    loaded = Deduplicator()
    import_state(loaded, header, arrays)
    assert loaded.process(pages[1]).duplicate_of == "story"
    # a state file saved before openings were kept has no openings array and no opening keys
    content = loaded.index.get("story").content_hash
    del arrays["openings"]
    header["tables"]["by_content"] = [row for row in header["tables"]["by_content"] if row[0] == content]
    older = Deduplicator()
    import_state(older, header, arrays)
    assert older.index.get("story").opening == 0
    assert older.process(pages[1]).status == UNIQUE  # the card finds nothing: a cluster of its own


def decided_alike_on_disk(pages: list[Page], directory) -> bool:
    """Whether an engine over a window on disk decides the pages as one in memory does."""
    on_disk = Deduplicator(open_index=lambda scheme, banding: DiskIndex(directory, scheme, banding))
    return [d.to_dict() for d in on_disk.process_batch(pages)] == [
        d.to_dict() for d in Deduplicator().process_batch(pages)
    ]


def test_a_window_on_disk_finds_the_same_openings(tmp_path):
    assert decided_alike_on_disk(story_and_teasers(), tmp_path / "window")


def test_a_long_page_that_opens_with_a_story_and_goes_on_its_own_way_stays_apart():
    """A page that quotes a story's first 80 words and goes on with 100 of its own: most of it
    lies in the story (containment 0.6, below the threshold), yet it is no copy. Only a short page
    joins by its opening."""
    engine = Deduplicator()
    story = prose(1, 400)
    engine.process(page("story", story, "wire.example"))
    quoting = engine.process(page("quoting", first_words(story, 80) + "\n" + prose(3, 100), "blog.example"))
    assert quoting.status == UNIQUE and quoting.containment is not None
    assert MIN_SHARE_IN_ORIGINAL < quoting.containment < RULE.containment


def test_an_entry_written_before_openings_were_kept_reads_without_one():
    from stream_lsh.stores.entry_codec import band_keys_of, decode_entry, encode_entry

    engine = Deduplicator()
    engine.process(story_and_teasers()[0])
    entry = engine.index.get("story")
    assert entry.opening
    raw = encode_entry(entry)
    assert decode_entry(raw, keep_shingles=False).opening == entry.opening
    older = entry_written_with(raw, 9)  # the layout before openings: nine fields
    assert decode_entry(older, keep_shingles=False).opening == 0
    assert band_keys_of(older) == band_keys_of(raw)


def test_a_page_holds_an_earlier_opening_only_when_that_page_is_small_and_inside_it():
    c = RULE.containment
    assert holds_earlier_opening(0.1, 1.0, c)  # a teaser a tenth of the page's size, all in it
    assert holds_earlier_opening(MAX_SIZE_OF_HELD * c, c, c)
    assert not holds_earlier_opening(0.1, c - 0.01, c)  # partly something else
    assert not holds_earlier_opening(0.6, 1.0, c)  # over half the page's size: a version, for the measures
    assert not holds_earlier_opening(None, 1.0, c) and not holds_earlier_opening(0.1, None, c)
    assert not holds_earlier_opening(0.1, 1.0, None)  # containment off: Jaccard similarity alone


def test_a_page_lies_in_an_earlier_opening_only_when_it_is_small_beside_that_page_and_inside_it():
    c = RULE.containment
    assert lies_in_earlier_opening(1.0, 0.1, c)  # a brief a tenth of the story's size, all in it
    assert not lies_in_earlier_opening(c - 0.01, 0.1, c)  # partly its own text: a quoting page
    assert not lies_in_earlier_opening(1.0, 0.6, c)  # over half the story's size: for the measures
    assert not lies_in_earlier_opening(1.0, 0.1, None)  # containment off: Jaccard similarity alone


def test_a_brief_of_a_story_s_first_paragraphs_after_the_story_joins_it():
    """A brief of a story's first 100 words at another outlet: too long to be short (all lead), and
    beside a story of 800 words too small for the bands to meet, it founded a cluster of its own
    (the twenty-ninth outside set: 21 briefs). It lies in the story and opens like it."""
    story = prose(4, 800)
    words = story.split()
    brief = " ".join(words[:35]) + "\n" + " ".join(words[35:70]) + "\n" + " ".join(words[70:100])
    story_d, brief_d = Deduplicator().process_batch(
        [page("story", story, "wire.example"), page("brief", brief, "news.example")]
    )
    assert story_d.status == UNIQUE
    assert (brief_d.status, brief_d.duplicate_of, brief_d.match) == (DUPLICATE, "story", OPENING), brief_d
    assert brief_d.containment is not None and brief_d.containment >= RULE.containment
    assert not brief_d.fuller


def test_the_rule_joins_a_page_to_the_teaser_it_holds_only_when_nothing_else_takes_it():
    teaser = Match("teaser", 0.1, "T", 1.0, 0.1, 1.0)
    kwargs = {"exact": None, "rule": RULE, "founds": "p", "signed": True}
    alone = decide("p", candidates=[], opened_by=teaser, **kwargs)
    assert (alone.status, alone.cluster_id, alone.duplicate_of, alone.match, alone.containment) == (
        DUPLICATE,
        "T",
        "teaser",
        OPENING,
        1.0,
    )
    other = Match("other", 0.8, "O")
    assert decide("p", candidates=[other], opened_by=teaser, **kwargs).cluster_id == "O"
    assert decide("p", candidates=[], opened_by=teaser, roundup=True, **kwargs).status == UNIQUE


def test_a_story_after_its_teaser_joins_it_and_so_do_the_story_s_copies():
    """A brief of a story's first fourteen words comes first (an alert, a feed card), then the story
    and a copy of it: without the rule the story founds a second cluster, which its copies join."""
    story, _, brief, _ = story_and_teasers()
    copy = page("copy", story.text, "other.example")
    engine = Deduplicator()
    brief_d, story_d, copy_d = engine.process_batch([brief, story, copy])
    assert brief_d.status == UNIQUE
    assert (story_d.status, story_d.cluster_id, story_d.duplicate_of, story_d.match) == (
        DUPLICATE,
        "brief",
        "brief",
        OPENING,
    ), story_d
    assert story_d.similarity is not None and story_d.similarity < RULE.jaccard
    assert story_d.containment is not None and story_d.containment >= RULE.containment
    assert copy_d.cluster_id == "brief"


@pytest.mark.parametrize("label", ["BREAKING:", "Just in:", "This just in:", "WATCH:"])
def test_a_story_joins_its_earlier_push_alert_whatever_label_the_alert_opens_with(label):
    """A push alert gives the story's first sentence after a label of its own; its opening counts
    from the sentence, as the story's does."""
    story, _, brief, _ = story_and_teasers()
    alert = page("alert", f"{label} {brief.text}", "alerts.example")
    alert_d, story_d = Deduplicator().process_batch([alert, story])
    assert alert_d.status == UNIQUE
    assert (story_d.cluster_id, story_d.match) == ("alert", OPENING), story_d


def test_a_page_that_opens_like_an_earlier_page_of_its_own_size_is_left_to_the_measures():
    """Two stories that open with the same stock sentence and go on apart: neither holds the other."""
    stock = first_words(prose(7, 40), 14)
    one = page("one", stock + "\n" + prose(1, 300), "a.example")
    two = page("two", stock + "\n" + prose(2, 300), "b.example")
    assert [d.status for d in Deduplicator().process_batch([one, two])] == [UNIQUE, UNIQUE]


def test_a_window_on_disk_joins_a_story_to_its_earlier_teaser_alike(tmp_path):
    story, card, brief, roundup = story_and_teasers()
    assert decided_alike_on_disk([brief, card, story, roundup], tmp_path / "window")
