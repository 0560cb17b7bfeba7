"""The public entry points: generate a corpus (with or without its truth), write it, read labels."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from .feed import _as_delivered
from .hard_cases import HardCases, _HardCasePlanner
from .language import DEFAULT_LANGUAGES, LANGUAGE_WEIGHTS
from .real_world import _RealProseWorld
from .render import _moment, _Renderer
from .shapes import COLD_PAGES, NO_SHAPES, Shapes
from .spreading import _SpreadPlanner, check_spreading
from .truth import PageTruth, SyntheticCorpus
from .world import _plan, _World

#: Where the generator's text comes from: pseudo-words in eight languages, or real English news.
PROSE = {"pseudo": _World, "real": _RealProseWorld}

# --- Public API ---------------------------------------------------------------------------------


def _check_arguments(
    pages: int, seed: int, languages: Sequence[str], hard: HardCases, spreading: int
) -> None:
    if pages < 0:
        raise ValueError(f"pages must be >= 0, got {pages}")
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    unknown = [code for code in languages if code not in LANGUAGE_WEIGHTS]
    if unknown or not languages or len(set(languages)) != len(languages):
        raise ValueError(
            f"languages must be distinct codes among {', '.join(DEFAULT_LANGUAGES)}; "
            f"got {', '.join(languages) or 'none'}"
        )
    hard.check()
    check_spreading(spreading)


def generate_corpus_with_truth(
    pages: int,
    seed: int = 0,
    *,
    languages: Sequence[str] | None = None,
    messy_dates: bool = False,
    teasers: float = 0.0,
    quotes: float = 0.0,
    short_stories: float = 0.0,
    spreading: int = 0,
    prose: str = "pseudo",
    shapes: Shapes = NO_SHAPES,
    digests: float = 0.0,
) -> tuple[SyntheticCorpus, dict[str, PageTruth]]:
    """Like :func:`generate_corpus`, plus what the generator knows about each page (by page id).

    The truth lets tests and error analyses ask *why* two pages were merged (same outlet's prose?
    event siblings?) without parsing the pages back, and, with ``messy_dates``, what each page's
    date really is, and, with ``spreading``, which pages are copies of a spreading story.
    """
    hard = HardCases(teasers=teasers, quotes=quotes, short_stories=short_stories, digests=digests)
    renderer, drafts = _drafts(pages, seed, languages, hard, spreading, prose, shapes)
    records: list[dict[str, Any]] = []
    published: list[int] = []
    labels: dict[str, str] = {}
    truth: dict[str, PageTruth] = {}
    early: list[tuple[str, int]] = []
    for number, draft in enumerate(drafts):
        page_id = f"p{number:06d}"  # in publication order, also when the file is in arrival order
        record, truth[page_id] = renderer.page(page_id, draft)
        if draft.excerpt_of is not None and truth[page_id].excerpt_of is None:
            early.append((page_id, draft.excerpt_of))  # a teaser before the copy it excerpts
        records.append(record)
        published.append(draft.when)
        labels[page_id] = draft.label
    for page_id, seq in early:
        truth[page_id] = replace(truth[page_id], excerpt_of=renderer.placed[seq][0])
    if messy_dates:
        records, deliveries = _as_delivered(records, published, seed)
        for page_id, delivery in zip(labels, deliveries, strict=True):
            received = _moment(delivery.received)
            truth[page_id] = replace(truth[page_id], received=received, date_form=delivery.form)
    if shapes.cold_sites:
        records = _sites_first(records, truth)
    return SyntheticCorpus(pages=records, labels=labels), truth


def iter_pages(
    pages: int, seed: int = 0, *, languages: Sequence[str] | None = None, prose: str = "pseudo"
) -> Iterator[dict[str, Any]]:
    """The pages of ``generate_corpus(pages, seed, languages=..., prose=...)``, one at a time as
    they are rendered, in the same order: for a benchmark that feeds more pages than it could hold
    (half a million rendered pages take ~14 GB). No hard cases, shapes or spreading stories."""
    renderer, drafts = _drafts(pages, seed, languages, HardCases(), 0, prose, NO_SHAPES)
    for number, draft in enumerate(drafts):
        yield renderer.page(f"p{number:06d}", draft)[0]


def _drafts(
    pages: int,
    seed: int,
    languages: Sequence[str] | None,
    hard: HardCases,
    spreading: int,
    prose: str,
    shapes: Shapes,
) -> tuple[_Renderer, Iterator[Any]]:
    """The renderer of a corpus and its pages' drafts, in publication order."""
    if languages is None:  # the prose's own: every language of the pseudo-words, English for real news
        languages = ("en",) if prose == "real" else DEFAULT_LANGUAGES
    _check_arguments(pages, seed, languages, hard, spreading)
    if prose not in PROSE:
        raise ValueError(f"prose must be one of {', '.join(PROSE)}, got {prose!r}")
    world = PROSE[prose](pages, seed, list(languages), shapes)
    spread = _SpreadPlanner(world, seed, spreading)
    spread.add_outlets()
    return _Renderer(world), iter(_plan(world, pages, _HardCasePlanner(world, seed, hard), spread))


def _sites_first(records: list[dict[str, Any]], truth: dict[str, PageTruth]) -> list[dict[str, Any]]:
    """The ``cold-sites`` order: every outlet's first COLD_PAGES pages first, outlet after outlet
    (in the order of their first page), then the rest as they were."""
    firsts: dict[str, list[dict[str, Any]]] = {}
    rest: list[dict[str, Any]] = []
    for record in records:
        outlet = truth[str(record["id"])].outlet
        taken = firsts.setdefault(outlet, [])
        (taken if len(taken) < COLD_PAGES else rest).append(record)
    return [record for taken in firsts.values() for record in taken] + rest


def generate_corpus(
    pages: int,
    seed: int = 0,
    *,
    languages: Sequence[str] | None = None,
    messy_dates: bool = False,
    teasers: float = 0.0,
    quotes: float = 0.0,
    short_stories: float = 0.0,
    spreading: int = 0,
    prose: str = "pseudo",
    shapes: Shapes = NO_SHAPES,
    digests: float = 0.0,
) -> SyntheticCorpus:
    """Exactly ``pages`` synthetic news pages, sorted by publication time, with cluster labels.

    All copies of one wire story share a label ("s00042"); a local story or a no-content page
    ("n00003") is alone in its cluster. Same seed, size and languages -> byte-identical output.

    With ``messy_dates`` the pages are a feed as received: in arrival order (publication plus a
    crawl delay of up to CRAWL_DELAY_SECONDS, or days for the LATE_SHARE of re-crawls), each date
    field written in one of the forms of :data:`DATE_FORM_SHARES`. Ids, labels and page bodies are
    those of the clean corpus of the same seed; the choices come from a generator of their own, so
    the result is as deterministic as the clean corpus.

    Hard cases on request, each a share from 0 to MAX_HARD_CASE_SHARE (0.5):

    * ``teasers``: share of the pages that are teasers (an RSS item, a partner's excerpt, an "in
      brief" column): the first 25-40% of a copy of an earlier story, in whole sentences, with its
      (re)title, at an outlet of its language, perhaps ending with a "Read more" link. They carry
      the story's label: they ARE duplicates of it.
    * ``quotes``: share of the pages that are quoting pages: stories of their own (own names,
      title and label: NOT duplicates) quoting a passage of an earlier story after their first
      paragraph, 35-50% of their words (20-30% for a third of them).
    * ``short_stories``: share of stories written SHORT_STORY_WORDS (60-100) words long rather
      than about 150 or 800.
    * ``digests``: share of the pages that are digests (a newsletter, a "morning briefing"): 4-9
      stories of one language published one after another, each as a copy's first one or two
      sentences, mostly under its headline. Each has a label of its own: it holds a teaser of every
      story it lists, and is NOT a duplicate of any.

    With all of them at 0 the corpus is byte-identical to one of a generator without them: their
    choices come from a generator of their own.

    ``prose``: "pseudo" (pseudo-words in the ``languages``, all eight by default, any number of
    pages) or "real" (real English news articles, :mod:`.real_world`: English only, about 600
    pages fit). ``shapes``: page shapes real feeds send (:mod:`.shapes`): one-line bodies, in-body
    headline lists, ``<div>``-only HTML, copies trimmed harder, sites whose first pages come first.

    ``spreading``: that many stories spread (:mod:`.spreading`): one wire text copied by many outlets
    of one language, each once, within SPREAD_HOURS, by turns enough for 30, 10 and 3 distinct
    sources (the default story-spread alert levels). Labelled "w00000", "w00001"... and marked in
    the truth. With 0 the corpus is byte-identical to one of a generator without them.
    """
    return generate_corpus_with_truth(
        pages,
        seed,
        languages=languages,
        messy_dates=messy_dates,
        teasers=teasers,
        quotes=quotes,
        short_stories=short_stories,
        spreading=spreading,
        prose=prose,
        shapes=shapes,
        digests=digests,
    )[0]


def write_corpus(corpus: SyntheticCorpus, pages_path: str | Path, labels_path: str | Path) -> None:
    """Pages as JSON lines (the product's input format) and labels as one JSON object."""
    with open(pages_path, "wb") as out:
        for page in corpus.pages:
            out.write(orjson.dumps(page) + b"\n")
    Path(labels_path).write_bytes(orjson.dumps(corpus.labels))


def load_labels(path: str | Path) -> dict[str, str]:
    """Labels as :func:`write_corpus` writes them, or by hand: one JSON object mapping page ids to
    cluster names. A name may be a string or an integer (``{"p1": 1}``), and is read as a string;
    anything else is refused."""
    data = orjson.loads(Path(path).read_bytes())
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: expected a JSON object mapping page ids to cluster names, got a {_json_kind(data)}"
        )
    wrong = [
        key for key, value in data.items() if isinstance(value, bool) or not isinstance(value, (str, int))
    ]
    if wrong:
        raise ValueError(f"{path}: the cluster name of page {wrong[0]!r} is not a string or an integer")
    return {key: str(value) for key, value in data.items()}


def _json_kind(value: object) -> str:
    return {list: "list", str: "string", int: "number", float: "number", bool: "boolean"}.get(
        type(value), "null"
    )
