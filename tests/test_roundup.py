"""Roundups (stream_lsh.core.roundup): a page whose sentences open several earlier stories is
none of them, and a copy of a story that opens one other story beside it still joins its story."""

import dataclasses

import pytest
from conftest import prose
from hypothesis import given
from hypothesis import strategies as st
from test_opening import batch, decided_alike_on_disk, page

from stream_lsh.core.decision import DUPLICATE, OPENING, UNIQUE, Decision, Match, decide
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.opening import OPENING_SHINGLES, openings, sentence_openings
from stream_lsh.core.page import Page
from stream_lsh.core.roundup import (
    HOLDS,
    LISTING_ITEMS,
    STORIES,
    SUMMARY_WORDS,
    copies_listing,
    dateline,
    holds_most_of,
    is_front,
    is_listing,
    is_roundup,
    is_search,
    is_section,
    is_tag,
    lists_stories,
    may_copy,
)
from stream_lsh.core.text import normalize_blocks
from stream_lsh.core.verification import Verification

RULE = Verification(0.3, 0.7)


def test_a_paragraph_has_the_key_of_an_article_that_begins_there():
    (keys,) = sentence_openings(batch([7, 8, 1, 2, 3, 4, 9]), [[0, 2, 5]])
    whole, _ = openings(batch([7, 8, 1, 2]))
    second, _ = openings(batch([1, 2, 3, 4, 9]))
    assert keys == (int(whole[0]), int(second[0]))  # the third has too few shingles after it


@given(
    st.lists(
        st.tuples(st.lists(st.integers(1, 30), max_size=30), st.lists(st.integers(0, 32), max_size=6)),
        min_size=1,
        max_size=6,
    )
)
def test_each_paragraph_key_is_the_opening_counted_from_that_paragraph(pages):
    """Property: the key at a paragraph is :func:`openings` with the article beginning there,
    each key once, in text order; a paragraph with too few shingles after it has none."""
    shingles = batch(*[values for values, _ in pages])
    found = sentence_openings(shingles, [at for _, at in pages])
    for i, (values, at) in enumerate(pages):
        expected: list[int] = []
        for start in at:
            if len(values) - min(start, len(values)) < OPENING_SHINGLES:
                continue
            keys, _ = openings(
                batch(*[v for v, _ in pages]), begins=[start if j == i else 0 for j in range(len(pages))]
            )
            if int(keys[i]) not in expected:
                expected.append(int(keys[i]))
        assert list(found[i]) == expected


def test_pages_without_paragraphs_have_no_keys():
    assert sentence_openings(batch([1, 2, 3, 4], [5, 6, 7, 8]), [(), ()]) == [(), ()]
    no_starts = dataclasses.replace(batch([1, 2, 3, 4]), starts=None)  # character shingles
    assert sentence_openings(no_starts, [(0,)]) == [()]


def test_a_batch_of_pages_without_prose_is_signed_and_decided():
    """A feed card of a headline and a dateline alone has no paragraph of prose, yet its text has
    sentence starts; alone in its micro-batch (a file of one line, a stream batch of one page) it
    once raised IndexError while its sentences were looked up."""
    text = "House GOP health bill facing fresh House test\nMaple Leaf Herald · March 15, 2017 5:31 a.m. ET"
    (decision,) = Deduplicator().process_batch([page("card", text, "herald.example")])
    assert decision.status in (UNIQUE, "no_content") and not decision.roundup


def test_a_roundup_opens_several_stories():
    assert not is_roundup({f"S{i}" for i in range(STORIES - 1)})
    assert is_roundup({f"S{i}" for i in range(STORIES)})


def test_a_roundup_matches_only_a_page_that_holds_most_of_it_and_never_joins_by_its_opening():
    story = Match("story", 0.45, "S", 0.62, HOLDS - 0.1, 0.6)  # a digest's measures against a story
    same_letter = Match("letter", 0.8, "L", 0.9, HOLDS, 0.9)  # another outlet's copy of the digest
    kwargs = {"signed": True, "exact": None, "rule": RULE, "founds": "p"}
    assert decide("p", candidates=[story], **kwargs).cluster_id == "S"
    assert decide("p", candidates=[story], roundup=True, **kwargs).status == UNIQUE
    assert decide("p", candidates=[story, same_letter], roundup=True, **kwargs).cluster_id == "L"
    assert holds_most_of(Match("old", 0.5, "O"))  # shares not measured: not asked
    opening = Match("story", 0.05, "S", 0.9, 0.9, 0.05)
    assert decide("p", candidates=[], opening=opening, **kwargs).match == OPENING
    assert decide("p", candidates=[], opening=opening, roundup=True, **kwargs).status == UNIQUE


def briefs_and_pages():
    """Three wire briefs of 70 words, then a newsletter that gives the first 40 words of each as
    a paragraph, and another outlet's copy of the first brief with a "related" box that opens the
    other two in 25 words each."""
    briefs = [prose(seed, 70) for seed in (1, 2, 3)]
    first = [" ".join(text.split()[:40]) + "." for text in briefs]
    related = [" ".join(text.split()[:25]) + "." for text in briefs[1:]]
    return [
        *(page(f"brief{i}", text, f"wire{i}.example") for i, text in enumerate(briefs)),
        page("letter", "\n".join(first), "letters.example"),
        page("copy", "\n".join([briefs[0], *related]), "other.example"),
    ]


def test_a_newsletter_of_briefs_is_none_of_them_and_a_copy_with_related_paragraphs_joins_its_story():
    engine = Deduplicator()
    *briefs, letter, copy = engine.process_batch(briefs_and_pages())
    assert [d.status for d in briefs] == [UNIQUE] * 3
    assert (letter.status, letter.cluster_id) == (UNIQUE, "letter"), letter
    assert letter.similarity is not None and letter.similarity >= RULE.jaccard  # what it used to join by
    assert (copy.status, copy.duplicate_of) == (DUPLICATE, "brief0"), copy
    assert engine.checks["roundups"] == 2  # both open three stories
    assert letter.to_dict()["roundup"] is True and copy.roundup  # the record says why
    assert "roundup" not in briefs[0].to_dict()
    assert Decision.from_dict(letter.to_dict()).roundup  # read back (a redelivery, a restored window)


def test_a_page_of_two_stories_is_no_roundup():
    engine = Deduplicator()
    briefs = briefs_and_pages()[:3]
    engine.process_batch(briefs)
    two = engine.process(page("two", "\n".join(b.text for b in briefs[:2]), "other.example"))
    assert two.status == DUPLICATE and engine.checks["roundups"] == 0


def test_without_its_sentence_keys_the_newsletter_joins_a_brief():
    """What the rule changes: the same newsletter, its sentences' openings withheld."""
    engine = Deduplicator()
    pages = briefs_and_pages()
    engine.process_batch(pages[:3])
    (signed,) = engine.sign([engine.prepare(pages[3], None)])
    assert len(signed.sentence_openings) >= 3  # each paragraph's, and each later sentence's
    (decision,) = engine.decide_signed([dataclasses.replace(signed, sentence_openings=())])
    assert (decision.status, decision.duplicate_of) == (DUPLICATE, "brief0")


def test_a_window_on_disk_finds_the_same_roundups(tmp_path):
    assert decided_alike_on_disk(briefs_and_pages(), tmp_path / "window")


def test_the_keys_reach_the_decide_partition():
    from stream_lsh.pipeline.messages import SignedForDecision

    message = SignedForDecision("p", False, 1, None, None, 1, 2, None, None, sentence_openings=(2**64 - 1, 5))
    assert SignedForDecision.from_wire(message.to_wire()) == message
    older = message.to_wire()
    del older["po"]
    assert SignedForDecision.from_wire(older).sentence_openings == ()


def test_a_digest_that_heads_each_item_with_its_headline_is_a_roundup():
    """Each item gives a headline sentence, then the story's first sentences, in one paragraph
    (most of a brief: the letter holds enough of one to join it but for the rule): the stories open
    at the items' second sentences."""
    engine = Deduplicator()
    briefs = [prose(seed, 70) for seed in (1, 2, 3)]
    items = [
        f"Headline number {n} of the day. " + " ".join(text.split()[:60]) + "."
        for n, text in enumerate(briefs)
    ]
    *_, letter = engine.process_batch(
        [
            *(page(f"brief{i}", text, f"wire{i}.example") for i, text in enumerate(briefs)),
            page("letter", "\n".join(["Good morning, here is the news."] + items), "letters.example"),
        ]
    )
    assert letter.roundup and (letter.status, letter.cluster_id) == (UNIQUE, "letter"), letter


def test_a_stock_opening_line_opens_no_story():
    """An outlet opens pages of three other stories with the line its copy opens with: the copy
    opens like them, but it does not resemble them, so it is no roundup and joins its story."""
    engine = Deduplicator()
    stock = "In case you missed it, this is one of the big stories of the day across the whole country."
    others = [
        page(f"other{i}", f"{stock}\n{prose(seed, 120)}", "gazette.example")
        for i, seed in enumerate((4, 5, 6))
    ]
    story = prose(1, 120)
    copy = page("copy", f"{stock}\n{story}", "herald.example")
    *_, original, decision = engine.process_batch([*others, page("story", story, "wire.example"), copy])
    assert original.status == UNIQUE
    assert (decision.status, decision.duplicate_of, decision.roundup) == (DUPLICATE, "story", False), decision


def test_a_front_page_whose_repeated_items_are_boilerplate_still_opens_them():
    """A site's front page, five items (each a story's first 20 words), two new items a version:
    the learner takes the repeated items out of a version, and what is left of it (two new items)
    is close to a teaser of one story. The items taken out still count as openings. (The learner
    weighs the version before without the items it has learnt since: what is left of it, two
    items, is the lead of the next, so every other version keeps them.)"""
    stories = [prose(seed, 40) for seed in range(1, 16)]
    items = [" ".join(text.split()[:20]) + "." for text in stories]
    pages = [page(f"s{i}", text, f"wire{i}.example") for i, text in enumerate(stories)]
    pages += [
        page(f"front{k}", "\n".join(["Gazette front page.", *items[2 * k : 2 * k + 5]]), "gazette.example")
        for k in range(5)
    ]
    engine = Deduplicator()
    fronts = engine.process_batch(pages)[len(stories) :]
    assert all(d.status == UNIQUE for d in fronts), fronts
    # a roundup is asked of a page only when it could join a cluster (three versions here)
    assert [d.roundup for d in fronts] == [False, False, True, True, True]

    blind = Deduplicator()  # what the rule changes: the taken-out items' openings withheld
    prepared = [dataclasses.replace(blind.prepare(p, None, learn=True), dropped_starts=()) for p in pages]
    before = blind.decide_signed(blind.sign(prepared))[len(stories) :]
    assert [(d.id, d.duplicate_of) for d in before if d.status == DUPLICATE] == [("front3", "s10")]


# -- listings: a page of stories by its shape, and no page a copy of a roundup that holds it ------


def paragraph(seed: int, words: int) -> str:
    return " ".join(prose(seed, words).split())


FRONT_ITEMS = [  # each summary names its headline's subject, as a front's do
    ("Council votes to extend the northern bus network", "The council " + paragraph(21, 45)),
    ("Storm leaves twenty thousand homes without power", "The storm " + paragraph(22, 40)),
    ("Museum reopens after a two-year restoration", "The city museum " + paragraph(23, 50)),
    ("Harbour plan wins backing from port owners", "The harbour plan " + paragraph(24, 35)),
    ("School meals to be free for every pupil", "School meals " + paragraph(25, 40)),
]


def front(items=FRONT_ITEMS) -> str:
    return "\n".join(f"{title}\n{summary}" for title, summary in items)


def blocks(text: str) -> list[str]:
    return normalize_blocks(text.splitlines())


def test_a_listing_is_headlines_each_over_a_short_summary():
    assert is_listing(blocks(front()))
    assert not is_listing(blocks(front(FRONT_ITEMS[: LISTING_ITEMS - 1])))
    long_summaries = [
        (title, paragraph(30 + i, SUMMARY_WORDS + 20)) for i, (title, _) in enumerate(FRONT_ITEMS)
    ]
    assert not is_listing(blocks(front(long_summaries)))
    # an article with a few subheadings over long sections, and one in paragraphs, is none
    article = "\n".join(f"Part {i}\n{paragraph(40 + i, 150)}" for i in range(5))
    assert not is_listing(blocks(article)) and not is_listing(blocks(prose(50, 600)))
    # items that are a small part of a long page make no listing of it
    assert not is_listing(blocks(prose(51, 900) + "\n" + front()))
    # "Related:" lines between an article's short paragraphs name other stories: no items
    related = "\n".join(
        f"Related: {title}\n{paragraph(60 + i, 40)}" for i, (title, _) in enumerate(FRONT_ITEMS)
    )
    assert not is_listing(blocks(related))
    # ... nor when the paragraph after each shares its words: a pointer line is no item's headline
    pointed = "\n".join(
        f"{label} {title}\n{summary}"
        for label, (title, summary) in zip(("Related:", "Read more:", "See also:", "RELATED |"), FRONT_ITEMS)
    )
    assert is_listing(blocks(front(FRONT_ITEMS[:4]))) and not is_listing(blocks(pointed))


def test_a_short_paywalled_story_between_a_cookie_banner_and_a_paywall_box_is_no_listing():
    """A banner and a paywall's box are each a heading over a short text, as the story's headline
    and lead are: three items, but two of them notices."""
    page = [
        "We value your privacy",
        "Your privacy matters to us. We and our partners store and access information on your device.",
        FRONT_ITEMS[0][0],
        FRONT_ITEMS[0][1],
        "By Quinn Jurado May. 12, 2022",
        "Continue reading with a subscription",
        "Already a subscriber? Log in to read the rest of this story and every other.",
    ]
    assert not is_listing(blocks("\n".join(page)))
    assert is_listing(blocks(front(FRONT_ITEMS[:3])))


def test_three_summarised_stories_make_a_listing_two_do_not():
    """A "three things to know" brief or a newsletter of three stories that comes before its
    stories is none of them; a page of two stories may be either's copy."""
    assert LISTING_ITEMS == 3
    assert is_listing(blocks(front(FRONT_ITEMS[:3])))
    assert not is_listing(blocks(front(FRONT_ITEMS[:2])))


@pytest.mark.parametrize(
    "line",
    [
        "4 hours ago",
        "1 minutes ago",
        "Yesterday",
        "December 12, 2016 at 10:49 p.m. GMT",
        "Published Tuesday, March 24, 2026 at 2:16 pm ET",
        "Wednesday, 13 November 2024",
        "Updated 12/12/2016 14:05",
        "Oct. 29",
    ],
)
def test_a_dateline_says_when_to_the_day(line):
    assert dateline(line) and dateline(line.lower())


@pytest.mark.parametrize(
    "line", ["November 2024", "2016", "By Brad Shaw", "Technology", "May the best team win", "Top 10"]
)
def test_a_month_an_archive_or_a_byline_is_no_dateline(line):
    assert not dateline(line)


TIMES = ["2 hours ago", "December 12, 2016 at 10:49 p.m. GMT", "35 minutes ago", "Yesterday", "Dec 11, 2016"]


def test_a_tag_page_of_dated_headlines_is_a_listing_with_or_without_summaries():
    """A tag or section page: each item its headline and when it was posted, a few of them with a
    summary that need not name the headline's words."""
    dated = "\n".join(f"{title}\n{when}" for (title, _), when in zip(FRONT_ITEMS, TIMES, strict=True))
    assert is_listing(blocks(dated))
    some_summaries = "\n".join(
        f"{title}\n{paragraph(70 + i, 25) if i % 2 else ''}\n{when}"
        for i, ((title, _), when) in enumerate(zip(FRONT_ITEMS, TIMES, strict=True))
    )
    assert is_listing(blocks(some_summaries))
    # a page dates items only when it dates three: an article's byline and date, with its
    # "Related" headlines under it, is no listing
    article = "\n".join(
        [FRONT_ITEMS[0][0], FRONT_ITEMS[0][1], "By Karen Doyle, Staff Writer", TIMES[1]]
        + [f"Section {i}\n{paragraph(80 + i, 30)}" for i in range(3)]
        + ["Related"]
        + [title for title, _ in FRONT_ITEMS[1:]]
    )
    assert not is_listing(blocks(article))
    # a blog's archive by month dates no item
    archive = "\n".join(
        [FRONT_ITEMS[0][0], paragraph(90, 40), "Blog Archive"]
        + ["November 2024", "October 2024", "September 2024", "August 2024", "Blogroll"]
        + [title for title, _ in FRONT_ITEMS[1:]]
    )
    assert not is_listing(blocks(archive))


def test_a_front_whose_items_are_signed_is_a_listing_and_a_live_page_of_timed_entries_is_none():
    """A front gives some items a byline between headline and summary; a live page of one story
    puts a time over each entry, which is no headline."""
    signed = "\n".join(
        f"{title}\nBy Reporter {i}\n{paragraph(100 + i, 20)}" for i, (title, _) in enumerate(FRONT_ITEMS)
    )
    assert is_listing(blocks(signed))
    entries = "\n".join(f"07/15/2013 {8 - i}:32 PM\n{paragraph(110 + i, 40)}" for i in range(8))
    assert not is_listing(blocks(f"Live updates: {FRONT_ITEMS[0][0]}\nLast updated July 15, 2013\n{entries}"))


def test_a_page_is_a_copy_of_a_roundup_only_when_it_holds_most_of_it():
    kwargs = {"signed": True, "exact": None, "rule": RULE, "founds": "p"}
    item = Match("front", 0.3, "F", 0.95, 0.95, 0.2, roundup=True)  # a card that lies in a front
    again = Match("front", 0.9, "F", 0.95, 0.9, HOLDS, roundup=True)  # the front crawled again
    # a full story holding what the learner left of a front, one item's summary, at three times
    # its size: it holds the front, the front does not hold it
    holder = Match("front", 0.3, "F", 0.76, 0.3, 0.76, roundup=True)
    assert not may_copy(False, item) and may_copy(False, again) and not may_copy(False, holder)
    assert decide("p", candidates=[holder], **kwargs).status == UNIQUE
    assert decide("p", candidates=[item], **kwargs).status == UNIQUE
    assert decide("p", candidates=[again], **kwargs).cluster_id == "F"
    assert decide("p", candidates=[item], **kwargs | {"signed": False}, opening=item).status == "no_content"
    assert decide("p", candidates=[], opening=item, **kwargs).status == UNIQUE


def test_a_listing_is_a_copy_of_a_roundup_only():
    """What the learner leaves of a front page may be one new item, a story's card: the front is
    no copy of that card, only of another roundup (the front crawled again)."""
    card = Match("card", 0.8, "C", 0.97, 0.97, 0.97)
    again = Match("front", 0.9, "F", 0.95, 0.9, HOLDS, roundup=True)
    assert may_copy(True, card) and not may_copy(True, card, listing=True)
    assert may_copy(True, again, listing=True)
    kwargs = {"signed": True, "exact": None, "rule": RULE, "founds": "p", "roundup": True}
    assert decide("p", candidates=[card], **kwargs, listing=True).status == UNIQUE
    assert decide("p", candidates=[card, again], **kwargs, listing=True).cluster_id == "F"


@pytest.mark.parametrize(
    "url",
    [
        "https://news.example/search?q=budget",
        "https://news.example/search/?q=budget&sort=date",
        "https://zeitung.example/suche/wahl",
        "https://news.example/results?query=travel+ban",
        "https://news.example/?q=storm",
    ],
)
def test_a_site_search_is_a_listing_by_its_address(url):
    assert is_search(url)


@pytest.mark.parametrize(
    "url",
    [
        None,
        "https://news.example/world/2024/11/search-for-missing-climbers-ends",
        "https://news.example/story/123?s=05",  # a share's tracking mark
        "https://news.example/story/123?q=",
        "https://news.example/research/findings",
    ],
)
def test_an_article_s_address_is_no_search(url):
    assert not is_search(url)


def test_a_search_page_whose_text_is_one_card_s_is_no_copy_of_it():
    """All the learner may leave of a search page is its one result: the card's text, word for
    word. A listing takes an earlier page of the same content as its original only when that page
    is a roundup too."""
    card_text = FRONT_ITEMS[0][0] + "\n" + FRONT_ITEMS[0][1]
    card = page("card", card_text, "cards.example")
    search = Page(id="search", text=card_text, url="https://news.example/search?q=council")
    decided = Deduplicator().process_batch([card, search])[1]
    assert (decided.status, decided.roundup) == (UNIQUE, True), decided
    copy = page("copy", card_text, "b.example")
    assert Deduplicator().process_batch([card, copy])[1].duplicate_of == "card"  # any other page: a copy


def test_a_card_that_comes_after_a_front_which_lists_its_story_joins_the_story_not_the_front():
    """The front comes first: none of its stories is known, so it is a roundup by its shape. The
    card of its top story lies wholly in it, and its story comes later."""
    story = FRONT_ITEMS[0][1] + "\n" + prose(60, 400)
    engine = Deduplicator()
    listing, card, full = engine.process_batch(
        [
            page("front", front(), "news.example"),
            page("card", f"{FRONT_ITEMS[0][0]}\n{FRONT_ITEMS[0][1]}", "cards.example"),
            page("story", f"{FRONT_ITEMS[0][0]}\n{story}", "wire.example"),
        ]
    )
    assert (listing.status, listing.roundup) == (UNIQUE, True), listing
    assert card.cluster_id != "front", card
    assert full.cluster_id == card.cluster_id, full


@pytest.mark.parametrize(
    "url",
    [
        "https://news.example/",
        "https://news.example",
        "https://www.news.example/?ref=logo",
        "https://news.example/index.html",
        "https://news.example/?utm_source=app&utm_medium=push",
        "https://news.example/#top",
    ],
)
def test_a_site_s_front_is_a_listing_by_its_address(url):
    assert is_front(url)


@pytest.mark.parametrize(
    "url",
    [
        None,
        "https://news.example/?p=6388",  # a story of a site that names it in the query
        "https://news.example/#/a/council-votes-to-extend-the-bus-network",  # a script-built site's route
        "https://news.example/world/council-votes",
        "https://consent.news.example/?continue=49dfe0",
        "http://[invalid/",  # an address that cannot be read is nothing, never an error
    ],
)
def test_a_story_s_address_is_no_front(url):
    assert not is_front(url)


def test_a_front_with_two_summarised_items_among_bare_headlines_is_no_story():
    """Too few items to be a listing by its shape; at its site's root, it is one by its address,
    and the story it tops, coming after it, founds its own cluster rather than joining it."""
    bare = (
        "\n".join(f"{title} and more news of the day" for title, _ in FRONT_ITEMS[2:])
        + "\n"
        + "\n".join(f"Another headline number {n} of the site's list" for n in range(12))
    )
    text = front(FRONT_ITEMS[:2]) + "\n" + bare
    story = f"{FRONT_ITEMS[0][0]}\n{FRONT_ITEMS[0][1]}\n{prose(61, 80)}"
    for url, joins in (("https://news.example/?ref=logo", False), ("https://news.example/section/7", True)):
        engine = Deduplicator()
        listing, full = engine.process_batch(
            [Page(id="front", text=text, url=url), page("story", story, "wire.example")]
        )
        assert listing.roundup is not joins, listing
        assert (full.cluster_id == "front") is joins, full


def test_a_page_whose_address_cannot_be_read_is_decided():
    engine = Deduplicator()
    decided = engine.process(Page(id="odd", text=prose(62, 200), url="http://[invalid/search?q=storm"))
    assert decided.status == UNIQUE and not decided.roundup
    assert Page(id="odd", text="x", url="http://[invalid/").site == ""


@pytest.mark.parametrize(
    "url",
    [
        "https://www.amledger.com/topic/trump-budget",
        "https://news.example/tag/brexit/",
        "https://news.example/author/jane-doe?page=2",
        "https://blog.example/category/world",
        "https://news.example/topics/climate-change",
    ],
)
def test_a_tag_topic_or_author_page_is_a_listing_by_its_address(url):
    assert is_tag(url) and lists_stories(url)
    engine = Deduplicator()
    listing = engine.process(Page(id="tag", text=front(FRONT_ITEMS[:2]), url=url))
    assert listing.roundup


@pytest.mark.parametrize(
    "url",
    [
        "https://news.example/topics/politics/2017/03/16/budget-cuts",
        "https://www.independent.example/news/people/a-royal-wedding-a1234.html",
        "https://news.example/world/tagged-and-released",
    ],
)
def test_a_story_s_address_is_no_tag_page(url):
    assert not is_tag(url) and not lists_stories(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://news.example/news/",
        "https://news.example/news/politics/?page=2",
        "https://news.example/sport/rugby-league/",
        "https://news.example/obituaries/",
        "https://news.example/privacy-policy",
        "https://news.example/tag",
        "https://www.news.example/world/?utm_source=nav",
    ],
)
def test_a_section_index_or_a_site_s_own_page_is_a_listing_by_its_address(url):
    for headline in (
        "Politics",
        "Local news | The Bulletin",
        "Terms of use - The Bulletin",
        "The Bulletin | Sport",
    ):
        assert is_section(url, headline, CARDS, "bulletin.example")
    # a story at a short address has a headline of its own, and a page without one is not told
    for headline in (
        "Council votes to extend the bus network | The Bulletin",
        "Opinion | The case for a four-day week",
        "BREAKING - Prime minister resigns after crisis",
        "東京都知事選挙で新人が初当選",  # written without spaces: two characters a word
        None,
        "",
    ):
        assert not is_section(url, headline, CARDS, "bulletin.example"), headline


def test_a_story_at_a_short_address_has_paragraphs_of_prose_and_a_site_s_own_page_may():
    """ "/heatwave-warning/" or "/obituaries/john-smith" under a short headline is a story when it
    holds paragraphs of prose; a site's terms or privacy policy hold prose and are no story."""
    for url in (
        "https://bulletin.example/heatwave-warning/",
        "https://bulletin.example/obituaries/john-smith",
    ):
        assert is_section(url, "Heatwave warning", CARDS, "bulletin.example")
        assert not is_section(url, "Heatwave warning", STORY, "bulletin.example")
    assert is_section("https://bulletin.example/privacy-policy", "Privacy policy", STORY, "bulletin.example")


CARDS = [
    "Storm calls pass five thousand",
    "The state emergency service says it has received five thousand calls for help.",
    "Cougars too strong for the Rovers",
    "The Cougars defeated the Rovers by two points in round twelve of the league.",
]
STORY = [
    "The heatwave will continue through the weekend, forecasters said on Friday, with temperatures "
    "expected to reach 44C in the west and warnings in place along the coast.",
    "Residents were told to stay indoors during the afternoon and to check on elderly neighbours, "
    "and the council opened three cooling centres in its libraries until Monday night.",
    "Hospitals said they had treated more than forty people for heat stress since Wednesday.",
    "The power company asked households to run washing machines and dishwashers after nine at night, "
    "when demand falls, and said it had crews ready in every district in case lines came down.",
]


@pytest.mark.parametrize(
    "url",
    [
        None,
        "https://news.example/news/local-news/school-closed-today-510227/",
        "https://news.example/news/council-votes-to-extend-the-bus-network",
        "https://news.example/2017/03/16/budget",
        "https://news.example/world/story.html",
        "https://news.example/widgets/story-card?id=73554184",  # a query that names the story
        "https://news.example/rss/text#item-37384505",  # ... or a fragment
        "https://news.example/section/7",
        "https://news.example/a/b/c",
    ],
)
def test_a_story_s_address_is_no_section(url):
    assert not is_section(url, "Politics", CARDS)


def _story_html(headline: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<html><body><main><article><h1>{headline}</h1>{body}</article></main></body></html>"


def _section_html(cards: list[tuple[str, str]]) -> str:
    items = "".join(
        f'<li class="card"><a href="https://news.example/story/{n}/x"><h3>{title}</h3></a><p>{lead}</p></li>'
        for n, (title, lead) in enumerate(cards, 100)
    )
    listing = f'<section class="section-index"><h1>Politics</h1><ul class="cards">{items}</ul></section>'
    return f"<html><body><main>{listing}</main></body></html>"


def test_a_section_of_two_cards_is_no_copy_of_the_story_it_teases():
    """Two cards, each a headline over its story's first sentence, are too few items to be a
    listing by their shape; the section's address tells it. Before, it joined the story's cluster
    by its opening, and the story's later copies followed it there (the nineteenth outside set)."""
    lead = (
        "The state emergency service says it has now received five thousand calls for help after the storms."
    )
    story = [lead, prose(63, 70), prose(64, 60)]
    other = (
        "Cougars too strong for the Rovers in round twelve",
        "The Cougars defeated the Rovers by two points in the twelfth round of the league",
    )
    engine = Deduplicator()
    _, section, copy = engine.process_batch(
        [
            Page(
                id="story",
                html=_story_html("Storm calls pass five thousand", story),
                url="https://news.example/story/100/storm-calls",
                source="news.example",
            ),
            Page(
                id="section",
                html=_section_html([("Storm calls pass five thousand", lead), other]),
                url="https://news.example/news/politics/",
                source="news.example",
            ),
            Page(
                id="copy",
                html=_story_html("Five thousand calls after the storm", story[:2]),
                url="https://other.example/news/storm-calls-5000",
                source="other.example",
            ),
        ]
    )
    assert section.roundup and section.cluster_id != "story", section
    assert copy.cluster_id == "story", copy


def test_a_listing_copies_a_roundup_of_its_own_site_only():
    """Two sites' section fronts that list the same wire stories under the same summaries are alike
    as wholes, yet neither is the other; the same front crawled again is."""
    again = Match("front", 0.9, "F", 0.95, 0.9, HOLDS, roundup=True)
    elsewhere = again._replace(other_site=True)
    assert copies_listing(again) and not copies_listing(elsewhere)
    assert may_copy(True, again, listing=True) and not may_copy(True, elsewhere, listing=True)
    assert may_copy(False, elsewhere)  # a page of another site's newsletter may still be its copy
    kwargs = {"signed": True, "rule": RULE, "founds": "p", "roundup": True, "listing": True}
    assert decide("p", exact=elsewhere, candidates=[], **kwargs).status == UNIQUE
    assert decide("p", exact=again, candidates=[], **kwargs).cluster_id == "F"

    text = front(FRONT_ITEMS[:4])
    engine = Deduplicator()
    first, same, other, unsited = engine.process_batch(
        [
            Page(id="a", text=text, url="https://a.example/section/world"),
            Page(id="a-again", text=text, url="https://a.example/section/world?page=1"),
            Page(id="b", text=text, url="https://b.example/world/"),
            Page(id="nowhere", text=text),
        ]
    )
    assert first.roundup and first.status == UNIQUE
    assert same.status == DUPLICATE and same.cluster_id == "a"
    assert other.status == UNIQUE and other.roundup  # the same words, another site's page
    assert unsited.cluster_id == "a"  # no site to tell: asked as before


def test_a_saved_window_and_a_window_on_disk_keep_the_sites(tmp_path):
    from stream_lsh.core.dedup import export_state, import_state

    text = front(FRONT_ITEMS[:4])
    pages = [
        Page(id="a", text=text, url="https://a.example/world"),
        Page(id="b", text=text, url="https://b.example/world"),
    ]
    engine = Deduplicator()
    engine.process(pages[0])
    loaded = Deduplicator()
    import_state(loaded, *export_state(engine))
    assert loaded.process(pages[1]).status == UNIQUE
    assert decided_alike_on_disk(pages, tmp_path / "w")
