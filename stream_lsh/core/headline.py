"""A page's headline: how a card or a brief that its story's bands never reach is still found.

Feeds carry a story in pieces much smaller than the story: an RSS or aggregator card (the
headline and a one-line summary), a teaser, a brief of two or three sentences. Such a piece is a
tenth of its story or less, so its Jaccard similarity with the story is far below what any band
finds (MMDS sec. 3.4: a band finds pairs alike as wholes). Containment would judge it, but only
between pages that are candidates. And a card's summary is often the outlet's *deck*, a line the
story's text does not hold at all (:mod:`.opening` covers the cards that quote the story's first
words).

What every piece does carry is the story's **headline**: the card's title, the teaser's link
text, the brief's ``og:title``. Outlets change its case and its punctuation, rarely its words. So
every page has a **headline key**, a hash of its headline's words (case, punctuation and spacing
left out), and the window remembers the earliest page with each key, in the map it keeps for
exact copies (the key is tagged, so it never equals a content hash or an opening key). It is used
three times:

1. **as a candidate**: the earliest page with the page's headline is measured as band candidates
   are, and judged by the same rule (:mod:`.verification`). This finds a brief's story; the brief
   still joins only when it lies in the story;
2. **as the evidence**: a *short* page (all lead, :mod:`.opening`) that no measure placed joins
   the earliest page with its headline, ``match`` "headline". A card of a headline and a deck has
   no text to measure.
3. **the other way round**: a story often comes after another outlet's card or push alert of it,
   whose deck it does not hold. A page of ordinary length that nothing else placed joins the
   earliest page with its headline too, ``match`` "headline", when *another site* gave that page.
   A site gives a live page or a weekly column one headline over new texts, so a page of its own
   site under its headline is another story: the window also remembers each site's earliest page
   with each headline (:func:`site_headline_key`), and a page with no site never joins so. On the
   ninth to fourteenth outside sets this joined 88 pages to their own story and none to another
   (seeds 1-3); before the site was asked, two live pages of one site were joined.

Where the headline comes from, in this order: the record's ``title`` (without a site's name after
its last separator, or before its first when its words spell the site's address, as in "The
Riverton Daily Courier - Story" at rivertoncourier.com: crawlers fill it from ``<title>``); in
HTML, ``og:title``, the first ``<h1>``, ``<title>`` without the site's name, else the first
``<h2>`` or ``<h3>`` (a card's fragment); in plain text, the first line when it is a heading,
after a wire's slug lines and, when it is too short, after an app's or a section's name, and
without what a record title would lose: a push alert's line often ends with its app's call
("Bulgaria finds middle ground on weapons deliveries to Ukraine - tap for the latest"), and keyed
with it, 14 alerts of the seventeenth outside set found no page of their story.

A label before it is not part of it: one in capitals ("BREAKING:", "JUST IN:", "EXCLUSIVE -"), as
push alerts and tickers put it, or one of the labels that alerts, feeds and sections give in any
case ("New:", "Update:", "Opinion -", "Breaking news:", "Watch:"). A word in the headline's own
case before a colon is its topic ("Brexit: ...", "Make it stop: ...") and stays. On the ninth to
sixteenth outside sets, 18 titles open with "New:", 19 with "Breaking:", 39 with "Opinion:" and 31
with "Report:". What is not a story's headline, so never keyed:

* fewer than :data:`MIN_WORDS` words: "World", "Latest news", "Live updates";
* a site's own title: a front page's ("Global Affairs Today | Latest news, breaking news and top
  stories") is the same on every snapshot of it, and each snapshot is a page of its own. It is
  known by the page's address (the site's root) or by the site's name in it (the words of the
  host's name, joined: "globalaffairstoday").

On the ninth outside set of docs/accuracy.md this joined 16 cards, teasers and briefs that nothing
joined before to their own story and none to another (seed 1): F1 0.920 to 0.945, precision as it
was (the numbers and their commands: docs/accuracy.md).
"""

from __future__ import annotations

import html as html_entities
import re
from itertools import takewhile

import numpy as np

from .hashing import fmix64, words, xxh64_text
from .page import HEAD_BYTES, address
from .roundup import is_front
from .text import byline, heading, normalize_blocks

__all__ = [
    "HEADLINE_WITHIN",
    "MIN_WORDS",
    "from_headline",
    "headline_key",
    "headline_text",
    "inner_text",
    "later_part",
    "site_headline_key",
    "site_title",
]

#: A headline has at least this many words; shorter ones name sections, not stories.
MIN_WORDS = 5
#: A page's headline is looked for among this many of its first blocks (:func:`from_headline`).
HEADLINE_WITHIN = 40
_OG_TITLE = re.compile(
    r"<meta\b[^>]*?\bproperty\s*=\s*[\"']og:title[\"'][^>]*?\bcontent\s*=\s*(?:\"([^\"]*)\"|'([^']*)')",
    re.IGNORECASE,
)
_H1 = re.compile(r"<h1\b[^>]*>(.*?)</h1\s*>", re.IGNORECASE | re.DOTALL)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_H2_H3 = re.compile(r"<h([23])\b[^>]*>(.*?)</h\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
#: What separates a title from the site's name after it: "Story | Site", "Story - Site".
_SITE_SEPARATOR = re.compile(r"\s+(?:\||-|–|—|::|·)\s+")
_MIN_NAME = 6
#: Slug lines that plain text's headline may come after (wire copy has two).
_SLUG_LINES = 3
#: Short lines (an app's name, a section, a time) after which plain text's headline is looked for.
_LABEL_LINES = 2
# A label before a headline: in capitals ("BREAKING:", "JUST IN:", "EXCLUSIVE -"), or one of the
# labels alerts, feeds and sections give in any case ("New:", "Opinion -", "Breaking news:")
_LABEL = re.compile(
    r"^\s*(?:[A-Z]{2,}(?:\s+[A-Z]{2,})?|(?i:breaking(?: news)?|just in|new|updated?|developing|live|watch"
    r"|video|photos|listen|exclusive|report|opinion|analysis|explainer|must read))\s*[:|\-–—]\s+(?=\S)"
)
# A later page of an article split over several: its title's mark at the end ("(Page 2)", "- Page
# 2 of 3"), or its address's: a page parameter ("?page=2") or a post's page after its slug
# ("/a-long-story/2/"). Not "Part 2": a series' second part is an article of its own.
_PAGE_MARK = re.compile(
    r"\s*(?:[|\-–—:,·]\s*)?[(\[]?\s*(?i:page|pg\.?|seite|página|pagina)\s+(\d{1,3})(?:\s+(?i:of)\s+\d{1,3})?\s*[)\]]?\s*$"
)
_PAGE_PARAM = re.compile(r"(?:^|&)(?i:page|pg|seite|pagina)=(\d{1,3})(?:&|$)")
_PAGE_PATH = re.compile(r"/[a-z0-9]+(?:-[a-z0-9]+){2,}/(\d{1,2})/?$", re.IGNORECASE)
_NOT_LETTERS = re.compile(r"[\W_]+")
_KEY_TAG = fmix64(np.array([0x4EAD_11E5_4EAD_11E5], dtype=np.uint64))[0]
_SITE_KEY_TAG = fmix64(np.array([0x51E5_4EAD_51E5_4EAD], dtype=np.uint64))[0]


def inner_text(fragment: str) -> str:
    """An HTML fragment's text: tags out, entities decoded, spaces collapsed (a title, a heading)."""
    return " ".join(html_entities.unescape(_TAG.sub(" ", fragment)).split())


def headline_text(*, title: str | None, html: str | None, text: str | None, site: str = "") -> str:
    """The page's headline as it gives it ('' when it gives none; see the module doc for where
    it is looked for); ``site``: the page's site, whose name a title may give first."""
    if title and title.strip():
        return _without_site_name(title.strip(), site)
    if html is not None:
        head = html[:HEAD_BYTES]
        found = _OG_TITLE.search(head)
        if found:
            return html_entities.unescape(found.group(1) or found.group(2) or "").strip()
        found = _H1.search(html)
        if found:
            return inner_text(found.group(1))
        found = _TITLE.search(head)
        if found:
            whole = inner_text(found.group(1))
            first = _SITE_SEPARATOR.search(whole)
            if first is None:
                return whole
            if _names_site(whole[: first.start()], site):
                return _SITE_SEPARATOR.split(whole[first.end() :])[0]
            return whole[: first.start()]
        found = _H2_H3.search(html)
        return inner_text(found.group(2)) if found else ""
    return _without_site_name(_text_headline(text or ""), site)


def _without_site_name(title: str, site: str) -> str:
    """A record's title without the site's name before its first separator when it names the site
    (:func:`_names_site`: "The Riverton Daily Courier - Story", "Harbor City Tribune :: Story"), or
    else after its last ("Story | The Site", "Story - GWS"): crawlers fill ``title`` from the
    page's ``<title>``, and the same story's ``og:title`` or card has no site name. What follows
    the last separator is the site's name when it has fewer words than what comes before it;
    otherwise it is the headline's own ("Budget: what it means for you, your pension and your
    taxes")."""
    found = list(_SITE_SEPARATOR.finditer(title))
    if not found:
        return title
    if _names_site(title[: found[0].start()], site):
        return title[found[0].end() :]
    before, after = title[: found[-1].start()], title[found[-1].end() :]
    return before if len(after.split()) < len(before.split()) else title


def _text_headline(text: str) -> str:
    """Plain text's headline: after any slug lines (at most :data:`_SLUG_LINES`), its first line
    when it is a heading; but when that line is too short to be a headline (an app's or a site's
    name, a section: "Brieflet", "World"), the next heading line of :data:`MIN_WORDS` words or more
    that is no byline, among the :data:`_LABEL_LINES` lines that follow it. Wire copy opens with
    slug lines ("XNW1715 4 BC 263", "BC-VISIBLE-TRADE 03-26 0643"), codes whose words are mostly
    numbers, and a card's text with its app's name."""
    lines = [line.strip() for line in text.strip().split("\n", _SLUG_LINES + _LABEL_LINES + 2)]
    slugs = sum(1 for _ in takewhile(_slug, lines[:_SLUG_LINES]))
    head = [line for line in lines[slugs : slugs + _LABEL_LINES + 2] if line]
    opening = list(takewhile(heading, head))
    if not opening:
        return ""
    if len(opening[0].split()) < MIN_WORDS:
        for line in opening[1 : _LABEL_LINES + 2]:
            if len(line.split()) >= MIN_WORDS and not byline(line):
                return line
    return opening[0]


def _slug(line: str) -> bool:
    """A wire slug line: at least half its words hold a digit (a story number, a date, a time)."""
    found = line.split()
    return bool(found) and 2 * sum(any(c.isdigit() for c in word) for word in found) >= len(found)


def from_headline(blocks: list[str], headline: str, key: int) -> list[str]:
    """The page's blocks without the sentences before its headline, when its headline (``headline``
    as the page gives it; its ``key`` 0: it has none) is among its first :data:`HEADLINE_WITHIN`
    blocks, as a heading line of the same letters and digits; else all of them.

    No sentence before a story's headline is its article: a cookie notice that the site's learner
    has not yet seen often enough to drop, a promotion, a site's description. Kept, it is where the
    article seems to begin (the heading lines a page opens with are skipped, a sentence is not), so
    it becomes the page's lead and its opening (:mod:`.lead`, :mod:`.opening`), which a copy at
    another site does not share; and once the site's learner drops the notice from later pages,
    their dropped paragraphs seem to open the first pages' stories, which makes later versions of
    a story roundups (:mod:`.roundup`). The heading lines before the headline (the site's name, a
    section, "BREAKING NEWS", a menu) stay: they were never taken for the article, and a menu goes
    with the lists (:func:`.text.without_lists`). When the sentences before the headline are as
    long as all that follows it, they are the article, and the headline is in a list of the site's
    latest stories below it (a page whose own headline is in no block of its own): they stay."""
    if not key:
        return blocks
    letters = _letters(headline)
    for at, block in enumerate(blocks[:HEADLINE_WITHIN]):
        if heading(block) and _letters(block) == letters:
            before = [block for block in blocks[:at] if not heading(block)]
            if not before or _words(before) >= _words(blocks[at:]):
                return blocks  # nothing to drop; or the headline again in a list below the article
            return [block for block in blocks[:at] if heading(block)] + blocks[at:]
    return blocks


def _names_site(text: str, site: str) -> bool:
    """Whether a title's part names its site: the words of the site's name (:func:`_site_name`)
    are among its words, in order ("The Riverton Daily Courier" names rivertoncourier.com)."""
    name = _site_name(site)
    if not name:
        return False
    at = 0
    for word in _NOT_LETTERS.split(text.lower()):
        if word and name.startswith(word, at):
            at += len(word)
    return at == len(name)


def _site_name(site: str) -> str:
    """A site's name as its address gives it: the longest label of its host but the last, its
    letters and digits ("globalaffairstoday" for news.globalaffairstoday.com)."""
    labels = site.lower().split(".")
    return max((re.sub(r"[^a-z0-9]", "", label) for label in labels[:-1] or labels), key=len, default="")


def _letters(text: str) -> str:
    """A headline's letters and digits in lower case, a label before it left out: what its key is
    made of (:func:`headline_key`), found without normalising and hashing every block."""
    return _NOT_LETTERS.sub("", _LABEL.sub("", text).lower())


def _words(blocks: list[str]) -> int:
    return sum(block.count(" ") + 1 for block in blocks)


def site_title(headline_words: list[str], url: str | None, site: str) -> bool:
    """Whether a headline is its site's own title, not a story's: the page is the site's front
    (:func:`.roundup.is_front`), or the headline holds the site's name: the longest label of its
    host but the last, when it has :data:`_MIN_NAME` letters or more ("globalaffairstoday"; "bbc"
    or "news" would be found in stories' headlines)."""
    if is_front(url):
        return True
    name = _site_name(site)
    return len(name) >= _MIN_NAME and name in "".join(headline_words)


def later_part(headline: str, url: str | None) -> bool:
    """Whether the page is page 2 or later of an article split over several, by its headline's
    mark ("... (Page 2)") or its address ("?page=2", "/a-long-story/2/"). Such a page shares no
    text with page 1, only its headline: it joins the article by it, even at its own site
    (:mod:`.dedup`). Pages 2 and later made 80 of the 171 pairs the eighteenth outside set missed."""
    found = _PAGE_MARK.search(headline)
    if found is None and url:
        where = address(url)
        if where is not None:
            found = _PAGE_PARAM.search(where.query) or _PAGE_PATH.search(where.path)
    return found is not None and int(found.group(1)) >= 2


def headline_key(headline: str, *, url: str | None, site: str, seed: int) -> int:
    """The page's headline key (uint64 as an int), 0 when it has none to key: under
    :data:`MIN_WORDS` words, or its site's own title (:func:`site_title`). A label in capitals
    before it ("BREAKING:") is left out, and so is a later page's mark after it ("(Page 2)")."""
    headline = _PAGE_MARK.sub("", _LABEL.sub("", headline))
    if not headline.strip():
        return 0
    normalized = normalize_blocks([headline])
    found = words(normalized[0]) if normalized else []
    if len(found) < MIN_WORDS or site_title(found, url, site):
        return 0
    key = fmix64(np.array([xxh64_text(" ".join(found), seed)], dtype=np.uint64) ^ _KEY_TAG)[0]
    return int(key) or 1  # 0 means "none"


def site_headline_key(headline: int, site: str) -> int:
    """The key of a headline at one site (uint64 as an int; 0: no headline key, or no site to
    tell): the window remembers each site's earliest page with a headline, so that a story can
    tell another outlet's card of it from a page of its own site under the same headline (a live
    page given to the next story, a column that comes back every week)."""
    if not headline or not site:
        return 0
    mixed = np.array([headline ^ xxh64_text(site, 0)], dtype=np.uint64)
    return int(fmix64(mixed ^ _SITE_KEY_TAG)[0]) or 1
