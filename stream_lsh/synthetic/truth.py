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

    ``kind`` is "wire", "local", "no-content" or "teaser" (an excerpt of a story: its label);
    ``article`` the article paragraphs as placed in the page (empty for no-content pages; without a
    teaser's "Read more" line); ``site_prose`` the outlet's site-wide paragraphs;
    ``event`` the event id shared by sibling stories, or None; ``published`` the true publication
    time (the clean corpus's date, and the page's ``<time>``). With ``messy_dates``, ``received``
    is when the feed delivered the page (the file is in that order) and ``date_form`` how its date
    field is written (a key of :data:`DATE_FORM_SHARES`); both are None in the clean corpus.

    ``excerpt_of`` is, for a teaser, the id of the page whose text it excerpts: a copy of its story
    published earlier, of which its article is the first whole sentences (TEASER_SHARE_OF_STORY of
    its words); None for other pages.
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
    excerpt_of: str | None = None
