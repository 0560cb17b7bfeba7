"""Roundups: a page that opens several stories is none of them.

A newsletter digest, a roundup ("What you need to know today"), a live page or a front page gives
the headline and first sentence or two of several stories. Against one of those stories it can
look like a copy: it holds that story's opening, which is the story's lead (:mod:`.lead`), and for
the short articles of wire briefs that lead is half the story or more. On the real-prose digests
of ``benchmarks/eval_grid.py`` such pages were most of the false pairs, matched by Jaccard
similarity 0.3-0.45 or by containment, while their stories' own full pages were no larger than
they, so the fuller-member check (:mod:`.fuller`) had nothing to refuse them with.

What gives them away is that they hold *several* openings. Every sentence of prose (each
paragraph's first, and each after it) has the opening key an article beginning there would have
(:func:`.opening.sentence_openings`): a digest's item often gives its headline before the
story's first sentence, in one paragraph ("Fire damages cathedral. Fire has damaged part of St
John the Divine..."). The window already remembers the first page with each opening
(:mod:`.opening`). A page whose sentences open :data:`STORIES` or more earlier stories (distinct
clusters) is a **roundup**. The paragraphs the boilerplate learner took out count too: a site's
front and section pages repeat their stories' openings from one version to the next, so the
learner drops them, and what is left of a later version is the few items that are new, which look
like a teaser of a story or two. Its own opening counts only when the page it opens like resembles
it (shares a band): outlets open pages of many stories with the same stock line ("In case you
missed it, this is one of the big stories of the day."), which opens no story. A roundup is a
copy only of a page that holds most of it, at least :data:`HOLDS` of it (the share of the page
that lies in the candidate): another outlet's copy of the same newsletter. It never joins one of
the stories it sums up, and it never joins by its opening.

Two openings make no roundup: a page may carry two stories, or one story and a "related" paragraph
that opens another. A copy of a story whose "related" box gives the first sentences of two others
holds three openings and is a roundup by this count; it still joins its story, because most of it
lies there (the story's text, and the lead it shares with the story, :mod:`.lead`).

A front or section page that comes before its stories opens none that the window knows. So a page
is a roundup by its shape too, a **listing**: :data:`LISTING_ITEMS` or more items, each a
headline line followed by a summary of at most :data:`SUMMARY_WORDS` words, by the time it was
posted ("4 hours ago", :func:`dateline`) or its author's byline, or by both, at least half of them
about their headline (the summary shares a word of five letters or more with it: a "Related:"
line between an article's paragraphs names another story; or the page dates or signs
:data:`DATED_ITEMS` items or more: an article dates and signs itself once), the items making at
least half its words (:func:`is_listing`). A time over a paragraph is no headline: a live page of
one story puts one over each entry; nor is a line by which an article points to another story
("Related: ...", "Read more: ..."), whose words the paragraph after it may share.

Three items make a listing. A "three things to know" brief, a newsletter of three stories or a
tag page with three, each a headline over a sentence or two, came before its stories and was none
of them; at four items, the first full copy of each story joined it (at containment 0.7 and more:
the item it holds is its own lead, which counts twice, :mod:`.lead`), and the story's later copies
followed. On the eleventh outside set (seed 1) such pages made all 65 false pairs, and none
is left at three; the ninth to sixteenth sets and the generated grid lose no pair of a story for
it. Two items stay no listing: a page of two stories, or a story and one "related" item. Nor is
an item a cookie banner or a paywall's box, a heading over a short text too (:func:`_notice`): a
short paywalled story, its headline and lead between the two, made three.

It is judged on the page's blocks as extracted, before the sentences above its headline, its
lists of headlines and its site's boilerplate are taken out: a tag page's headlines over their
times are such a list, and were dropped before the test saw them. On the eleventh to fourteenth
outside sets this took 550 of the 638 pages of several stories at four items (375 before dated
items counted and the test saw the whole page), on the fifteenth 134 of 179, and no page of a
single story on the ninth to fifteenth (the 16 listings among their pages labelled alike are copies
of one newsletter); three items take 8 more pages of several stories on the ninth to sixteenth
sets, and no page of a single story. A page at its site's search address is a listing too,
whatever its shape (:func:`is_search`): it often lists two or three stories; and so is a page at
its site's front (:func:`is_front`), which often gives three summarised stories among lists of
bare headlines, and a tag, topic or author page (:func:`is_tag`). A listing is a copy of a roundup
only, such as the same front crawled again: once its site's learner has taken out the items the
site printed before, what is left of a front may be one new item, the text of a card or an alert,
word for word, which it would otherwise join.

And the other way round: **no page is a copy of a roundup that holds it**. A card, an RSS item or
a short story whose text is one item of a front that came first lies wholly in it, which reads
as a teaser of a fuller page; it joined the front, and every later copy of the story joined it
there. A page joins a roundup only when each holds :data:`HOLDS` of the other: another copy of the
same page (:func:`may_copy`). Holding most of the roundup is not enough: what a site's learner
leaves of a front may be one item's summary, which a full copy of that story holds while being
three times its size, and a live page holds a section front's few items so.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl

from .notice import says_notice
from .page import address, is_route, tracks_reader
from .text import byline, heading, normalize

_LONG_WORD = re.compile(r"\w{5,}")
_DATE_TOKEN = re.compile(r"[^\W_]+")
# a line by which an article points to another story ("Related: ...", "Read more: ...", and as
# papers of the other stop-word languages label it): no item, and it names nothing of the story
_POINTER = re.compile(
    r"(?:related(?: stories| story| articles?| coverage)?|read more|read also|also read|see also"
    r"|more on this|à lire aussi|lire aussi|mehr zum thema|lesen sie auch|leggi anche|relacionad[oa]s?"
    r"|lea también|leia também|lees ook|читайте также)\s*[:|»›]",
    re.IGNORECASE,
)


def points_elsewhere(block: str) -> bool:
    """Whether a block is a line by which an article points to another story."""
    return _POINTER.match(block) is not None


_DATELINE_WORDS = 12
_DATELINE_CHARS = 80
_DIGIT = re.compile(r"[0-9]")
# the pages a site has of its own, named so in their address ("/privacy-policy", "/contact-us")
_SITE_PAGE_WORDS = frozenset(
    """about contact privacy terms conditions cookies cookie policy legal disclaimer accessibility
    imprint impressum advertise advertising careers jobs subscribe subscription newsletters faq help
    sitemap copyright corrections complaints ethics standards""".split()
)
_SITE_WORD = re.compile(r"[^\W_]{4,}")  # a word of a site's name that its domain spells
_SECTION_STEP = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)?")  # one or two words, no digit
_SITE_NAME = re.compile(r"\s+[|\-–—:•·]\s+")  # between a page's own title and its site's name
_SEARCH_STEPS = frozenset("search suche recherche buscar busca ricerca zoeken zoek".split())
_SEARCH_KEYS = frozenset(("q", "query"))
_TAG_STEPS = frozenset("tag tags topic topics author authors category categories".split())
# a site's index pages
_INDEX_STEPS = frozenset(
    "index.html index.htm index.php index.shtml index.asp default.asp default.aspx home".split()
)
_DAY_WORDS = frozenset("ago yesterday today now".split())
_MONTHS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec""".split()
)
_DATE_TERMS = """monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs
fri sat sun second seconds sec secs minute minutes min mins hour hours hr hrs day days week weeks
month months year years just at on by updated update published posted last a p m am pm gmt utc bst
cet cest et est edt ct cst cdt mt mst mdt pt pst pdt st nd rd th"""
_DATE_WORDS = _DAY_WORDS | _MONTHS | frozenset(_DATE_TERMS.split())

if TYPE_CHECKING:  # the rule (.decision) calls this module
    from .decision import Match

__all__ = [
    "DATED_ITEMS",
    "HOLDS",
    "LISTING_ITEMS",
    "SECTION_PROSE",
    "SECTION_WORDS",
    "STORIES",
    "SUMMARY_WORDS",
    "copies_listing",
    "dateline",
    "holds_most_of",
    "is_front",
    "is_listing",
    "is_roundup",
    "is_search",
    "is_section",
    "is_tag",
    "lists_stories",
    "may_copy",
    "points_elsewhere",
]

#: A page whose paragraphs open this many earlier stories (distinct clusters) is a roundup.
STORIES: Final = 3
#: A roundup is a copy only of a page in which at least this share of it lies.
HOLDS: Final = 0.7
#: A page of this many items or more (a headline, then a short summary) is a listing.
LISTING_ITEMS: Final = 3
#: ... an item's summary having at most this many words.
SUMMARY_WORDS: Final = 60
#: A page that dates or signs this many items or more lists them (an article does so once).
DATED_ITEMS: Final = 3
#: A section's index names the section in at most this many words ("Local news", "Terms of use").
SECTION_WORDS: Final = 3
#: ... and holds less prose than this many words (two cards' summaries; a story has paragraphs).
SECTION_PROSE: Final = 100


def is_roundup(opened: Collection[str]) -> bool:
    """Whether a page is a roundup, from the clusters of the earlier pages whose openings its
    paragraphs hold."""
    return len(opened) >= STORIES


def holds_most_of(candidate: Match) -> bool:
    """Whether a candidate holds most of the page, so that a roundup may be a copy of it; a
    candidate whose share was not measured is not asked to (as in :mod:`.fuller`)."""
    return candidate.of_page is None or candidate.of_page >= HOLDS


def is_listing(blocks: Sequence[str]) -> bool:
    """Whether a page's blocks are a listing: :data:`LISTING_ITEMS` items or more, the items making
    half its words or more. An item is a headline line (:func:`.text.heading`, no time) followed
    by a summary (a block of at most :data:`SUMMARY_WORDS` words that is no heading), by the time
    it was posted (:func:`dateline`) or a byline (:func:`.text.byline`), or by both. At least half
    the items must be about their headline: the summary shares a word with it, or the item is
    dated or signed on a page that dates or signs :data:`DATED_ITEMS` items or more (an article
    does so once)."""
    if len(blocks) < 2 * LISTING_ITEMS:
        return False
    heads = [heading(block) and _POINTER.match(block) is None for block in blocks]
    if sum(heads) < LISTING_ITEMS:  # every item opens with a headline line
        return False
    words = [block.count(" ") + 1 for block in blocks]
    total = sum(words)
    # at most the headings and the short blocks right after them: an article's paragraphs are
    # most of its words, and it is told at once (this runs on every page)
    bound = sum(w for w, head in zip(words, heads, strict=True) if head) + sum(
        w for w, head, before in zip(words[1:], heads[1:], heads, strict=False) if before and not head
    )
    if 2 * bound < total:
        return False
    items = list(_items(blocks, heads, words))
    if not _lists(items, total, about_most=False):  # a notice's item only ever takes one away
        return False
    return _lists([item for item in items if not _notice(blocks[item[0] : item[1]])], total, about_most=True)


def _lists(items: Sequence[tuple[int, int, int, bool | None, bool]], total: int, *, about_most: bool) -> bool:
    """Whether items (:func:`_items`) make a listing of a page of ``total`` words; without
    ``about_most``, only the counts that fewer items never raise (it is asked first, before each
    item's lines are searched for a notice's stock phrase)."""
    dates = sum(dated for *_, dated in items) >= DATED_ITEMS
    counted = [
        (size, bool(about) or (dated and dates))
        for _, _, size, about, dated in items
        if about is not None or (dated and dates)
    ]
    return (
        len(counted) >= LISTING_ITEMS
        and (not about_most or 2 * sum(about for _, about in counted) >= len(counted))
        and 2 * sum(size for size, _ in counted) >= total
    )


def _items(
    blocks: Sequence[str], heads: Sequence[bool], words: Sequence[int]
) -> Iterator[tuple[int, int, int, bool | None, bool]]:
    """Each headline line of the blocks (``heads``: which blocks are headings; ``words``: how many
    words each holds) with what follows it: where its lines begin and end, its words and those of
    its byline, summary and dateline, whether the summary is about it (None: no summary), and
    whether it is dated or signed (a byline under a headline of a listing is what a time is: its
    item's)."""
    last = len(blocks)
    at = 0
    while at < last - 1:
        if not heads[at]:
            at += 1
            continue
        end = at + 1
        signed = heads[end] and byline(blocks[end])
        end += signed
        summary_at = end if end < last and not heads[end] and words[end] <= SUMMARY_WORDS else None
        end += summary_at is not None
        when = end < last and heads[end] and (dateline(blocks[end]) or byline(blocks[end]))
        end += when
        marked = signed or when
        if (summary_at is not None or marked) and dateline(blocks[at]):  # a time over an entry
            at += 1
            continue
        if summary_at is not None or marked:
            about = None if summary_at is None else _about(blocks[summary_at], blocks[at])
            yield at, end, sum(words[at:end]), about, marked
        at = end


def _notice(item: Sequence[str]) -> bool:
    """Whether an item's lines hold a notice's stock phrase (:func:`.notice.says_notice`): a cookie
    banner ("We value your privacy" over "We and our partners store information on your device")
    or a paywall's box is a headline over a short text, yet no story. With three items making a
    listing, a short paywalled story, its headline and lead between the two, was one: 11 pages
    of stories on the seventeenth outside set (seed 1), kept from their stories' clusters."""
    return any(says_notice(normalize(line)) for line in item)


def is_search(url: str | None) -> bool:
    """Whether a page's address is its site's search: a path step named so in one of the default
    languages ("/search?q=budget", "/suche/wahl"), or a query asked with ``q=`` or ``query=``.

    A search page lists the stories that hold its words, often two or three: too few items to be
    a listing by its shape (:func:`is_listing`), and a story's first copy joined it. On the
    fourteenth outside set its 20 search pages made about half the false pairs left (seed 1)."""
    parts = address(url)
    if parts is None:
        return False
    steps = parts.path.lower().split("/")
    if not _SEARCH_STEPS.isdisjoint(steps):
        return True
    return any(key in _SEARCH_KEYS and value for key, value in parse_qsl(parts.query))


def is_tag(url: str | None) -> bool:
    """Whether a page's address is one of its site's tag, topic, author or category pages: such a
    step, then the tag's name, last ("/topic/trump-budget", "/author/jane-doe", "/tag/brexit/").

    Such a page lists the stories under its tag, often two or three, each a headline over a
    summary that may run to a whole paragraph: too few items, or too long, to be a listing by its
    shape (:func:`is_listing`). On the thirteenth to sixteenth outside sets, 17 of them were read
    as one story, and a story they list joined one (or one joined the story) at containment 0.88.
    A story's address names a tag only before more steps ("/topics/politics/2017/03/16/slug"); a
    section named "people" holds stories ("/news/people/a-wedding-1234"), so it is not asked."""
    parts = address(url)
    if parts is None:
        return False
    steps = [step for step in parts.path.lower().split("/") if step]
    return len(steps) >= 2 and steps[-2] in _TAG_STEPS


def is_section(url: str | None, headline: str | None, blocks: Sequence[str], site: str = "") -> bool:
    """Whether a page is a section's index, or a site's page of its own: its address is one or
    two steps of at most two plain words each ("/news/", "/news/politics/", "/sport/rugby-league/",
    "/obituaries/", "/privacy-policy"), with no digit, no file, no query but one that tracks the
    reader or pages the index ("?page=2") and no fragment; its headline is the section's name, at
    most :data:`SECTION_WORDS` words beside the name of its ``site`` ("Politics | The Bulletin" on
    bulletin.example; in a script written without spaces, two characters count as a word); and
    its blocks hold less than
    :data:`SECTION_PROSE` words of prose (blocks that are no heading).

    A story's address names it: a slug of its headline's words, a number, or both
    ("/news/local-news/school-closed-today-510227/", "/2017/03/16/slug", "?id=73554184"). A story
    at a short address ("/heatwave-warning/", "/obituaries/john-smith", "/p/inflation-explained")
    has paragraphs of prose, and most have a headline of their own. A section page of two cards,
    each a headline over its story's first sentence, is too few items to be a listing by its shape
    (:func:`is_listing`): it joined the first story's copies by its opening, and its teased leads
    taught its site's learner that they were chrome. On the nineteenth outside set such were 37 of
    its 83 section pages and its 18 obituary listings; on the eighteenth to twenty-second sets no
    page of a story is a section so."""
    if not headline or _headline_words(headline, site) > SECTION_WORDS:
        return False
    parts = address(url)
    if parts is None or parts.fragment:
        return False
    steps = [step for step in parts.path.lower().split("/") if step]
    if not 0 < len(steps) <= 2 or not all(_SECTION_STEP.fullmatch(step) for step in steps):
        return False
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not all(tracks_reader(key) or key == "page" for key, _ in query):
        return False
    if _SITE_PAGE_WORDS.intersection(re.split(r"[-_]", steps[-1])):
        return True  # the site's own page: its terms or its privacy policy hold prose, no story
    prose = 0
    for block in blocks:
        if not heading(block):
            prose += block.count(" ") + 1
            if prose >= SECTION_PROSE:
                return False
    return True


def _headline_words(headline: str, site: str) -> int:
    """A page's own title's words: its headline less the part that names its site, first or last
    ("Politics | The Bulletin" on bulletin.example has 1, "Opinion | The case for a four-day
    week" 8); in a script written without spaces, two characters a word."""
    parts = _SITE_NAME.split(headline)
    title = " ".join(parts)
    if len(parts) > 1:
        domain = "".join(c for c in site.lower() if c.isalnum())
        if _names_site(parts[-1], domain):
            title = " ".join(parts[:-1])
        elif _names_site(parts[0], domain):
            title = " ".join(parts[1:])
    words = len(title.split())
    if any(ord(c) >= 0x2E80 for c in title):  # CJK: no spaces between words
        words = max(words, len(title.replace(" ", "")) // 2)
    return words


def _names_site(part: str, domain: str) -> bool:
    """Whether a part of a title names the site whose domain's letters are ``domain``: one of its
    words of four letters or more is in them ("The Bulletin", bulletin.example)."""
    return bool(domain) and any(
        len(word) >= 4 and word in domain for word in _LONG_WORD.findall(part.lower())
    )


def lists_stories(url: str | None) -> bool:
    """Whether a page's address says that it lists stories, whatever its shape: its site's search
    (:func:`is_search`), its front (:func:`is_front`) or a tag page (:func:`is_tag`)."""
    return is_search(url) or is_front(url) or is_tag(url)


def is_front(url: str | None) -> bool:
    """Whether a page's address is its site's front: the site's root or its index page, with no
    query but one that tracks where the reader came from ("/?ref=logo", "/?utm_source=app") and
    no route in its fragment (a script-built site's "/#/a/the-story" is a story).

    A front lists a few stories with a summary among lists of bare headlines, too few items to be a
    listing by its shape (:func:`is_listing`), or items under titles that are no headline lines;
    a story's first copy joined it, and later copies followed. An article is never served at its
    site's root without a query that names it ("/?p=6388")."""
    parts = address(url)
    if parts is None:
        return False
    steps = [step for step in parts.path.lower().split("/") if step]
    if len(steps) > 1 or (steps and steps[0] not in _INDEX_STEPS):
        return False
    if is_route(parts.fragment):
        return False
    return all(tracks_reader(key) for key, _ in parse_qsl(parts.query, keep_blank_values=True))


def dateline(block: str) -> bool:
    """Whether a short block says only when something was posted, to the day ("4 hours ago",
    "December 12, 2016 at 10:49 p.m. GMT", "Updated 12/12/2016 14:05"): every word a number, a
    month, a weekday, a unit of time or another word of such lines, and a day told (an archive's
    "November 2024" tells none)."""
    if len(block) > _DATELINE_CHARS:
        return False
    lowered = block.lower()
    if _DIGIT.search(lowered) is None and not any(word in lowered for word in _DAY_WORDS):
        return False  # most headings, at once
    tokens = _DATE_TOKEN.findall(lowered)
    if not tokens or len(tokens) > _DATELINE_WORDS:
        return False
    if not all(t[0].isdigit() or t in _DATE_WORDS for t in tokens):
        return False
    numbers = [int(t) for t in tokens if t.isdigit()]
    return (
        not _DAY_WORDS.isdisjoint(tokens)
        or len(numbers) >= 2
        or (len(numbers) == 1 and numbers[0] <= 31 and not _MONTHS.isdisjoint(tokens))
    )


def _about(summary: str, title: str) -> bool:
    """Whether a summary is about the headline above it: they share a word of five letters or more
    (a name, a subject). A "Related:" line between two paragraphs of an article names another
    story, and the paragraph after it shares nothing with it. Case aside: the blocks are read as
    extracted, where a headline's capitals are a summary's small letters."""
    return not set(_LONG_WORD.findall(title.lower())).isdisjoint(_LONG_WORD.findall(summary.lower()))


def copies_listing(candidate: Match) -> bool:
    """Whether a listing may be a copy of ``candidate``: a roundup of its own site (the same front
    crawled again, a newsletter's web copy), never a story, nor another site's listing.

    Two sites' fronts, section or tag pages that list the same wire stories under the same
    summaries are alike as wholes (Jaccard similarity 0.6-0.8), yet neither is the other: each is
    its site's own page. On the twelfth to sixteenth outside sets, 19 listings joined another
    site's listing so, none rightly, while 12 of the 39 that joined a listing of their own site
    were the same page (seed 1). A page with no site to tell is asked as before."""
    return candidate.roundup and not candidate.other_site


def may_copy(roundup: bool, candidate: Match, *, listing: bool = False) -> bool:
    """Whether the page may be a copy of ``candidate`` at all: a roundup only of a candidate that
    holds most of it (:func:`holds_most_of`), a listing only of a roundup, and any page of a
    roundup candidate only when each holds most of the other, never because one holds the other
    (the candidate one of the page's stories, or the page one of the candidate's items). A share
    that was not measured asks nothing.

    A listing never copies a story: once its site's learner has taken out the items it printed
    before, what is left of a front page may be one new item, the text of a push alert or a card
    of that story. On the eleventh to fourteenth outside sets (seed 1), 21 listings (most of them
    fronts and section pages) joined a story so, none of them its copy."""
    if listing and not copies_listing(candidate):
        return False
    if roundup and not holds_most_of(candidate):
        return False
    if not candidate.roundup:
        return True
    return holds_most_of(candidate) and (candidate.of_candidate is None or candidate.of_candidate >= HOLDS)
