"""A syndication feed's item given as a page, read as the card it is.

Aggregators and feed readers store what they fetched: often the feed item itself, ``<item>`` with
its ``<title>`` and ``<description>``, or the whole feed document, given as the page's text or
HTML. Read as plain text, the markup was words; read as HTML, the title and description inside
``<![CDATA[...]]>`` (most feeds wrap them so) were comments, and ``<link>`` emptied the link's
text into the page. Either way the item lost the headline and the summary that make it a card of
its story (:mod:`.headline`, :mod:`.opening`).

So a body that is one feed item is rewritten as the HTML it stands for before the text steps: a
card, its title as the page's ``<h1>`` and its summary (the fullest of ``content:encoded``,
``content``, ``description``, ``summary``) as a paragraph; the item's link, id, dates and
categories are left out. A feed document of several items stays as it is. It is no story, and its
summaries, read as text, are each the first sentence of one of the site's stories: the site's
boilerplate learner saw them there and again in the stories, took them for the site's chrome,
and dropped them from the stories (a short alert kept only its site's "This is a developing story"
line, and two alerts of different stories became copies). It is a roundup instead, a page of
several stories that no story joins because it lists it (:func:`feed_document`).
"""

from __future__ import annotations

import html
import re
from itertools import islice

import orjson

from .embedded import Article
from .headline import inner_text

__all__ = ["feed_document", "feed_item_html"]

_START = re.compile(
    r"\A(?:\ufeff)?\s*<(?:\?xml\b|rss\b|feed\b|rdf:RDF\b|channel\b|item\b|entry\b)", re.IGNORECASE
)
_ITEM = re.compile(r"<(item|entry)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
# what an item gives as its text, the fullest first
_BODY = re.compile(
    r"<(content:encoded|content|description|summary)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL
)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_JSON_START = re.compile(r"\s*[\[{]")  # a body that may be an app's feed as JSON
_BODY_RANK = {"content:encoded": 0, "content": 1, "description": 2, "summary": 3}


def feed_document(body: str | None) -> bool:
    """Whether a page's body is a feed document of several items: an RSS or Atom feed, or an
    app's feed as JSON (objects with a ``headline`` or ``title``, as aggregator apps serve their
    cards). A page of several stories by what it is, so a roundup (:mod:`.roundup`) however its
    items read."""
    if not body:
        return False
    items = _first_items(body)
    if items is not None:
        return len(items) == 2
    return _JSON_START.match(body) is not None and _json_cards(body) >= 2


def _first_items(body: str) -> list[re.Match[str]] | None:
    """The first two items of a body that starts as a feed or an item (fewer if it has fewer);
    None for a body that does not start so."""
    if _START.match(body[:512]) is None:
        return None
    return list(islice(_ITEM.finditer(body), 2))


def _json_cards(body: str) -> int:
    """How many objects with a headline (``headline`` or ``title``) a JSON body holds; 0 when it
    is no JSON."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return 0
    found, stack = 0, [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found += isinstance(node.get("headline", node.get("title")), str)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def feed_item_html(body: str | None) -> str | None:
    """The HTML a page's body stands for when it is one RSS or Atom item (it starts as a feed or an
    item, and holds exactly one whole item); None for any other body."""
    items = _first_items(body) if body else None
    if items is None or len(items) != 1:
        return None
    return _card(items[0].group(2)).to_html()


def _value(raw: str) -> str:
    """An element's content as HTML: a CDATA section's text is markup as it stands; otherwise the
    content is XML-escaped once (feeds escape the HTML of a description so)."""
    found = _CDATA.search(raw)
    return found.group(1) if found else html.unescape(raw)


def _card(item: str) -> Article:
    """An item as the card it is: its title, and the fullest of its bodies (:data:`_BODY_RANK`)."""
    title = _TITLE.search(item)
    bodies = sorted(_BODY.findall(item), key=lambda found: _BODY_RANK[found[0].lower()])
    return Article(
        inner_text(_value(title.group(1))) if title else "", (_value(bodies[0][1]),) if bodies else ()
    )
