"""Seeded synthetic news pages with known clusters, for measuring the dedup filter.

Real crawls with trustworthy duplicate labels are rare and cannot ship with the project, so this
module builds a small world instead: outlets in several languages, each with its own HTML chrome
and its own site-wide prose; wire stories copied (and lightly edited) by several outlets; local
stories; "events" covered by several independent stories; and a few pages with no article at all.
Every page's cluster label is known, so :mod:`stream_lsh.evaluation` can score a run.

The hard cases are deliberate, because they are what the product has to get right:

* site prose (cookie notice, newsletter pitch...) is as stop-word dense as articles and repeats on
  every page of an outlet, some of it across a network of outlets;
* "Most read" lists and "Related:" lines carry headlines of *other* stories;
* event siblings share names and title words but are different stories;
* wire copies are trimmed, have a sentence dropped, words changed, a local lead added;
* on request (``teasers``), teasers: an RSS item, a partner's excerpt or an "in brief" column that
  holds only the first 25-40% of a copy of a story (whole sentences), published after it, often
  at another outlet, perhaps ending with "Read more". They carry the story's label: a threshold
  high enough to keep quoting pages apart misses them;
* on request (``quotes``), quoting pages: stories of their own quoting a long passage (a run of
  whole sentences from the middle) of an earlier story after their first paragraph, 35-50% of
  their words (20-30% for a third of them). They have their own label: a threshold low enough
  to catch teasers merges them;
* on request (``short_stories``), a share of stories is only 60-100 words long: few shingles, so a
  few edits move their similarity a lot;
* on request (``shapes``, :mod:`.shapes`), pages as real feeds send them: the article on one
  line, a list of headlines in the body, HTML of ``<div>``s alone, copies trimmed harder, sites
  whose first pages come first;
* on request (``prose="real"``, :mod:`.real_world`), stories in real English news prose rather
  than pseudo-words;
* on request (``spreading``), stories that spread: one wire text copied by 3 to 36 outlets, each
  once, within a few hours, for story-spread alerts to find at known times.

With ``messy_dates`` the corpus is a feed as a crawler receives it rather than as outlets
publish it: pages come in arrival order (a crawl delay of minutes, re-crawls days late), and the
date field mixes what real feeds send (ISO 8601 with and without offsets, RSS dates, epoch numbers,
bare days, dates hours ahead, missing, junk, 2099 and 1970). The pages, ids and labels are those of
the clean corpus of the same seed; only the date fields and the line order differ.

Text is made of real function words (the ``stopwords`` package's lists, the ones the product uses)
and pseudo-word content, so stop-word statistics look like prose while no two unrelated texts share
content by accident. Everything is drawn from ``random.Random(seed)`` (the messy dates' and the
asked hard cases' choices from generators of their own, seeded from it, so that a corpus without
them stays as it was): the same seed, size and options give byte-identical output on any machine
(no set iteration, no ``hash()`` of strings, and Zipf weights built with division only, never
``pow``, whose last bit may differ between C libraries).

Modules, in the order they build on each other: :mod:`.truth` (the corpus and what the generator
knows of each page), :mod:`.language` (stop words from :mod:`stream_lsh.core.stopwords`,
pseudo-words, token mixtures), :mod:`.outlets` (chrome, site prose, stories and drafts),
:mod:`.shapes` (the page shapes asked for), :mod:`.world` (the generator), :mod:`.real_prose` and
:mod:`.real_world` (real articles and the world written in them), :mod:`.hard_cases` (the hard
cases asked for), :mod:`.render`
(pages as HTML, text or news-please records), :mod:`.feed` (messy dates), :mod:`.spreading` (stories
that spread) and :mod:`.corpus` (the entry points re-exported here).
"""

from __future__ import annotations

from .corpus import generate_corpus, generate_corpus_with_truth, iter_pages, load_labels, write_corpus
from .feed import (
    AHEAD_SECONDS,
    CRAWL_DELAY_SECONDS,
    DATE_FORM_SHARES,
    LATE_DELAY_SECONDS,
    LATE_SHARE,
    LOCAL_OFFSET_MINUTES,
    PLACEHOLDER_DATES,
    UNREADABLE_DATES,
    WRONG_YEAR,
)
from .hard_cases import (
    DIGEST_DELAY_HOURS,
    DIGEST_ITEM_SENTENCES,
    DIGEST_ITEMS,
    MAX_HARD_CASE_SHARE,
    QUOTE_DELAY_HOURS,
    QUOTE_HIGH_SHARE,
    QUOTE_LOW_SHARE,
    QUOTE_LOW_SHARE_CHANCE,
    QUOTE_MAX_SHARE_OF_QUOTED,
    SHORT_STORY_WORDS,
    TEASER_SHARE_OF_STORY,
)
from .language import DEFAULT_LANGUAGES, STOPWORD_LIST_NAMES
from .shapes import SHAPE_NAMES, Shapes
from .spreading import MAX_SPREADING, SPREAD_HOURS, SPREAD_OUTLETS, SPREAD_START_HOURS
from .truth import PageTruth, SyntheticCorpus
from .world import COPY_DELAY_HOURS, EPOCH, EVENT_SPREAD_HOURS, NO_CONTENT_SHARE, STORY_WINDOW_HOURS

__all__ = [
    "AHEAD_SECONDS",
    "COPY_DELAY_HOURS",
    "CRAWL_DELAY_SECONDS",
    "DATE_FORM_SHARES",
    "DEFAULT_LANGUAGES",
    "DIGEST_DELAY_HOURS",
    "DIGEST_ITEMS",
    "DIGEST_ITEM_SENTENCES",
    "EPOCH",
    "EVENT_SPREAD_HOURS",
    "LATE_DELAY_SECONDS",
    "LATE_SHARE",
    "LOCAL_OFFSET_MINUTES",
    "MAX_HARD_CASE_SHARE",
    "MAX_SPREADING",
    "NO_CONTENT_SHARE",
    "PLACEHOLDER_DATES",
    "QUOTE_DELAY_HOURS",
    "QUOTE_HIGH_SHARE",
    "QUOTE_LOW_SHARE",
    "QUOTE_LOW_SHARE_CHANCE",
    "QUOTE_MAX_SHARE_OF_QUOTED",
    "SHAPE_NAMES",
    "SHORT_STORY_WORDS",
    "SPREAD_HOURS",
    "SPREAD_OUTLETS",
    "SPREAD_START_HOURS",
    "STOPWORD_LIST_NAMES",
    "STORY_WINDOW_HOURS",
    "TEASER_SHARE_OF_STORY",
    "UNREADABLE_DATES",
    "WRONG_YEAR",
    "PageTruth",
    "Shapes",
    "SyntheticCorpus",
    "generate_corpus",
    "generate_corpus_with_truth",
    "iter_pages",
    "load_labels",
    "write_corpus",
]
