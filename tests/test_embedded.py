"""The article a page carries as data (stream_lsh.core.embedded): a script-built page, a JSON card."""

import html

import orjson
from hypothesis import given
from hypothesis import strategies as st

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.decision import DUPLICATE, HEADLINE, NO_CONTENT
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.embedded import data_article_html, json_card_html
from stream_lsh.core.page import Page
from stream_lsh.core.prepare import Preparer
from stream_lsh.core.text import html_blocks

TITLE = "Council approves new flood barriers for the river district"
PARAGRAPHS = [
    "The city council voted on Tuesday to build a line of flood barriers along the river, after two "
    "winters in which the water reached the doors of the shops in the old market.",
    "The barriers will cost about four million dollars and should be finished before the spring "
    "rains of next year, the council's engineer told the meeting.",
    "Residents who had asked for the work for a decade said they were relieved, though some of the "
    "owners of the houses by the water said the walls would spoil the view from their gardens.",
    "The work starts in May, and the river path will be closed for most of the summer while the "
    "footings are laid and the first of the gates is put in place.",
]


def shell(data: str, shown: str = f"<h1>{TITLE}</h1>") -> str:
    """A script-built page as a crawler that runs no scripts fetches it."""
    return (
        f"<!DOCTYPE html><html><head><title>{TITLE} | The Courier</title>{data}</head><body>"
        "<noscript>You need to enable JavaScript to run this app.</noscript>"
        f'<div id="__next">{shown}<div class="skeleton" aria-busy="true"></div></div></body></html>'
    )


def next_data(props: object) -> str:
    return f'<script id="__NEXT_DATA__" type="application/json">{orjson.dumps(props).decode()}</script>'


ARTICLE_STATE = {
    "props": {
        "pageProps": {
            "article": {
                "headline": TITLE,
                "byline": "Ann Reyes",
                "body": [{"type": "paragraph", "text": text} for text in PARAGRAPHS],
            },
            "trending": [{"title": "Another story of the day", "url": "/x"}],
            "ads": [{"slot": 0, "label": "Sponsored", "text": "Try our meal kit"}],
        }
    }
}
LD_JSON = (
    '<script type="application/ld+json">'
    + orjson.dumps(
        {
            "@context": "https://schema.org",
            "@type": "NewsArticle",
            "headline": TITLE,
            "articleBody": "\n".join(PARAGRAPHS),
        }
    ).decode()
    + "</script>"
)
STORY = (
    f"<html><body><nav>Home News Sport</nav><h1>{TITLE}</h1>"
    f"{''.join(f'<p>{p}</p>' for p in PARAGRAPHS)}</body></html>"
)


def test_a_script_built_page_is_read_as_the_article_in_its_state():
    markup = data_article_html(shell(next_data(ARTICLE_STATE)), shown=[TITLE])
    assert markup is not None
    assert html_blocks(markup) == [TITLE, *PARAGRAPHS]  # not the trending list, nor the ads


def test_json_ld_article_body_is_read_and_an_assignment_too():
    assert html_blocks(data_article_html(shell(LD_JSON), shown=[TITLE]) or "") == [TITLE, *PARAGRAPHS]
    assigned = f"<script>window.__INITIAL_STATE__ = {orjson.dumps(ARTICLE_STATE).decode()};</script>"
    assert html_blocks(data_article_html(shell(assigned), shown=[TITLE]) or "") == [TITLE, *PARAGRAPHS]
    vue = {
        "article": {
            "title": TITLE,
            "author": {"name": "Ann Reyes"},
            "html": "".join(f"<p>{p}</p>" for p in PARAGRAPHS),
        }
    }
    vue_state = f"<script>window.__INITIAL_STATE__={orjson.dumps(vue).decode()}</script>"
    assert html_blocks(data_article_html(shell(vue_state, shown=""), []) or "") == [TITLE, *PARAGRAPHS]
    wordpress = {
        "title": {"rendered": TITLE},
        "content": {"rendered": "".join(f"<p>{p}</p>" for p in PARAGRAPHS)},
    }
    assert html_blocks(data_article_html(shell(next_data(wordpress)), []) or "") == [TITLE, *PARAGRAPHS]


def test_a_page_that_shows_its_article_is_read_as_it_shows_it():
    page = STORY.replace("<body>", f"<body>{LD_JSON}")
    assert data_article_html(page, html_blocks(page)) is None
    engine = Preparer(DedupConfig())
    assert engine.blocks(Page(id="a", html=page)) == engine.blocks(Page(id="b", html=STORY))


def test_data_without_an_article_leaves_the_page_as_it_shows():
    front = {
        "props": {
            "pageProps": {
                "items": [
                    {
                        "headline": f"Story number {i} of the day",
                        "summary": PARAGRAPHS[i % 4],
                        "url": f"/s/{i}",
                    }
                    for i in range(8)
                ]
            }
        }
    }
    assert data_article_html(shell(next_data(front), shown=""), []) is None  # a front lists; it is no article
    assert data_article_html(shell('<script type="application/json">{not json</script>'), []) is None
    assert data_article_html("<html><body><p>No scripts at all.</p></body></html>", []) is None


def test_a_script_built_copy_joins_its_story_by_its_text():
    engine = Deduplicator()
    assert engine.process(Page(id="story", html=STORY, source="courier.example")).status != NO_CONTENT
    for i, data in enumerate((next_data(ARTICLE_STATE), LD_JSON)):
        decided = engine.process(Page(id=f"shell{i}", html=shell(data), source=f"app{i}.example"))
        assert (decided.status, decided.duplicate_of) == (DUPLICATE, "story"), decided
        assert decided.match != HEADLINE and decided.similarity is not None
    # the same shell with its data cut off shows a headline: found by it alone, never compared
    bare = engine.process(Page(id="bare", html=shell(""), source="app9.example"))
    assert (bare.match, bare.similarity) == (HEADLINE, None)


def test_a_json_card_is_its_headline_and_its_fullest_text():
    item = {
        "id": "82891b",
        "title": TITLE,
        "content_text": None,
        "summary": PARAGRAPHS[0],
        "authors": [{"name": "Ann Reyes"}],
        "date_published": "2013-07-18T21:50:14-04:00",
    }
    assert html_blocks(json_card_html(orjson.dumps(item).decode()) or "") == [TITLE, PARAGRAPHS[0]]
    item["content_html"] = "".join(f"<p>{html.escape(p)}</p>" for p in PARAGRAPHS)
    assert html_blocks(json_card_html(orjson.dumps(item).decode()) or "") == [TITLE, *PARAGRAPHS]
    for body in ("[1, 2]", '{"id": 3}', "{broken", "Plain text.", "", None):
        assert json_card_html(body) is None


def test_a_feed_of_json_cards_stays_a_listing():
    cards = [{"headline": f"Story {i}", "summary": PARAGRAPHS[i]} for i in range(3)]
    extracted = Preparer(DedupConfig()).extract(Page(id="feed", text=orjson.dumps({"cards": cards}).decode()))
    assert extracted.listing


@given(st.text(max_size=300))
def test_any_script_content_is_read_or_left_without_an_error(content):
    for script in (
        f'<script type="application/json">{content}</script>',
        f"<script>window.s = {content}</script>",
    ):
        markup = data_article_html(shell(script), [])
        assert markup is None or markup.startswith("<html>")
    assert json_card_html("{" + content) is None or json_card_html("{" + content).startswith("<html>")
