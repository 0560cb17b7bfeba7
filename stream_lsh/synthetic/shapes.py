"""Shapes of pages as real feeds deliver them, each on request: what the default world never makes.

The default world writes articles in paragraphs, puts its headline lists in a sidebar, marks its
chrome with ``nav``/``aside``/``footer``, and trims copies by at most 30%. Real feeds also send:

* ``one-line``: the article's text in one block, as many feeds and extractors deliver it (one
  line of a text page, one ``<p>`` of an HTML page);
* ``fixed-list``: a "Most read" list of 8 headlines inside the article's body, the same on every
  page of an outlet (a site whose list changes once a day, or never);
* ``rotating-list``: the same list made of the outlet's latest headlines, so it changes with every
  page;
* ``div-only``: HTML without a single semantic tag: header, menu, article, lists and footer are
  all ``<div>``;
* ``trimmed``: copies keep 55-100% of a wire story rather than 70-100%, so a page quoting a long
  passage of the story can hold most of a trimmed copy;
* ``cold-sites``: every outlet's first pages come first in the file, site after site, as a new
  crawler's first sweep delivers them, before the boilerplate learner has seen any site;
* ``early-teasers``: teasers come before their story, as a push alert, a feed card or an RSS item
  sent minutes ahead of the article does (the story's first page then finds only the teaser);
* ``hard-wrapped``: text pages as wire services send them: the headline in capitals, each
  paragraph indented and broken at the outlet's fixed width (60-79 characters) wherever the next
  word would not fit, so many lines start with a name or a number;
* ``notices``: the pages without an article are what a site shows in place of one at a story's
  address (an error page, a bot check, a paywall stub, a removal notice; :mod:`.notices`), the
  same text at every address of the site, and there are more of them: 5% of pages, not 1%.
* ``script-built``: about half the outlets (by their domain) build their HTML pages with scripts,
  as a crawler that runs none fetches them: the headline and an empty frame, the article only as
  data, in the page's ``__NEXT_DATA__`` state (paragraph objects beside the site's trending list
  and ads) or in its JSON-LD ``articleBody``.

Shapes change how pages are rendered and ordered (``trimmed``: how copies are cut;
``early-teasers``: when teasers come; ``notices``: what the pages without an article are), never
what a story is: each story's pages keep one label, each page without an article its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

__all__ = [
    "COLD_PAGES",
    "EARLY_TEASER_LEAD_S",
    "LIST_HEADLINES",
    "NO_SHAPES",
    "SHAPE_NAMES",
    "SHAPE_SUMMARIES",
    "TRIMMED_KEEP_FRACTION",
    "Shapes",
]

#: Headlines in an in-body list.
LIST_HEADLINES = 8
#: A trimmed copy keeps this share of the wire story's sentences (drawn per copy, uniform).
TRIMMED_KEEP_FRACTION = (0.55, 1.0)
#: With ``cold-sites``, this many pages of every outlet come first.
COLD_PAGES = 6
#: With ``early-teasers``, a teaser comes this many seconds (inclusive) before its story's first page.
EARLY_TEASER_LEAD_S = (60, 3600)


@dataclass(frozen=True)
class Shapes:
    """The shapes asked for (see the module doc); none by default."""

    one_line: bool = False
    fixed_list: bool = False
    rotating_list: bool = False
    div_only: bool = False
    trimmed: bool = False
    cold_sites: bool = False
    early_teasers: bool = False
    hard_wrapped: bool = False
    notices: bool = False
    script_built: bool = False

    def __post_init__(self) -> None:
        if self.fixed_list and self.rotating_list:
            raise ValueError("a page has one in-body list: ask for fixed-list or rotating-list, not both")

    @classmethod
    def parse(cls, names: Iterable[str]) -> Shapes:
        """Shapes from their names (``one-line``, ``fixed-list``...); an unknown name is refused."""
        known = {field.name.replace("_", "-"): field.name for field in fields(cls)}
        chosen = {}
        for name in names:
            if name not in known:
                raise ValueError(f"unknown page shape {name!r}; choose from {', '.join(known)}")
            chosen[known[name]] = True
        return cls(**chosen)

    @property
    def names(self) -> list[str]:
        return [field.name.replace("_", "-") for field in fields(self) if getattr(self, field.name)]


SHAPE_NAMES = tuple(field.name.replace("_", "-") for field in fields(Shapes))
#: Each shape in a few words, for a command's help.
SHAPE_SUMMARIES: dict[str, str] = {
    "one-line": "the article on one line",
    "fixed-list": "a list of 8 headlines in the body, the same on every page of a site",
    "rotating-list": "the same list of the site's latest headlines",
    "div-only": "HTML of <div>s alone",
    "trimmed": "copies keep 55-100% of a story",
    "cold-sites": "each site's first pages first",
    "early-teasers": "teasers before their story",
    "hard-wrapped": "text pages wrapped at a fixed width, as wire copy",
    "notices": "5% of pages are a site's error pages, bot checks, paywall stubs and removal notices",
    "script-built": "about half the sites' HTML pages carry their article only as data for scripts",
}
assert tuple(SHAPE_SUMMARIES) == SHAPE_NAMES, "every shape has its summary"
#: No shape asked for: the default world's pages.
NO_SHAPES = Shapes()
