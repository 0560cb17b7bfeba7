"""The article a page carries as data: script-built pages, JSON cards and feed items as JSON.

A crawler that runs no scripts fetches many news pages as an app's shell: the headline, perhaps,
and an empty ``<div id="__next">``. The article is on the page all the same, as data:

- the schema.org ``NewsArticle`` in ``<script type="application/ld+json">`` that search engines
  read, whose ``articleBody`` is the story's text;
- the state a script framework renders the page from: Next.js's ``__NEXT_DATA__``, any
  ``<script type="application/json">``, a ``window.__STATE__ = {...}`` assignment. The article is
  an object with a headline and a body (``articleBody``, ``body``, ``content``, ``html`` and their
  kin, :data:`_BODY_KEYS`), the body a string of text or HTML or a list of paragraph objects.

Read from what it shows, such a page is a headline: too short to sign (``no_content``), so no copy
of its story ever joins it, nor it them. The fourteenth outside set (docs/accuracy.md) has 63 such
pages at four sites, 30 of them ``no_content``; read from their data, with the set's JSON cards
read as cards, its missed pairs went from 620 to 347 (seed 1).

So an HTML page whose visible text holds fewer than half the words of the article in its data
(:data:`VISIBLE_SHARE`; and fewer than half the characters of its data scripts, a test that spares
every other page the parsing) is read as that article: its headline as ``<h1>`` and its paragraphs.
A page that shows its article is read as it shows it, whatever its data holds; a page whose data
holds no article (a section front lists items of a headline and a summary) stays as it shows.

The same reading serves a body that is one JSON object, as an app's story card or a JSON Feed
item (``title``, ``summary``, ``content_text``) arrives: it is the card or article it holds, as an
RSS item is (:mod:`.feed`). Such a card may give only a summary; an HTML page's data counts only a
full body, since its summary is the page's description, not its article.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Final

import orjson

__all__ = ["VISIBLE_SHARE", "Article", "data_article_html", "json_card_html"]

#: An HTML page is read from its data when its visible words are fewer than this share of the
#: words of the article the data holds.
VISIBLE_SHARE: Final = 0.5
#: Keys an article's headline goes by, the likeliest first.
_HEADLINE_KEYS: Final = ("headline", "title", "name")
#: Keys of a full body (the article's text), the fullest first.
_BODY_KEYS: Final = (
    "articleBody",
    "content_html",
    "contentHtml",
    "body_html",
    "bodyHtml",
    "content_text",
    "body",
    "content",
    "html",
    "paragraphs",
    "blocks",
    "text",
)
#: Keys of a summary: a card's text when it has no body.
_SUMMARY_KEYS: Final = ("summary", "description", "dek", "standfirst", "excerpt", "abstract")
#: Keys of a paragraph object's text (``{"type": "paragraph", "text": "..."}``), or of a value
#: given as an object (WordPress's ``{"rendered": "<p>..."}``).
_TEXT_KEYS: Final = ("text", "html", "content", "value", "rendered", "body")
#: Objects looked at in one page's data at most: a bound on the work a huge state blob costs.
_MAX_NODES: Final = 20_000

_SCRIPT_OPEN = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)
_SCRIPT_CLOSE = re.compile(r"</script\s*>", re.IGNORECASE)
_JSON_TYPE = re.compile(r"""\btype\s*=\s*["']?application/(?:ld\+)?json""", re.IGNORECASE)
_ASSIGNMENT = re.compile(r"\s*(?:window\.|var\s+|self\.)?[\w$.]+\s*=\s*(?=[\[{])")
_TAG = re.compile(r"<[a-zA-Z/!][^>]*>")
_JSON_START = re.compile(r"\A\s*\{")


@dataclass(frozen=True)
class Article:
    """An article or a card, found in data or in a feed item: its headline and its paragraphs,
    each plain text or HTML."""

    headline: str
    paragraphs: tuple[str, ...]

    @cached_property
    def words(self) -> int:
        """How many words its paragraphs hold (markup left out)."""
        return sum(_word_count(paragraph) for paragraph in self.paragraphs)

    def to_html(self) -> str:
        """The article as the HTML page it stands for: the headline as ``<h1>``, each paragraph in
        its own block (one given as HTML keeps its markup)."""
        parts = [f"<h1>{html.escape(self.headline, quote=False)}</h1>"] if self.headline else []
        for paragraph in self.paragraphs:
            if _TAG.search(paragraph):
                parts.append(f"<div>{paragraph}</div>")
            else:
                parts.append(f"<p>{html.escape(paragraph, quote=False)}</p>")
        return f"<html><body><main><article>{''.join(parts)}</article></main></body></html>"


def _word_count(paragraph: str) -> int:
    return len(_TAG.sub(" ", paragraph).split())


def _text_of(value: object) -> str | None:
    """A headline or paragraph given as a string, or as an object holding one."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            found = value.get(key)
            if isinstance(found, str) and found.strip():
                return found.strip()
    return None


def _paragraphs(value: object) -> list[str]:
    """A body as paragraphs: a string (plain text split at its line breaks; HTML as it is), a list
    of strings or paragraph objects, or an object holding a string."""
    if isinstance(value, list):
        return [text for item in value if (text := _text_of(item)) is not None]
    text = _text_of(value)
    if text is None:
        return []
    if _TAG.search(text):
        return [text]
    return [line.strip() for line in text.splitlines() if line.strip()]


def _article_of(node: dict[str, object], *, summaries: bool) -> Article | None:
    """The article an object stands for: one with a headline and a body (or, with ``summaries``,
    a summary in place of a body)."""
    headline = next((text for key in _HEADLINE_KEYS if (text := _text_of(node.get(key)))), None)
    if headline is None:
        return None
    keys = _BODY_KEYS + _SUMMARY_KEYS if summaries else _BODY_KEYS
    for key in keys:
        paragraphs = _paragraphs(node.get(key))
        if paragraphs:
            return Article(html.unescape(_TAG.sub("", headline)).strip(), tuple(paragraphs))
    return None


def _objects(value: object) -> Iterator[dict[str, object]]:
    """Every object within a JSON value, outermost first, at most :data:`_MAX_NODES`."""
    stack, seen = [value], 0
    while stack and seen < _MAX_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            yield node
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))


def _fullest(values: list[object], *, summaries: bool) -> Article | None:
    """The article with the most words among all the objects in ``values``."""
    best: Article | None = None
    for value in values:
        for node in _objects(value):
            article = _article_of(node, summaries=summaries)
            if article is not None and (best is None or article.words > best.words):
                best = article
    return best


def _loads(raw: str) -> object | None:
    try:
        value: object = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value


def json_card_html(body: str | None) -> str | None:
    """The HTML a body stands for when it is one JSON object holding an article or a card (a
    headline with a body or a summary); None for any other body. A feed document of several cards
    is told apart before (:func:`.feed.feed_document`)."""
    if not body or _JSON_START.match(body) is None:
        return None
    value = _loads(body)
    if not isinstance(value, dict):
        return None
    article = _fullest([value], summaries=True)
    return article.to_html() if article is not None else None


def _data_scripts(markup: str) -> list[str]:
    """The JSON text of a page's data scripts: those typed as JSON, and those that assign a JSON
    value to a name."""
    found, at = [], 0
    while (opening := _SCRIPT_OPEN.search(markup, at)) is not None:
        closing = _SCRIPT_CLOSE.search(markup, opening.end())
        if closing is None:
            break
        content = markup[opening.end() : closing.start()]
        if _JSON_TYPE.search(opening.group(1)):
            found.append(content)
        elif (assignment := _ASSIGNMENT.match(content)) is not None:
            found.append(content[assignment.end() :].strip().rstrip(";"))
        at = closing.end()
    return found


def data_article_html(markup: str, shown: list[str]) -> str | None:
    """The HTML of the article an HTML page holds in its data, when the blocks it shows
    (``shown``) hold fewer than :data:`VISIBLE_SHARE` of that article's words; None when the page
    shows its article, or its data holds none."""
    if "<script" not in markup and "<SCRIPT" not in markup:
        return None
    scripts = _data_scripts(markup)
    if sum(map(len, shown)) >= VISIBLE_SHARE * sum(map(len, scripts)):
        return None  # the data is too small to hold an article the page does not show
    values = [_loads(html.unescape(raw) if raw.lstrip().startswith("&") else raw) for raw in scripts]
    article = _fullest([value for value in values if isinstance(value, dict | list)], summaries=False)
    if article is None or sum(len(block.split()) for block in shown) >= VISIBLE_SHARE * article.words:
        return None
    return article.to_html()
