"""A page's headline (stream_lsh.core.headline): a feed card or a brief that its story's bands
never reach finds the story by its headline, and a site's own title joins nothing."""

import pytest
from conftest import entry_written_with, prose
from hypothesis import given
from hypothesis import strategies as st
from test_opening import decided_alike_on_disk

from stream_lsh.core.decision import DUPLICATE, HEADLINE, NO_CONTENT, UNIQUE
from stream_lsh.core.dedup import Deduplicator, export_state, import_state
from stream_lsh.core.headline import (
    HEADLINE_WITHIN,
    MIN_WORDS,
    from_headline,
    headline_key,
    headline_text,
    later_part,
    site_title,
)
from stream_lsh.core.page import Page
from stream_lsh.core.verification import CONTAINMENT

HEADLINE_TEXT = "Sturgeon ready to delay Scottish second vote"


def key(
    text: str, url: str | None = "https://news.example/world/a-story-1", site: str = "news.example"
) -> int:
    return headline_key(text, url=url, site=site, seed=42)


# -- where the headline is found ---------------------------------------------------------------


def test_the_record_title_comes_first():
    html = "<html><head><title>Other | Site</title></head><body><h1>Also other</h1></body></html>"
    assert headline_text(title="  The title  ", html=html, text=None) == "The title"


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            '<head><meta property="og:title" content="Fed hikes rates &amp; more"><title>x | S</title></head>'
            "<h1>An h1</h1>",
            "Fed hikes rates & more",
        ),
        ("<head><meta property='og:title' content='Single quoted title'></head>", "Single quoted title"),
        ("<head><title>A title | The Site</title></head><body><h1>The <b>h1</b> text</h1>", "The h1 text"),
        ("<head><title>Story of the day - The Daily - News</title></head><p>x</p>", "Story of the day"),
        ("<head><title>No site name here</title></head>", "No site name here"),
        ('<div class="card"><h3 class="card-title">A card title</h3><p>Deck.</p></div>', "A card title"),
        ("<p>No heading at all.</p>", ""),
    ],
)
def test_html_gives_og_title_then_h1_then_title_then_a_fragment_heading(html, expected):
    assert headline_text(title=None, html=html, text=None) == expected


def test_plain_text_gives_its_first_line_when_it_is_a_heading():
    assert headline_text(title=None, html=None, text="\n A headline here \nThe story.") == "A headline here"
    assert headline_text(title=None, html=None, text="The story begins with a sentence.\nMore.") == ""
    assert headline_text(title=None, html=None, text=None) == ""


def test_a_cards_text_gives_the_headline_after_its_apps_name():
    card = (
        "Brieflet\n\nFemale teenage suicide bombers kill 2, wound 16\nThe Meridian · 2h ago\n\nA new tactic."
    )
    assert (
        headline_text(title=None, html=None, text=card) == "Female teenage suicide bombers kill 2, wound 16"
    )
    # a byline is no headline, and a first line of headline length stays the headline
    assert (
        headline_text(title=None, html=None, text="World\nBy Anna Keller, Staff Reporter\nThe story.")
        == "World"
    )
    titled = "Storm hits the coast overnight\nBy Anna Keller, Staff Reporter\nThe story."
    assert headline_text(title=None, html=None, text=titled) == "Storm hits the coast overnight"


def test_wire_copy_gives_the_headline_after_its_slug_lines():
    wire = (
        "XNW1715 4 BC 263\nBC-DAIRY-EXPORTS 04-03 0643\nIRISH DAIRY EXPORTS REACH RECORD IN MARCH=\n   DUBLIN"
    )
    assert headline_text(title=None, html=None, text=wire) == "IRISH DAIRY EXPORTS REACH RECORD IN MARCH="
    assert key("IRISH DAIRY EXPORTS REACH RECORD IN MARCH=") == key(
        "Irish Dairy Exports Reach Record in March"
    )
    # a first line that is no slug stays the headline, even a short one after which a byline comes
    byline = "World\nBy Anna Keller, Staff Reporter\nThe story."
    assert headline_text(title=None, html=None, text=byline) == "World"
    many_slugs = "XNW1715 4 BC 263\n03-04 0643\n1 2 3\n4 5\nA headline of five words"
    assert headline_text(title=None, html=None, text=many_slugs) == "A headline of five words"


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        (
            "Middle East currency market sees key changes | The National Ledger",
            "Middle East currency market sees key changes",
        ),
        ("Japan consumer prices unchanged in February - GWS", "Japan consumer prices unchanged in February"),
        (
            "BREAKING: Storm floods the coast | Courier – Times | News",
            "BREAKING: Storm floods the coast | Courier – Times",
        ),
        (
            "Budget 2026 | What it means for your pension and your taxes",
            "Budget 2026 | What it means for your pension and your taxes",
        ),
        ("A headline without a site", "A headline without a site"),
    ],
)
def test_a_record_title_loses_the_site_name_after_its_last_separator(title, expected):
    """Crawlers fill ``title`` from ``<title>``: the site's name after the last separator is not the
    story's (it has fewer words than what comes before it)."""
    assert headline_text(title=title, html=None, text=None) == expected


@pytest.mark.parametrize(
    ("title", "site", "expected"),
    [
        (
            "The Riverton Daily Courier - Make it stop: Verizon's Edge upgrade program is as bad as AT&T's",
            "rivertoncourier.com",
            "Make it stop: Verizon's Edge upgrade program is as bad as AT&T's",
        ),
        (
            "Harbor City Tribune :: Two arrested in multi-state debit card skimming scheme",
            "news.harborcitytribune.com",
            "Two arrested in multi-state debit card skimming scheme",
        ),
        ("BBC News - Storm floods the coast overnight", "bbc.co.uk", "Storm floods the coast overnight"),
        (  # the first part does not spell the site's name: a topic of the headline's own
            "Budget 2026 - What it means for your pension and your taxes",
            "rivertoncourier.com",
            "Budget 2026 - What it means for your pension and your taxes",
        ),
    ],
)
def test_a_record_title_loses_the_site_name_before_its_first_separator(title, site, expected):
    """Some sites give their name first in ``<title>``; the same story's card at another site has
    none, and keyed with it the two headlines differed."""
    assert headline_text(title=title, html=None, text=None, site=site) == expected
    html = f"<html><head><title>{title}</title></head><body><p>{prose(3, 40)}</p></body></html>"
    assert headline_text(title=None, html=html, text=None, site=site) == expected.split(" - ")[0]
    assert key(expected, site=site) == key(expected.upper(), site="wire.example")


def test_a_plain_text_alert_loses_its_apps_call_after_the_headline():
    alert = "Bulgaria finds middle ground on weapons deliveries to Ukraine - tap for the latest"
    assert headline_text(title=None, html=None, text=alert) == alert.removesuffix(" - tap for the latest")
    # a headline's own part after a separator, longer than what comes before it, stays
    own = "Budget 2026 - What it means for your pension and your taxes"
    assert headline_text(title=None, html=None, text=own) == own


def test_a_record_title_with_the_site_name_keys_as_the_stories_own_headline():
    site = "nationalledger.com"
    with_name = key("BREAKING: U.K. visible trade deficit narrows | The National Ledger", site=site)
    assert with_name == 0  # the key alone: the site's name in it makes it the site's own title
    given = headline_text(
        title="BREAKING: U.K. visible trade deficit narrows | The National Ledger", html=None, text=None
    )
    assert key(given, site=site) == key("U.K. Visible Trade Deficit Narrows", site="wire.example") != 0


# -- the key ------------------------------------------------------------------------------------


def test_case_punctuation_and_spacing_do_not_change_the_key():
    assert key(HEADLINE_TEXT) == key("STURGEON READY TO DELAY SCOTTISH SECOND VOTE!")
    assert key(HEADLINE_TEXT) == key("  Sturgeon ready  to delay: Scottish second-vote ")
    assert key(HEADLINE_TEXT) != key("Sturgeon ready to delay Scottish third vote")
    assert key(HEADLINE_TEXT) != headline_key(HEADLINE_TEXT, url=None, site="news.example", seed=1)


def test_a_label_before_the_headline_is_left_out():
    assert key("BREAKING: " + HEADLINE_TEXT) == key(HEADLINE_TEXT)
    assert key("JUST IN - " + HEADLINE_TEXT) == key(HEADLINE_TEXT)
    assert key("Brexit: " + HEADLINE_TEXT) != key(HEADLINE_TEXT)  # a topic in the headline's own case stays
    # ... and the labels alerts, feeds and sections give, in any case
    for label in ("New: ", "Update: ", "Opinion - ", "Breaking news: ", "Watch: ", "Analysis | "):
        assert key(label + HEADLINE_TEXT) == key(HEADLINE_TEXT), label
    assert key("Newcastle: " + HEADLINE_TEXT) != key(HEADLINE_TEXT)
    assert key("Make it stop: " + HEADLINE_TEXT) != key(HEADLINE_TEXT)
    assert key("BREAKING: Storm") == 0  # what is left is too short


@given(st.lists(st.sampled_from("alpha beta gamma delta epsilon zeta eta".split()), min_size=0, max_size=9))
def test_a_headline_under_the_minimum_has_no_key(words):
    assert (key(" ".join(words)) != 0) == (len(words) >= MIN_WORDS)


def test_a_site_title_has_no_key():
    front = "Global Affairs Today | Latest news, breaking news and top stories"
    assert key(front, url="https://www.globalaffairstoday.org/world/x", site="globalaffairstoday.org") == 0
    assert key(HEADLINE_TEXT, url="https://news.example/", site="news.example") == 0  # the site's root
    assert key(HEADLINE_TEXT, url="https://news.example", site="news.example") == 0
    # a short host name would be found inside stories' headlines: it is not looked for
    assert not site_title(
        ["bbc", "staff", "strike", "over", "pay"], "https://www.bbc.co.uk/news/1", "bbc.co.uk"
    )
    assert site_title(["the", "meridian", "post", "breaking", "news"], None, "meridianpost.com")


def test_the_sentences_before_the_headline_are_dropped():
    blocks = [
        "Skip to main content",
        "We use cookies to improve your experience.",
        HEADLINE_TEXT,
        "By Jane Doe",
        "Text.",
    ]
    found = from_headline(blocks, HEADLINE_TEXT, key(HEADLINE_TEXT))
    assert found == ["Skip to main content", *blocks[2:]]  # a heading line before the headline stays
    assert from_headline(blocks, "", 0) == blocks  # no headline known
    # a sentence with the headline's words is not the headline: it ends like a sentence
    prose_first = [HEADLINE_TEXT + ".", *blocks[2:]]
    found = from_headline(prose_first, HEADLINE_TEXT, key(HEADLINE_TEXT))
    assert found == blocks[2:]
    deep = ["A sentence of the page."] * HEADLINE_WITHIN + blocks
    assert from_headline(deep, HEADLINE_TEXT, key(HEADLINE_TEXT)) == deep


def test_a_sentence_before_the_headline_is_not_the_page():
    """A cookie notice before a page's headline (its site's learner has not dropped it yet) is not
    its text: the page opens like the same story without it, where with no headline to go by the
    notice opens it."""
    story = (
        "<h1>Storm hits the coast overnight</h1><p>By Jane Doe</p>"
        "<p>The storm that hit the coast on Monday left thousands of homes without power, and the "
        "roads into the town were closed for most of the day while crews cleared fallen trees.</p>"
    )
    notice = (
        "<p>We use cookies to improve your experience. By continuing you agree to our use of cookies.</p>"
    )
    engine = Deduplicator()
    plain, noticed, untitled = engine.sign(
        [
            engine.prepare(Page(id="plain", html=story, source="a.example"), None),
            engine.prepare(Page(id="noticed", html=notice + story, source="b.example"), None),
            engine.prepare(
                Page(id="untitled", html=notice + story.replace("h1", "p"), source="c.example"), None
            ),
        ]
    )
    assert noticed.prepared.text == plain.prepared.text
    assert (
        noticed.prepared.lead_at
        == plain.prepared.lead_at
        == len("storm hits the coast overnight by jane doe".split())
    )
    assert noticed.opening == plain.opening != 0
    assert untitled.opening != plain.opening and "cookies" in untitled.prepared.text


# -- the engine ---------------------------------------------------------------------------------


def story_page(page_id: str = "story", title: str = HEADLINE_TEXT, words: int = 350) -> Page:
    return Page(
        id=page_id,
        html=f"<html><head><title>{title} | Allied News Wire</title></head><body>"
        f"<h1>{title}</h1><p>{prose(1, words)}</p></body></html>",
        url=f"https://wire.example/world/{page_id}",
        source="wire.example",
    )


def card(page_id: str, title: str, deck: str) -> Page:
    """An aggregator's card: the story's headline and the outlet's deck, a line the story's text
    does not hold."""
    return Page(id=page_id, title=title, text=f"{title}\n{deck}", url=f"https://cards.example/b/{page_id}")


DECK = "Scotland's first minister has softened her stance on the timing of a second referendum."


def test_a_card_of_a_headline_and_a_deck_joins_the_story_with_its_headline():
    engine = Deduplicator()
    story, joined, other = engine.process_batch(
        [
            story_page(),
            card("card", HEADLINE_TEXT.upper(), DECK),
            card("other", "A different headline of six", DECK),
        ]
    )
    assert story.status == UNIQUE
    assert (joined.status, joined.duplicate_of, joined.match) == (DUPLICATE, "story", HEADLINE), joined
    assert other.status in (UNIQUE, NO_CONTENT) and other.duplicate_of is None, other


def test_without_headlines_the_card_stays_apart():
    """What the rule changes: the same card, its headline unknown to the window."""
    engine = Deduplicator()
    engine.process(story_page())
    entry = engine.index.get("story")
    engine.index.window.by_content.pop(entry.headline)
    assert engine.process(card("card", HEADLINE_TEXT, DECK)).duplicate_of is None


def test_a_story_after_another_sites_card_joins_it_by_the_headline():
    """A card of the story's headline and the outlet's deck comes first: the story holds none of
    the card's text and opens otherwise, so only the headline tells they are one story."""
    engine = Deduplicator()
    first, story = engine.process_batch([card("card", HEADLINE_TEXT, DECK), story_page()])
    assert first.status == UNIQUE
    assert (story.status, story.cluster_id, story.match) == (DUPLICATE, "card", HEADLINE), story
    without = Deduplicator()  # what the rule changes: the card's headline at the story's own site
    own_site = card("card", HEADLINE_TEXT, DECK)
    own_site = Page(id="card", title=HEADLINE_TEXT, text=own_site.text, url="https://wire.example/b/card")
    assert without.process_batch([own_site, story_page()])[1].status == UNIQUE


TENDERS = "Department of Health and Aged Care calls tenders for provision of security guard services"


def tender(page_id: str, reference: str, value: str, site: str) -> Page:
    """A department's tender notice as an outlet republishes it: one title for every such tender."""
    text = (
        f"The Department of Health and Aged Care has released Tender {reference} seeking offers for "
        f"provision of security guard services. The contract has an estimated value of {value}.\n"
        "Submissions close at 2pm on 22 August 2024 and must be lodged through the electronic "
        "tendering portal. Late submissions will not be accepted.\n"
        "An optional briefing session for prospective tenderers will be held two weeks before the "
        "closing date. Questions must be submitted in writing."
    )
    return Page(id=page_id, title=TENDERS, text=text, url=f"https://{site}/tenders/{page_id}", source=site)


def test_two_items_of_a_template_under_one_headline_do_not_join_by_it():
    """Two tenders under one title, each with its own reference, set other names in the same
    wording: the second is another item and does not join the first by the headline; a copy of
    the first, at a third outlet, still joins it."""
    engine = Deduplicator()
    first = tender("a", "RFT20248396", "$1,350,000", "tenders-a.example")
    other = tender("b", "RFT20244321", "$4,290,000", "tenders-b.example")
    decided = engine.process_batch([first, other])
    assert decided[1].status == UNIQUE, decided[1]
    copy = engine.process(tender("c", "RFT20248396", "$1,350,000", "tenders-c.example"))
    assert (copy.status, copy.duplicate_of) == (DUPLICATE, "a"), copy


def test_a_page_of_the_same_site_under_the_same_headline_is_another_story():
    """A site gives a live page, or a column that comes back every week, the same headline over a
    new text: a page of its own text joins no page of its own site by the headline."""
    engine = Deduplicator()
    engine.process(story_page())
    reused = engine.process(
        Page(
            id="later",
            title=HEADLINE_TEXT,
            text=prose(7, 300),
            url="https://wire.example/live",
            source="wire.example",
        )
    )
    assert reused.status == UNIQUE, reused
    # nor does a page with no site to tell
    engine.process(Page(id="elsewhere", title=HEADLINE_TEXT, text=prose(8, 300)))
    assert engine.process(Page(id="nowhere", title=HEADLINE_TEXT, text=prose(9, 300))).status == UNIQUE


@pytest.mark.parametrize(
    ("title", "url", "later"),
    [
        ("Storm hits the coast overnight (Page 2)", "https://wire.example/world/story", True),
        ("Storm hits the coast overnight - Page 3 of 4", None, True),
        ("Storm hits the coast overnight", "https://wire.example/world/story.html?page=2", True),
        ("Storm hits the coast overnight", "https://wire.example/2017/03/16/storm-hits-the-coast/2/", True),
        ("Storm hits the coast overnight (Page 1)", "https://wire.example/world/story?page=1", False),
        ("Storm hits the coast overnight", "https://wire.example/news/20170314/79425.html", False),
        ("Storm hits the coast, part 2: the clean-up", "https://wire.example/world/part-2", False),
        ("Storm hits the coast overnight", "https://wire.example/category/world/page/2/", False),
    ],
)
def test_a_later_page_of_an_article_is_told_by_its_title_or_its_address(title, url, later):
    assert later_part(title, url) is later
    key = headline_key(title, url=url, site="wire.example", seed=1)
    if "(Page" in title or "- Page" in title:  # the mark is no part of the headline's key
        assert key == headline_key("Storm hits the coast overnight", url=url, site="wire.example", seed=1)


def test_page_two_of_an_article_joins_page_one_by_its_headline_at_its_own_site():
    """Page 2 of an article shares no text with page 1, only its headline; at its own site a page
    under that headline is otherwise another story (a live page, a column)."""
    engine = Deduplicator()
    first = engine.process(story_page())
    second = engine.process(
        Page(
            id="page2",
            title=f"{HEADLINE_TEXT} (Page 2) | Allied News Wire",
            text=prose(7, 300),
            url="https://wire.example/world/story?page=2",
            source="wire.example",
        )
    )
    assert first.status == UNIQUE
    assert (second.status, second.duplicate_of, second.match) == (DUPLICATE, "story", HEADLINE), second


def test_a_brief_the_bands_miss_is_found_by_its_headline_and_judged_by_containment():
    """A brief of the story's first 60 words, with a line of its own before them: no band of a
    600-word story's signature holds it, and it does not open like the story; its headline makes
    the story a candidate, and most of the brief lies in the story."""
    brief_text = "In brief from our wire desk today. " + " ".join(prose(1, 600).split()[:60])

    def brief(page_id: str, title: str) -> Page:
        return Page(id=page_id, title=title, text=brief_text, source="briefs.example")

    decided = []
    for page in (brief("untitled", "A headline nobody else has"), brief("brief", HEADLINE_TEXT)):
        engine = Deduplicator()
        engine.process(story_page(words=600))
        decided.append(engine.process(page))
    missed, found = decided
    assert missed.duplicate_of is None and missed.candidates == 0, missed
    assert (found.duplicate_of, found.match, found.candidates) == ("story", CONTAINMENT, 1), found


def test_a_push_alert_after_the_wire_copy_joins_it_by_the_headline():
    """Wire copy gives its headline after two slug lines; the alert, a record whose title has the
    site's name after it, rewrites the story's figures, so little of it lies in the story."""
    paragraphs = [
        "DUBLIN, April 3 (XNW) - Irish dairy exports rose to a record 412 mln punts in March from 377 mln "
        "in February, the Agriculture Department said on Friday.",
        prose(3, 250),
    ]
    wire = (
        "XNW1715 4 BC 263\nBC-IRISH-DAIRY 04-03 0643\nIRISH DAIRY EXPORTS REACH RECORD IN MARCH=\n"
        + "\n".join("   " + p for p in paragraphs)
    )
    alert = (
        "<html><body><main><h1>Irish Dairy Exports Reach Record in March</h1><p>Irish dairy exports rose "
        "to a record 412 million Irish pounds in March from 377 million the month before, officials said.</p>"
        "<p>This is a developing story.</p></main></body></html>"
    )
    decided = []
    for title in (
        "BREAKING: Irish Dairy Exports Reach Record in March | The Ledger",
        "BREAKING: Irish dairy",
    ):
        engine = Deduplicator()
        engine.process(Page(id="wire", text=wire, source="xnw.example"))
        decided.append(engine.process(Page(id="alert", title=title, html=alert, source="ledger.example")))
    joined, apart = decided
    assert (joined.status, joined.duplicate_of, joined.match) == (DUPLICATE, "wire", HEADLINE), joined
    assert apart.duplicate_of is None, apart  # what the headline changes


def test_a_front_page_snapshot_does_not_join_the_last_one_by_the_site_title():
    def front(page_id: str, stories: int) -> Page:
        items = "".join(f"<li><a href='/s/{i}'>Headline number {i} of the day</a></li>" for i in stories)
        return Page(
            id=page_id,
            html="<html><head><meta property='og:title' content='Global Affairs Today | Latest news'>"
            f"</head><body><ul>{items}</ul><p>{prose(stories[0], 20)}</p></body></html>",
            url="https://www.globalaffairstoday.org/",
        )

    engine = Deduplicator()
    _, second = engine.process_batch([front("fp1", range(1, 9)), front("fp2", range(20, 28))])
    assert second.duplicate_of is None, second


def saved_and_loaded(first: Page) -> Deduplicator:
    """An engine that decided ``first``, saved and loaded into a new one."""
    engine = Deduplicator()
    engine.process(first)
    loaded = Deduplicator()
    import_state(loaded, *export_state(engine))
    return loaded


def test_a_saved_window_and_a_window_on_disk_keep_the_headlines(tmp_path):
    pages = [story_page(), card("card", HEADLINE_TEXT, DECK)]
    assert saved_and_loaded(pages[0]).process(pages[1]).match == HEADLINE
    assert decided_alike_on_disk(pages, tmp_path / "w")


def test_a_saved_window_and_a_window_on_disk_keep_the_headlines_at_their_site(tmp_path):
    pages = [card("card", HEADLINE_TEXT, DECK), story_page()]
    loaded = saved_and_loaded(pages[0])
    assert loaded.process(pages[1]).match == HEADLINE
    assert decided_alike_on_disk(pages, tmp_path / "w")
    # a page of the card's own site under its headline finds the card's site in both
    again = [*pages, Page(id="again", title=HEADLINE_TEXT, text=prose(9, 300), url="https://cards.example/x")]
    assert loaded.process(again[2]).status == UNIQUE
    assert decided_alike_on_disk(again, tmp_path / "w2")


def test_an_entry_written_before_headlines_were_kept_reads_without_one():
    from stream_lsh.stores.entry_codec import decode_entry, encode_entry

    engine = Deduplicator()
    engine.process(story_page())
    entry = engine.index.get("story")
    assert entry.headline
    raw = encode_entry(entry)
    assert decode_entry(raw, keep_shingles=False).headline == entry.headline
    older = entry_written_with(raw, 10)  # the layout before headlines: ten fields
    assert decode_entry(older, keep_shingles=False).headline == 0
    engine.process(Page(id="sited", title=HEADLINE_TEXT, text=prose(3, 200), source="site.example"))
    sited = engine.index.get("sited")
    assert sited.site_headline
    assert decode_entry(encode_entry(sited), keep_shingles=False).site_headline == sited.site_headline
    before = entry_written_with(encode_entry(sited), 11)  # ... and before headlines at their site
    assert decode_entry(before, keep_shingles=False).site_headline == 0
    assert sited.site and decode_entry(encode_entry(sited), keep_shingles=False).site == sited.site
    assert decode_entry(entry_written_with(encode_entry(sited), 12), keep_shingles=False).site == 0
