"""What the generator knows about each page: the corpus and the truth behind its labels."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

# --- Public types -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticCorpus:
    """Pages shaped like the product's input JSON lines, and page id -> cluster label."""

    pages: list[dict[str, Any]]
    labels: dict[str, str]


@dataclass(frozen=True)
class PageTruth:
    """What the generator knows about one page, for tests and error analysis.

    ``kind`` is "wire", "local", "no-content", "notice" (a site's error page, bot check ...),
    "teaser" (an excerpt of a story, with its label), "quote" (a story of its own, with its own
    label, quoting a passage of another) or "digest" (a newsletter of other stories' first
    sentences, with its own label); ``article`` the article paragraphs as placed in the page (empty
    for no-content pages and notices; a teaser's "Read more" line is not part of it);
    ``site_prose`` the outlet's site-wide paragraphs; ``event`` the event id shared by sibling
    stories, or None; ``published`` the true publication time (the clean corpus's date, and the
    page's ``<time>``). With ``messy_dates``, ``received`` is when the feed delivered the page (the
    file is in that order) and ``date_form`` how its date field is written (a key of
    :data:`DATE_FORM_SHARES`); both are None in the clean corpus.

    ``quoted`` is, for a quoting page, the label of the story it quotes: its article holds a run
    of whole sentences of one of that story's pages, published earlier, as paragraphs of their
    own after its first paragraph. ``excerpt_of`` is, for a teaser, the id of the page whose text
    it excerpts: a copy of its story, published earlier (later, with the ``early-teasers`` shape),
    whose first whole sentences (25-40% of its words) are the teaser's article. Both are None for other pages.

    ``spreading`` is True for the copies of a story that spreads (``spreading`` stories asked of
    the generator, :mod:`.spreading`): a wire story ("wire") carried by many outlets, each once,
    within SPREAD_HOURS. Its pages' ``outlet`` (their ``source``) and ``published`` (their event
    time in the clean corpus) are what story-spread alerts count.
    """

    label: str
    kind: str
    outlet: str
    lang: str
    event: str | None
    entities: tuple[str, ...]
    article: tuple[str, ...]
    site_prose: tuple[str, ...]
    published: datetime
    received: datetime | None = None
    date_form: str | None = None
    quoted: str | None = None
    excerpt_of: str | None = None
    spreading: bool = False
