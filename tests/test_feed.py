"""A feed item given as a page (stream_lsh.core.feed): read as the card it is, it finds its story."""

import orjson

from stream_lsh.core.decision import DUPLICATE, HEADLINE
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.feed import feed_document, feed_item_html
from stream_lsh.core.headline import headline_text
from stream_lsh.core.page import Page
from stream_lsh.core.text import html_blocks

TITLE = "Storm leaves thousands without power on the coast"
SUMMARY = "Crews worked through the night to restore power to the coastal towns."
PROSE = "The storm hit the coast on Monday night. " * 30

RSS_ITEM = f"""<item>
  <title><![CDATA[{TITLE}]]></title>
  <link>https://news.example/2026/storm</link>
  <guid isPermaLink="false">a1b2c3</guid>
  <pubDate>Tue, 24 Mar 2026 05:19:39 +0000</pubDate>
  <description><![CDATA[{SUMMARY}]]></description>
  <category>world</category>
</item>"""

ATOM_ENTRY = f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>News Example</title>
<entry><title type="html">Storm leaves thousands without power on the &lt;b&gt;coast&lt;/b&gt;</title>
<link href="https://news.example/2026/storm"/><updated>2026-03-24T05:19:39Z</updated>
<summary>short</summary><content type="html">&lt;p&gt;{SUMMARY}&lt;/p&gt;</content></entry></feed>"""


def test_an_item_is_its_title_and_its_summary():
    for body in (RSS_ITEM, ATOM_ENTRY):
        markup = feed_item_html(body)
        assert markup is not None
        assert html_blocks(markup) == [TITLE, SUMMARY]
        assert headline_text(title=None, html=markup, text=None) == TITLE


def test_what_is_not_one_item_is_read_as_it_is():
    document = (
        f"<rss><channel><title>News</title>{RSS_ITEM}{RSS_ITEM.replace('a1b2c3', 'd4')}</channel></rss>"
    )
    assert feed_item_html(document) is None  # a feed document of several stories
    assert feed_item_html("<html><body><item>not a feed</item></body></html>") is None
    assert feed_item_html("A story that mentions <item> tags.") is None
    assert feed_item_html(None) is None and feed_item_html("") is None


def test_an_rss_item_given_as_text_joins_its_story_by_its_headline():
    story = Page(
        id="story",
        html=f"<html><body><h1>{TITLE}</h1><p>{PROSE}</p></body></html>",
        source="news.example",
    )
    engine = Deduplicator()
    engine.process(story)
    decided = engine.process(Page(id="item", text=RSS_ITEM, source="feeds.example"))
    assert (decided.status, decided.duplicate_of, decided.match) == (DUPLICATE, "story", HEADLINE), decided


def test_a_feed_document_of_several_items_is_a_roundup_that_no_story_joins():
    """A feed document lists several stories: whatever its items read like, it is a roundup, and
    a story whose summary it holds, coming after it, founds its own cluster."""
    other = RSS_ITEM.replace("a1b2c3", "d4").replace(TITLE, "Council backs the harbour plan")
    document = f"<rss><channel><title>News</title>{RSS_ITEM}{other}</channel></rss>"
    assert feed_document(document) and feed_document(f'<?xml version="1.0"?>{document}')
    assert not feed_document(RSS_ITEM) and not feed_document(ATOM_ENTRY)  # one item: a card
    assert not feed_document("A story that mentions <item> tags. <item>x</item><item>y</item>")
    engine = Deduplicator()
    feed = engine.process(Page(id="feed", text=document, source="news.example"))
    story = engine.process(
        Page(id="story", text=f"{TITLE}\n{SUMMARY} {PROSE}", source="news.example", title=TITLE)
    )
    assert feed.roundup, feed
    assert story.cluster_id == "story", story


def test_an_apps_feed_as_json_is_a_feed_document():
    cards = [{"id": str(n), "headline": f"Story {n}", "summary": SUMMARY} for n in range(3)]
    assert feed_document(orjson.dumps({"feed": "top", "cards": cards}).decode())
    assert feed_document(orjson.dumps([{"title": "One"}, {"title": "Two"}]).decode())
    card = {"type": "story_card", "headline": TITLE, "summary": SUMMARY}
    assert not feed_document(orjson.dumps(card).decode())  # one card: one story
    assert not feed_document("{not json") and not feed_document("[1, 2]")
