"""The lead counts twice (stream_lsh.core.lead): copies share text where both pages begin,
a quoting page does not."""

from __future__ import annotations

import numpy as np
import pytest

from stream_lsh.core.banding import s_curve
from stream_lsh.core.config import DedupConfig
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.lead import LEAD_COPIES, LEAD_MIN_SHINGLES, with_lead
from stream_lsh.core.page import Page
from stream_lsh.core.shingles import ShingleBatch
from stream_lsh.core.verification import of_sets


def batch(*pages: list[int], starts: list[list[int]] | None = None) -> ShingleBatch:
    values = np.array([v for page in pages for v in page], dtype=np.uint64)
    offsets = np.cumsum([0, *map(len, pages)])
    flat = None if starts is None else np.array([s for page in starts for s in page], dtype=np.int64)
    return ShingleBatch(values, offsets, flat)


def test_share_zero_leaves_the_batch_as_it_is():
    b = batch(list(range(1, 40)))
    assert with_lead(b, 0.0) is b


def test_the_lead_is_added_again_tagged_after_the_page_own_shingles():
    page = list(range(1, 101))  # 100 shingles: the lead is max(25, the floor)
    out = with_lead(batch(page, [7, 8, 9]), 0.25)
    lead = max(25, LEAD_MIN_SHINGLES)
    first, second = out.values[: out.offsets[1]], out.values[out.offsets[1] : out.offsets[2]]
    assert first[:100].tolist() == page and first.size == 100 + LEAD_COPIES * lead
    assert second[:3].tolist() == [7, 8, 9] and second.size == 3 + LEAD_COPIES * 3  # a short page is all lead
    tagged = first[100:]
    assert not set(tagged.tolist()) & set(page)  # a tagged shingle never equals a plain one
    assert len(set(tagged.tolist())) == LEAD_COPIES * lead  # each copy has a tag of its own


def test_the_lead_counts_from_where_the_article_begins():
    """Shingles of a headline or byline (before ``begins``) are never lead: outlets retitle."""
    headline, article = [1, 2, 3], list(range(100, 200))
    starts = [[0, 1, 2] + list(range(10, 110))]
    with_headline = with_lead(batch(headline + article, starts=starts), 0.25, [10])
    other_headline = with_lead(batch([4, 5, 6] + article, starts=starts), 0.25, [10])
    tagged = set(with_headline.values[103:].tolist())
    assert tagged == set(other_headline.values[103:].tolist())  # the same lead, whatever the title


def sets(*pages: list[int]) -> list[np.ndarray]:
    out = with_lead(batch(*pages), 0.25)
    return [np.unique(out.values[out.offsets[i] : out.offsets[i + 1]]) for i in range(len(pages))]


def test_copies_resemble_more_and_quoting_pages_less():
    """A trimmed copy of a 200-shingle story (its first 110) against a fuller copy, and a page
    quoting 80 of them after 120 of its own: containment is all a set can say, and it says the
    same of both; where the shared text lies tells them apart."""
    story = list(range(1_000, 1_200))
    trimmed = story[:110]
    fuller = story[:180]
    quoting = list(range(5_000, 5_120)) + story[:80]
    plain_copy, plain_quote = (
        of_sets(np.array(trimmed), np.array(fuller)),
        of_sets(np.array(story[:80]), np.array(quoting)),
    )
    assert plain_quote.containment == 1.0 and plain_copy.containment == 1.0
    trimmed_set, fuller_set, quoting_set = sets(trimmed, fuller, quoting)
    copy, quote = of_sets(trimmed_set, fuller_set), of_sets(trimmed_set, quoting_set)
    assert copy.containment > 0.9 and copy.jaccard > plain_copy.jaccard
    assert quote.containment < 0.7  # below the default containment threshold
    assert quote.jaccard < of_sets(np.array(trimmed), np.array(quoting)).jaccard


def test_a_one_sentence_teaser_reaches_the_bands():
    """A teaser of 12 shingles is all lead and shares it with its story: its Jaccard similarity
    rises by half (0.09 to 0.15), and the chance that the default banding makes it a candidate
    goes from under a third to over a half; its containment stays whole. (A one-sentence teaser
    that the bands still miss joins by its opening, .opening.)"""
    story = list(range(1_000, 1_130))
    teaser_set, story_set = sets(story[:12], story)
    plain, weighed = of_sets(np.array(story[:12]), np.array(story)), of_sets(teaser_set, story_set)
    banding = DedupConfig().banding()
    assert s_curve(plain.jaccard, banding.bands, banding.rows) < 0.33
    assert weighed.jaccard > 1.5 * plain.jaccard
    assert s_curve(weighed.jaccard, banding.bands, banding.rows) > 0.55
    assert weighed.containment == 1.0


@pytest.mark.parametrize("bad", [-0.1, 1.5])
def test_the_share_is_validated(bad):
    with pytest.raises(ValueError):
        with_lead(batch([1, 2, 3]), bad)


def test_the_engine_skips_the_opening_headings(tmp_path):
    """The prepared page knows where its article begins: after the headline, byline and date."""
    engine = Deduplicator()
    text = (
        "Storm hits the coast\nBy Jane Doe\n"
        "The storm that hit the coast on Monday left thousands of homes without power."
    )
    prepared = engine.prepare(Page(id="a", text=text), None)
    assert prepared.lead_at == len("storm hits the coast by jane doe".split())
