"""The synthetic corpus: determinism, exact sizes, and the world properties evaluation relies on."""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from itertools import accumulate, combinations
from statistics import mean

import orjson
import pytest
import stopwords
from click.testing import CliRunner

from stream_lsh.cli import cli
from stream_lsh.core.clock import EventTime, event_time
from stream_lsh.core.dates import DateReading, read_date
from stream_lsh.synthetic import (
    AHEAD_SECONDS,
    COPY_DELAY_HOURS,
    CRAWL_DELAY_SECONDS,
    DATE_FORM_SHARES,
    DIGEST_DELAY_HOURS,
    DIGEST_ITEM_SENTENCES,
    DIGEST_ITEMS,
    EPOCH,
    EVENT_SPREAD_HOURS,
    LATE_DELAY_SECONDS,
    LATE_SHARE,
    LOCAL_OFFSET_MINUTES,
    NO_CONTENT_SHARE,
    PLACEHOLDER_DATES,
    QUOTE_DELAY_HOURS,
    QUOTE_HIGH_SHARE,
    QUOTE_LOW_SHARE,
    QUOTE_LOW_SHARE_CHANCE,
    QUOTE_MAX_SHARE_OF_QUOTED,
    SHORT_STORY_WORDS,
    SPREAD_HOURS,
    SPREAD_OUTLETS,
    SPREAD_START_HOURS,
    STOPWORD_LIST_NAMES,
    STORY_WINDOW_HOURS,
    TEASER_SHARE_OF_STORY,
    UNREADABLE_DATES,
    WRONG_YEAR,
    PageTruth,
    SyntheticCorpus,
    generate_corpus,
    generate_corpus_with_truth,
    iter_pages,
    load_labels,
    write_corpus,
)

PAGES = 3000
SEED = 11
_WORD = re.compile(r"\w+(?:'\w+)*")  # the product's tokenizer
_SENTENCE = re.compile(r"[^.]+\.")
_TAG = re.compile(r"<[^>]+>")
_STOPS = {
    code: frozenset(word.strip().lower() for word in stopwords.get_stopwords(name))
    for code, name in STOPWORD_LIST_NAMES.items()
}

Corpus = tuple[SyntheticCorpus, dict[str, PageTruth]]


@pytest.fixture(scope="module")
def world() -> Corpus:
    return generate_corpus_with_truth(PAGES, SEED)


def _body(page: dict) -> str:
    return page.get("html") or page.get("text") or page.get("maintext") or ""


def _visible(page: dict) -> str:
    """Body text with tags stripped (inline links split article words into several nodes)."""
    return _TAG.sub("", page["html"]) if "html" in page else _body(page)


def _sentences(paragraphs: tuple[str, ...]) -> set[str]:
    return {sentence.strip() for paragraph in paragraphs for sentence in _SENTENCE.findall(paragraph)}


def _overlap(first: set[str], second: set[str]) -> float:
    return len(first & second) / min(len(first), len(second))


def _moment(page: dict) -> datetime:
    if "published_at" in page:
        return datetime.strptime(page["published_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return datetime.strptime(page["date_publish"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)


def _clusters(corpus: SyntheticCorpus) -> dict[str, list[str]]:
    clusters: dict[str, list[str]] = defaultdict(list)
    for page in corpus.pages:
        clusters[corpus.labels[page["id"]]].append(page["id"])
    return clusters


# --- Determinism and sizes ----------------------------------------------------------------------


def _digest(corpus: SyntheticCorpus) -> str:
    pages = b"".join(orjson.dumps(page) + b"\n" for page in corpus.pages)
    return hashlib.sha256(pages + orjson.dumps(corpus.labels)).hexdigest()


def test_same_seed_gives_identical_output_and_other_seeds_differ(tmp_path) -> None:
    first, second = generate_corpus(400, seed=5), generate_corpus(400, seed=5)
    assert first == second
    write_corpus(first, tmp_path / "a.jsonl", tmp_path / "a.json")
    write_corpus(second, tmp_path / "b.jsonl", tmp_path / "b.json")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    other = generate_corpus(400, seed=6)
    assert other.pages != first.pages
    assert [p["title"] for p in other.pages[:50]] != [p["title"] for p in first.pages[:50]]


_ALL_HARD_CASES = {"teasers": 0.1, "quotes": 0.1, "short_stories": 0.3}


def test_same_seed_and_hard_cases_give_identical_output(tmp_path) -> None:
    first = generate_corpus(400, seed=5, **_ALL_HARD_CASES)
    second = generate_corpus(400, seed=5, **_ALL_HARD_CASES)
    assert first == second
    write_corpus(first, tmp_path / "a.jsonl", tmp_path / "a.json")
    write_corpus(second, tmp_path / "b.jsonl", tmp_path / "b.json")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert _digest(generate_corpus(400, seed=6, **_ALL_HARD_CASES)) != _digest(first)
    assert _digest(first) != _PINNED_DIGESTS[400, 5, False, None]  # the options do change the corpus
    messy = generate_corpus(400, seed=5, messy_dates=True, **_ALL_HARD_CASES)
    assert messy.labels == first.labels  # messy dates reorder and redate the same pages


#: sha256 of pages and labels (see _digest) as the generator wrote them before teasers, quoting pages
#: and short stories existed: (pages, seed, messy_dates, languages) -> digest. The README's numbers
#: and the engine's tests rely on these corpora, so new features must leave them byte-identical.
_PINNED_DIGESTS = {
    (400, 5, False, None): "8156ed16b3ed19c4f90df1ed633ce930431d82d132f9009878290e0591c42e1c",
    (400, 5, True, None): "be90a932fc99cfd5b93d1bca9e3d0739fb0dbbc6e707584c7a0de0760f8927f0",
    (700, 2, True, ("de", "fr")): "250905dd51d99bddf01a340e1d2914a13d35491f757046b0f4c96cc0f1b770ee",
    (1, 0, False, None): "427732f84d481d0b1a20d403dc9c7a0ff50cb788a5c526bb24411a690f029b1b",
}


@pytest.mark.parametrize("prose", ["pseudo", "real"])
def test_pages_one_at_a_time_are_the_corpus_s_pages(prose: str) -> None:
    """A benchmark feeds half a million pages without holding them: the same pages, in order."""
    streamed = iter_pages(300, 5, prose=prose)
    assert not isinstance(streamed, list)
    assert list(streamed) == generate_corpus(300, 5, prose=prose).pages
    two = ("de", "fr")
    assert list(iter_pages(120, 2, languages=two)) == generate_corpus(120, 2, languages=two).pages


@pytest.mark.parametrize(("pages", "seed", "messy_dates", "languages"), list(_PINNED_DIGESTS))
def test_output_is_byte_identical_to_the_pinned_corpora(
    pages: int, seed: int, messy_dates: bool, languages: tuple[str, ...] | None
) -> None:
    options = {} if languages is None else {"languages": languages}
    corpus = generate_corpus(pages, seed, messy_dates=messy_dates, **options)
    assert _digest(corpus) == _PINNED_DIGESTS[pages, seed, messy_dates, languages]
    off = generate_corpus(
        pages,
        seed,
        messy_dates=messy_dates,
        teasers=0.0,
        quotes=0.0,
        short_stories=0.0,
        spreading=0,
        **options,
    )
    assert _digest(off) == _PINNED_DIGESTS[pages, seed, messy_dates, languages]


@pytest.mark.parametrize("options", [{"messy_dates": False}, {"messy_dates": True, **_ALL_HARD_CASES}])
def test_output_does_not_depend_on_string_hashing(options: dict) -> None:
    """Other processes with other PYTHONHASHSEEDs (set order, str hashes) produce the same bytes."""
    script = (
        "import hashlib, orjson\n"
        "from stream_lsh.synthetic import generate_corpus\n"
        f"corpus = generate_corpus(300, seed=9, **{options!r})\n"
        "pages = b''.join(orjson.dumps(page) + b'\\n' for page in corpus.pages)\n"
        "print(hashlib.sha256(pages + orjson.dumps(corpus.labels)).hexdigest())\n"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
        )
        for hash_seed in (1, 2)
    ]
    digests = {run.communicate(timeout=60)[0].strip() for run in runs}
    assert digests == {_digest(generate_corpus(300, seed=9, **options))}


@pytest.mark.parametrize(("pages", "seed"), [(0, 3), (1, 3), (2, 3), (7, 3), (99, 3), (3, 22)])
def test_exact_page_count_with_every_hard_case_at_its_most(pages: int, seed: int) -> None:
    """Shares adding up to more than the corpus shrink, keeping one story page to excerpt and quote
    (99 pages: one story, 50 teasers, 47 quoting pages, one gallery). A slot no story can fill
    becomes a story of its own (seed 22: the only story has no teaser-sized start)."""
    corpus, truth = generate_corpus_with_truth(pages, seed, teasers=0.5, quotes=0.5, short_stories=0.5)
    assert [page["id"] for page in corpus.pages] == [f"p{number:06d}" for number in range(pages)]
    kinds = Counter(page_truth.kind for page_truth in truth.values())
    assert pages == 0 or kinds["wire"] + kinds["local"] >= 1
    if pages == 99:
        assert kinds["teaser"] == 50 and kinds["quote"] == 47 and kinds["no-content"] == 1
    if seed == 22:
        assert kinds["teaser"] == kinds["quote"] == 0 and len(set(corpus.labels.values())) == pages


@pytest.mark.parametrize("pages", [0, 1, 2, 7, 99, 401])
def test_exact_page_count_and_ids(pages: int) -> None:
    corpus = generate_corpus(pages, seed=3)
    ids = [page["id"] for page in corpus.pages]
    assert ids == [f"p{number:06d}" for number in range(pages)]
    assert list(corpus.labels) == ids


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="pages"):
        generate_corpus(-1)
    with pytest.raises(ValueError, match="languages"):
        generate_corpus(10, languages=("en", "xx"))
    with pytest.raises(ValueError, match="languages"):
        generate_corpus(10, languages=())
    for name in ("teasers", "quotes", "short_stories", "digests"):
        for share in (0.6, -0.1, math.nan):
            with pytest.raises(ValueError, match=rf"{name} must be a share in \[0, 0.5\], got {share}"):
                generate_corpus(10, **{name: share})


def test_language_subset() -> None:
    corpus, truth = generate_corpus_with_truth(300, seed=2, languages=("de", "fr"))
    assert {page_truth.lang for page_truth in truth.values()} == {"de", "fr"}
    assert {page.get("lang") for page in corpus.pages} <= {"de", "fr", None}


# --- Labels and time ----------------------------------------------------------------------------


def test_labels_cover_pages_and_singletons_are_alone(world: Corpus) -> None:
    corpus, truth = world
    assert corpus.labels.keys() == {page["id"] for page in corpus.pages}
    assert all(re.fullmatch(r"[sn]\d{5}", label) for label in corpus.labels.values())
    for label, ids in _clusters(corpus).items():
        kinds = {truth[page_id].kind for page_id in ids}
        if kinds != {"wire"}:
            assert len(ids) == 1, (label, kinds)


def test_pages_sorted_by_time_within_the_window(world: Corpus) -> None:
    corpus, _ = world
    moments = [_moment(page) for page in corpus.pages]
    assert moments == sorted(moments)
    latest = EPOCH + timedelta(hours=STORY_WINDOW_HOURS + EVENT_SPREAD_HOURS + COPY_DELAY_HOURS)
    assert EPOCH <= moments[0] and moments[-1] <= latest
    assert moments[-1] - moments[0] > timedelta(hours=STORY_WINDOW_HOURS * 0.9)


# --- Stories ------------------------------------------------------------------------------------


def test_article_text_is_in_the_page(world: Corpus) -> None:
    corpus, truth = world
    for page in corpus.pages:
        visible = _visible(page)
        assert all(paragraph in visible for paragraph in truth[page["id"]].article), page["id"]


def test_wire_copies_share_most_sentences_at_different_outlets(world: Corpus) -> None:
    corpus, truth = world
    overlaps, long_overlaps, kept = [], [], []
    for ids in _clusters(corpus).values():
        if len(ids) < 2:
            continue
        assert len({truth[i].outlet for i in ids}) == len(ids)
        assert len({truth[i].lang for i in ids}) == 1
        articles = [_sentences(truth[i].article) for i in ids]
        union = set().union(*articles)
        if len(union) >= 30:  # each copy keeps 70-100% of the wire text, so most of all sentences seen
            kept += [len(article) / len(union) for article in articles]
        for first, second in combinations(articles, 2):
            overlaps.append(_overlap(first, second))
            if min(len(first), len(second)) >= 30:
                long_overlaps.append(_overlap(first, second))
    assert len(long_overlaps) > 100
    assert min(long_overlaps) > 0.5
    assert 0.6 < mean(overlaps) < 0.95  # much shared, yet edited (short copies share less)
    assert 0.7 < mean(kept) < 0.9 and min(kept) > 0.4  # trimmed, never cut to a stub


def test_wire_and_local_story_shares(world: Corpus) -> None:
    corpus, truth = world
    kinds = Counter(truth[ids[0]].kind for ids in _clusters(corpus).values())
    stories = kinds["wire"] + kinds["local"]
    assert 0.45 < kinds["wire"] / stories < 0.65
    sizes = Counter(len(ids) for ids in _clusters(corpus).values() if truth[ids[0]].kind == "wire")
    assert max(sizes) <= 6 and sizes[1] <= 3  # only the last stories drawn may be cut to one copy


def test_short_and_long_articles(world: Corpus) -> None:
    corpus, truth = world
    lengths = [
        sum(len(_WORD.findall(p)) for p in truth[ids[0]].article)
        for ids in _clusters(corpus).values()
        if truth[ids[0]].kind == "local"
    ]
    short = sum(length < 250 for length in lengths)
    long = sum(length > 550 for length in lengths)
    assert short + long == len(lengths)
    assert 0.35 < short / len(lengths) < 0.65


def test_event_siblings_share_names_and_title_words_but_not_sentences(world: Corpus) -> None:
    corpus, truth = world
    titles = {page["id"]: page["title"] for page in corpus.pages}
    siblings: dict[str, dict[str, str]] = defaultdict(dict)
    for page_id, page_truth in truth.items():
        if page_truth.event:
            siblings[page_truth.event].setdefault(page_truth.label, page_id)
    pairs = [pair for stories in siblings.values() for pair in combinations(stories.values(), 2)]
    assert len(pairs) > 50
    shared_title_words = []
    for first, second in pairs:
        a, b = truth[first], truth[second]
        assert a.label != b.label and a.lang == b.lang
        assert _overlap(_sentences(a.article), _sentences(b.article)) < 0.05
        text_a, text_b = " ".join(a.article), " ".join(b.article)
        assert any(name in text_a and name in text_b for name in set(a.entities) & set(b.entities))
        words = [{w.lower() for w in _WORD.findall(titles[i])} - _STOPS[a.lang] for i in (first, second)]
        shared_title_words.append(len(words[0] & words[1]))
    assert min(shared_title_words) >= 1 and mean(shared_title_words) >= 2.5


def test_stop_word_density_per_language(world: Corpus) -> None:
    _, truth = world
    counts: dict[str, Counter] = defaultdict(Counter)
    for page_truth in truth.values():
        for paragraph in page_truth.article:
            tokens = [token.lower() for token in _WORD.findall(paragraph)]
            counts[page_truth.lang]["stop"] += sum(token in _STOPS[page_truth.lang] for token in tokens)
            counts[page_truth.lang]["all"] += len(tokens)
    assert set(counts) == set(STOPWORD_LIST_NAMES)
    for lang, count in counts.items():
        assert 0.35 <= count["stop"] / count["all"] <= 0.5, lang


def test_content_words_are_no_stop_words_anywhere(world: Corpus) -> None:
    """A pseudo-word equal to another language's stop word would fake shingles and language votes."""
    _, truth = world
    union = frozenset().union(*_STOPS.values())
    for page_truth in truth.values():
        for paragraph in page_truth.article + page_truth.site_prose:
            for token in _WORD.findall(paragraph.lower()):
                assert token in _STOPS[page_truth.lang] or token not in union, (page_truth.lang, token)


# --- Outlets and site prose ---------------------------------------------------------------------


def test_site_prose_on_every_page_of_its_outlet(world: Corpus) -> None:
    corpus, truth = world
    prose_of: dict[str, tuple[tuple[str, ...], str]] = {}
    for page in corpus.pages:
        page_truth = truth[page["id"]]
        outlet_prose = (page_truth.site_prose, page_truth.lang)
        assert prose_of.setdefault(page_truth.outlet, outlet_prose) == outlet_prose
        assert 2 <= len(page_truth.site_prose) <= 4
        body = _body(page)
        assert all(paragraph in body for paragraph in page_truth.site_prose), page["id"]
    density = Counter()
    for paragraphs, lang in prose_of.values():
        tokens = [token.lower() for token in _WORD.findall(" ".join(paragraphs))]
        density["stop"] += sum(token in _STOPS[lang] for token in tokens)
        density["all"] += len(tokens)
    assert 0.35 <= density["stop"] / density["all"] <= 0.5  # as dense as articles: real noise


def test_networks_share_a_prose_paragraph(world: Corpus) -> None:
    _, truth = world
    outlets_of: dict[str, set[str]] = defaultdict(set)
    all_outlets = set()
    for page_truth in truth.values():
        all_outlets.add(page_truth.outlet)
        for paragraph in page_truth.site_prose:
            outlets_of[paragraph].add(page_truth.outlet)
    networks = [outlets for outlets in outlets_of.values() if len(outlets) >= 2]
    assert 3 <= len(networks) <= 4 and all(len(outlets) <= 4 for outlets in networks)
    networked = set().union(*networks)
    assert 0.2 <= len(networked) / len(all_outlets) <= 0.5


def test_html_chrome_variants(world: Corpus) -> None:
    corpus, _ = world
    html_pages = [page["html"] for page in corpus.pages if "html" in page]
    for marker in (
        "<nav",
        'class="menu"',
        "<aside",
        'class="sidebar"',
        "<footer>",
        'class="site-footer"',
        'class="newsletter"',
        "<article>",
        'class="story-body"',
        "<script>",
        "<style>",
    ):
        assert any(marker in page for page in html_pages), marker
    assert all(page.startswith("<!DOCTYPE html>") and page.count("<script") >= 2 for page in html_pages)


def test_sidebar_lists_other_headlines_of_the_outlet(world: Corpus) -> None:
    corpus, truth = world
    for page in (p for p in corpus.pages if "html" in p):
        box = re.search(r"<h2>[^<]*</h2><ol>(.*?)</ol>", page["html"])
        assert box is not None
        items = re.findall(r"<li><a href=\"([^\"]+)\">([^<]*)</a></li>", box.group(1))
        assert 5 <= len(items) <= 8
        assert all(url.startswith(f"https://{page['source']}/") for url, _ in items)
        assert page["title"] not in {title for _, title in items}
    earlier: dict[str, set[str]] = defaultdict(set)  # outlet -> titles published so far
    from_corpus = 0
    for page in corpus.pages:
        outlet = truth[page["id"]].outlet
        if "text" in page and truth[page["id"]].lang == "en":
            lines = page["text"].split("\n")
            related = [line[len("Related: ") :] for line in lines if line.startswith("Related: ")]
            assert 1 <= len(related) <= 3 and page["title"] not in related
            from_corpus += sum(headline in earlier[outlet] for headline in related)
        earlier[outlet].add(page["title"])
    assert from_corpus > 100


def test_ads_have_few_stop_words(world: Corpus) -> None:
    corpus, _ = world
    ads = [
        ad
        for page in corpus.pages
        if "html" in page and page.get("lang") == "en"
        for ad in re.findall(r'rel="sponsored">([^<]*)<', page["html"])
    ]
    tokens = [token.lower() for ad in ads for token in _WORD.findall(ad)]
    assert ads and sum(token in _STOPS["en"] for token in tokens) / len(tokens) < 0.15


# --- Page formats -------------------------------------------------------------------------------


def test_every_page_has_an_id_and_exactly_one_body(world: Corpus) -> None:
    corpus, _ = world
    formats = Counter()
    for page in corpus.pages:
        bodies = [name for name in ("html", "text", "maintext") if name in page]
        assert isinstance(page["id"], str) and len(bodies) == 1 and page[bodies[0]]
        formats[bodies[0]] += 1
        assert page["url"].startswith("https://") and page["title"]
    assert 0.62 < formats["html"] / PAGES < 0.78 and 0.2 < formats["text"] / PAGES < 0.35
    missing_lang = sum("lang" not in page and "language" not in page for page in corpus.pages)
    assert 0.05 < missing_lang / PAGES < 0.15


def test_news_please_pages(world: Corpus) -> None:
    corpus, _ = world
    news_please = [page for page in corpus.pages if "maintext" in page]
    assert 0.01 < len(news_please) / PAGES < 0.06
    for page in news_please:
        assert not {"published_at", "source", "text", "html", "lang"} & page.keys()
        assert re.fullmatch(r"2026-03-0\d \d\d:\d\d:\d\d", page["date_publish"])
        assert page["url"].startswith(f"https://{page['source_domain']}/")
    assert any("language" in page for page in news_please)
    plain = [page for page in corpus.pages if "maintext" not in page]
    assert all(re.fullmatch(r"2026-03-0\dT\d\d:\d\d:\d\dZ", page["published_at"]) for page in plain)


def test_no_content_pages(world: Corpus) -> None:
    corpus, truth = world
    blank = [page for page in corpus.pages if truth[page["id"]].kind == "no-content"]
    assert len(blank) == round(PAGES * NO_CONTENT_SHARE) == 30
    assert len({corpus.labels[page["id"]] for page in blank}) == len(blank)
    for page in blank:
        assert not truth[page["id"]].article
        if "html" in page:
            assert "<article" not in page["html"] and "story-body" not in page["html"]
            captions = re.findall(r"<figcaption>([^<]*)</figcaption>", page["html"])
            assert captions and all(1 <= len(caption.split()) <= 3 for caption in captions)


# --- Files --------------------------------------------------------------------------------------


def test_write_and_load(tmp_path) -> None:
    corpus = generate_corpus(120, seed=4)
    write_corpus(corpus, tmp_path / "pages.jsonl", tmp_path / "labels.json")
    raw = (tmp_path / "pages.jsonl").read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 120
    assert [orjson.loads(line) for line in raw.splitlines()] == corpus.pages
    assert load_labels(tmp_path / "labels.json") == corpus.labels
    (tmp_path / "bad.json").write_bytes(b'["s00001"]')
    with pytest.raises(ValueError, match="expected a JSON object"):
        load_labels(tmp_path / "bad.json")


# --- Messy dates --------------------------------------------------------------------------------

MESSY_PAGES = 2000
#: Forms that write the publication instant itself, only spelt differently.
_SAME_INSTANT = ("iso-utc", "iso-offset", "iso-no-offset", "rfc-2822", "epoch-seconds", "epoch-milliseconds")
_WINDOW, _MAX_FUTURE = 72 * 3600.0, 24 * 3600.0  # the engine's defaults


@pytest.fixture(scope="module")
def messy() -> Corpus:
    return generate_corpus_with_truth(MESSY_PAGES, SEED, messy_dates=True)


def _date_field(page: dict) -> str:
    return "date_publish" if "maintext" in page else "published_at"


def _near(count: int, share: float, total: int) -> bool:
    """Within four standard deviations of a binomial draw with this share."""
    return abs(count / total - share) <= 4 * math.sqrt(share * (1 - share) / total)


def test_messy_dates_are_deterministic_per_seed(tmp_path) -> None:
    first = generate_corpus(400, seed=5, messy_dates=True)
    second = generate_corpus(400, seed=5, messy_dates=True)
    assert first == second
    write_corpus(first, tmp_path / "a.jsonl", tmp_path / "a.json")
    write_corpus(second, tmp_path / "b.jsonl", tmp_path / "b.json")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    other = generate_corpus(400, seed=6, messy_dates=True)
    assert [page.get("published_at") for page in other.pages[:50]] != [
        page.get("published_at") for page in first.pages[:50]
    ]


def test_messy_corpus_is_the_clean_one_reordered_with_other_dates(messy: Corpus) -> None:
    """Same ids, labels and bodies as the clean corpus of the seed: only the date field and the
    line order differ (the messy choices must not disturb the clean corpus's draws)."""
    corpus, truth = messy
    clean = generate_corpus(MESSY_PAGES, SEED)
    assert corpus.labels == clean.labels
    clean_pages = {page["id"]: page for page in clean.pages}
    assert sorted(page["id"] for page in corpus.pages) == list(clean_pages)
    for page in corpus.pages:
        original = clean_pages[page["id"]]
        assert _moment(original) == truth[page["id"]].published
        field = _date_field(original)
        assert {key: value for key, value in page.items() if key != field} == {
            key: value for key, value in original.items() if key != field
        }
        assert list(page) == [key for key in original if key in page]  # the date keeps its place
        if "<time datetime=" in page.get("html", ""):  # the page itself still shows the true time
            assert f'<time datetime="{truth[page["id"]].published:%Y-%m-%dT%H:%M:%SZ}">' in page["html"]


def test_messy_file_is_in_arrival_order_with_some_pages_days_late(messy: Corpus) -> None:
    corpus, truth = messy
    arrivals = [(truth[page["id"]].received, page["id"]) for page in corpus.pages]
    assert arrivals == sorted(arrivals)
    delays = [(page_truth.received - page_truth.published).total_seconds() for page_truth in truth.values()]
    late = [delay for delay in delays if delay >= LATE_DELAY_SECONDS[0]]
    assert all(
        CRAWL_DELAY_SECONDS[0] <= delay <= CRAWL_DELAY_SECONDS[1]
        or LATE_DELAY_SECONDS[0] <= delay <= LATE_DELAY_SECONDS[1]
        for delay in delays
    )
    assert _near(len(late), LATE_SHARE, MESSY_PAGES)
    published = [truth[page["id"]].published for page in corpus.pages]
    newest = list(accumulate(published, max))
    behind = sum(before - current > timedelta(days=1) for before, current in zip(newest, published[1:]))
    # a re-crawl comes after pages published a day or more after it (except re-crawls of the last
    # day's pages: they come at the end of the file, among each other)
    assert len(late) / 3 < behind <= len(late)
    assert sum(before > current for before, current in zip(published, published[1:])) > MESSY_PAGES / 5


def test_date_forms_have_their_shares(messy: Corpus) -> None:
    _, truth = messy
    assert sum(DATE_FORM_SHARES.values()) == pytest.approx(1.0)
    counts = Counter(page_truth.date_form for page_truth in truth.values())
    assert counts.keys() == DATE_FORM_SHARES.keys()
    for form, share in DATE_FORM_SHARES.items():
        assert _near(counts[form], share, MESSY_PAGES), (form, counts[form] / MESSY_PAGES, share)


def test_every_date_form_reads_as_designed(messy: Corpus) -> None:
    """Read by the product's own date reader, and judged against the page's true arrival time."""
    corpus, truth = messy
    for page in corpus.pages:
        page_truth = truth[page["id"]]
        form, value = page_truth.date_form, page.get(_date_field(page))
        reading = read_date(value)
        published = page_truth.published.timestamp()
        clock_ms = int(page_truth.received.timestamp() * 1000)
        when = event_time(reading, clock_ms, window=_WINDOW, max_future=_MAX_FUTURE)
        if form in _SAME_INSTANT:
            assert reading == DateReading(published), (form, value)
            assert when == EventTime(published)  # even a re-crawl's: it is at most three days late
        elif form == "date-only":
            midnight = page_truth.published.replace(hour=0, minute=0, second=0)
            assert reading == DateReading(midnight.timestamp()), value
        elif form == "hours-ahead":
            assert AHEAD_SECONDS[0] <= reading.seconds - published <= AHEAD_SECONDS[1], value
            assert when == EventTime(reading.seconds)  # within the clock's tolerance: believed
        elif form == "missing":
            assert _date_field(page) not in page and reading == DateReading(None)
            assert when == EventTime(clock_ms / 1000)
        elif form == "unreadable":
            assert isinstance(value, str) and value.strip() and when.date_ignored == "unreadable", value
        else:
            assert form == "wrong-year"
            assert when.date_ignored in ("future", "before_1990"), value


def test_messy_dates_use_every_variant(messy: Corpus) -> None:
    corpus, truth = messy
    values: dict[str, list] = defaultdict(list)
    for page in corpus.pages:
        values[truth[page["id"]].date_form].append(page.get(_date_field(page)))
    offsets = {
        f"{'+' if minutes > 0 else '-'}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"
        for minutes in LOCAL_OFFSET_MINUTES
    }
    assert {value[-6:].replace(":", "") for value in values["iso-offset"]} == offsets
    assert {value.rsplit(" ", 1)[1] for value in values["rfc-2822"]} == offsets | {"GMT"}
    assert all(value.endswith("Z") for value in values["iso-utc"] + values["hours-ahead"])
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", value) for value in values["iso-no-offset"])
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", value) for value in values["date-only"])
    for form in ("epoch-seconds", "epoch-milliseconds"):
        assert all(type(value) is int for value in values[form])
    assert set(values["unreadable"]) == set(UNREADABLE_DATES)
    wrong = {value if value in PLACEHOLDER_DATES else value[:4] for value in values["wrong-year"]}
    assert wrong == {str(WRONG_YEAR), *PLACEHOLDER_DATES}
    news_please = [page for page in corpus.pages if "maintext" in page]
    assert not any("published_at" in page for page in news_please)
    assert len({truth[page["id"]].date_form for page in news_please}) >= 5


def test_cli_messy_feed_is_deduplicated_without_rejects(messy: Corpus, tmp_path) -> None:
    corpus, truth = messy
    runner = CliRunner()
    pages, labels = tmp_path / "pages.jsonl", tmp_path / "labels.json"
    result = runner.invoke(
        cli,
        [
            "generate",
            "--pages",
            str(MESSY_PAGES),
            "--seed",
            str(SEED),
            "--messy-dates",
            "-o",
            str(pages),
            "--labels",
            str(labels),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "arrival order with messy dates" in result.stderr
    write_corpus(corpus, tmp_path / "expected.jsonl", tmp_path / "expected.json")
    assert pages.read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
    assert labels.read_bytes() == (tmp_path / "expected.json").read_bytes()

    decisions_path, rejects = tmp_path / "decisions.jsonl", tmp_path / "rejects.jsonl"
    result = runner.invoke(cli, ["dedup", str(pages), "-o", str(decisions_path), "--rejects", str(rejects)])
    assert result.exit_code == 0, result.output
    assert not rejects.exists() and "rejected 0" in result.stderr
    decisions = [orjson.loads(line) for line in decisions_path.read_bytes().splitlines()]
    assert [decision["id"] for decision in decisions] == [page["id"] for page in corpus.pages]
    assert {decision["status"] for decision in decisions} == {"unique", "duplicate", "no_content"}
    ignored = Counter(decision.get("date_ignored") for decision in decisions)
    forms = Counter(page_truth.date_form for page_truth in truth.values())
    placeholders = sum(page.get(_date_field(page)) in PLACEHOLDER_DATES for page in corpus.pages)
    assert ignored["unreadable"] == forms["unreadable"]
    assert ignored["before_1990"] == placeholders > 0
    assert ignored["future"] > 0


# --- Hard cases: short stories, teasers, quoting pages ------------------------------------------

HARD_PAGES = 2000
HARD_OPTIONS = {"teasers": 0.06, "quotes": 0.06, "short_stories": 0.2}


@pytest.fixture(scope="module")
def hard() -> Corpus:
    return generate_corpus_with_truth(HARD_PAGES, SEED, **HARD_OPTIONS)


def _words(paragraphs: tuple[str, ...]) -> int:
    return sum(len(_WORD.findall(paragraph)) for paragraph in paragraphs)


def _sentence_list(paragraphs: tuple[str, ...]) -> list[str]:
    return [sentence.strip() for paragraph in paragraphs for sentence in _SENTENCE.findall(paragraph)]


def test_hard_cases_keep_the_corpus_invariants(hard: Corpus) -> None:
    corpus, truth = hard
    assert [page["id"] for page in corpus.pages] == [f"p{number:06d}" for number in range(HARD_PAGES)]
    assert list(corpus.labels) == list(truth) == [page["id"] for page in corpus.pages]
    assert all(re.fullmatch(r"[sn]\d{5}", label) for label in corpus.labels.values())
    moments = [_moment(page) for page in corpus.pages]
    assert moments == sorted(moments) and [truth[page["id"]].published for page in corpus.pages] == moments
    for page in corpus.pages:
        page_truth = truth[page["id"]]
        visible, body = _visible(page), _body(page)
        assert all(paragraph in visible for paragraph in page_truth.article), page["id"]
        assert all(paragraph in body for paragraph in page_truth.site_prose), page["id"]
        assert (page_truth.excerpt_of is None) == (page_truth.kind != "teaser")
        assert (page_truth.quoted is None) == (page_truth.kind != "quote")


def test_hard_case_shares(hard: Corpus) -> None:
    """Teasers and quoting pages are shares of the pages, exactly (rounded) at this size: no slot
    went unfilled."""
    _, truth = hard
    kinds = Counter(page_truth.kind for page_truth in truth.values())
    assert kinds["teaser"] == round(HARD_PAGES * HARD_OPTIONS["teasers"]) == 120
    assert kinds["quote"] == round(HARD_PAGES * HARD_OPTIONS["quotes"]) == 120
    assert kinds["no-content"] == round(HARD_PAGES * NO_CONTENT_SHARE)


def test_teasers_are_the_start_of_an_earlier_copy_of_their_story(hard: Corpus) -> None:
    """Each teaser's article is the first whole sentences of the copy it excerpts, [0.25, 0.40] of
    that copy's words exactly (the generator only picks a sentence boundary inside that band, so
    no rounding allowance), with the story's label, 1 s to COPY_DELAY_HOURS after the copy."""
    corpus, truth = hard
    pages = {page["id"]: page for page in corpus.pages}
    teasers = [page_id for page_id, page_truth in truth.items() if page_truth.kind == "teaser"]
    copy_kinds, same_outlet, links = Counter(), 0, 0
    for page_id in teasers:
        teaser, copy = truth[page_id], truth[truth[page_id].excerpt_of]
        assert copy.kind in ("wire", "local") and corpus.labels[page_id] == teaser.label == copy.label
        assert copy.published < teaser.published <= copy.published + timedelta(hours=COPY_DELAY_HOURS)
        assert (teaser.lang, teaser.event, teaser.entities) == (copy.lang, copy.event, copy.entities)
        head, whole = _sentence_list(teaser.article), _sentence_list(copy.article)
        assert 1 <= len(head) < len(whole) and head == whole[: len(head)]
        last = len(teaser.article) - 1  # whole paragraphs, then the start of one
        assert teaser.article[:last] == copy.article[:last] and copy.article[last].startswith(
            teaser.article[last]
        )
        share = _words(teaser.article) / _words(copy.article)
        assert TEASER_SHARE_OF_STORY[0] <= share <= TEASER_SHARE_OF_STORY[1] == 0.40, (page_id, share)
        copy_kinds[copy.kind] += 1
        same_outlet += teaser.outlet == copy.outlet
        link = re.search(r'<p class="read-more"><a href="([^"]+)">([^<]+)</a></p>', _body(pages[page_id]))
        if link:
            assert link.group(1) == pages[teaser.excerpt_of]["url"] and len(link.group(2).split()) < 5
            links += 1
    assert TEASER_SHARE_OF_STORY[0] == 0.25
    assert copy_kinds["wire"] > 30 and copy_kinds["local"] > 10  # teasers of both kinds of story
    assert 0.1 < same_outlet / len(teasers) < 0.45  # mostly at another outlet, now and then the same
    html = sum("html" in pages[page_id] for page_id in teasers)
    assert 0.5 * html < links < 0.9 * html  # most HTML teasers link to the page they excerpt


def test_digests_list_the_first_sentences_of_earlier_stories_under_a_label_of_their_own() -> None:
    """A digest is 4-9 stories of one language, each a copy's first sentence or two (mostly under
    its headline), published after every copy it lists; its label is its own. With no digests
    asked for, the corpus is that of a generator without them."""
    corpus, truth = generate_corpus_with_truth(1000, SEED, teasers=0.06, quotes=0.06, digests=0.03)
    digests = [page_id for page_id, page_truth in truth.items() if page_truth.kind == "digest"]
    assert len(digests) == 30
    by_sentence = {}
    for page_id, page_truth in truth.items():
        if page_truth.kind in ("wire", "local"):
            for sentence in _sentence_list(page_truth.article)[: DIGEST_ITEM_SENTENCES[1]]:
                by_sentence.setdefault(sentence, []).append(page_id)
    items_per_digest = []
    for page_id in digests:
        digest = truth[page_id]
        assert sum(label == digest.label for label in corpus.labels.values()) == 1
        listed = {
            truth[copy].label: copy
            for sentence in _sentence_list(digest.article)
            for copy in by_sentence.get(sentence, [])
            if truth[copy].lang == digest.lang
        }
        assert DIGEST_ITEMS[0] - 2 <= len(listed) <= DIGEST_ITEMS[1], (page_id, len(listed))
        latest = max(truth[copy].published for copy in listed.values())
        assert digest.published <= latest + timedelta(hours=DIGEST_DELAY_HOURS + COPY_DELAY_HOURS)
        items_per_digest.append(len(listed))
    assert mean(items_per_digest) > DIGEST_ITEMS[0]
    assert generate_corpus(300, SEED, digests=0.0) == generate_corpus(300, SEED)


def test_short_stories_have_60_to_100_words(hard: Corpus) -> None:
    """A local page is its story's whole text: about the asked share of them are 60-100 words long,
    the others keep their usual lengths (150 or 800 words, +-25%)."""
    corpus, truth = hard
    lengths = [
        _words(truth[ids[0]].article) for ids in _clusters(corpus).values() if truth[ids[0]].kind == "local"
    ]
    short = [length for length in lengths if length <= SHORT_STORY_WORDS[1]]
    assert min(lengths) >= SHORT_STORY_WORDS[0] == 60 and SHORT_STORY_WORDS[1] == 100
    assert min(length for length in lengths if length > SHORT_STORY_WORDS[1]) >= 110
    assert len(lengths) > 300 and _near(len(short), HARD_OPTIONS["short_stories"], len(lengths))
    assert len(set(short)) > 20  # spread over the range, not one length


def test_quoting_pages_quote_a_middle_passage_of_an_earlier_story(hard: Corpus) -> None:
    """A quoting page is a story of its own quoting a run of whole sentences of an earlier page of
    the quoted story, as paragraphs of their own after its first paragraph. The passage's share of
    its article words is in [0.35, 0.50] or [0.20, 0.30] exactly (the page's own text is sized to
    the word, so no rounding allowance), and at most 0.60 of the quoted page's words."""
    corpus, truth = hard
    pages_of: dict[str, list[str]] = defaultdict(list)
    for page_id, page_truth in truth.items():
        pages_of[page_truth.label].append(page_id)
    quotes = [page_id for page_id, page_truth in truth.items() if page_truth.kind == "quote"]
    low = introduced = followed = 0
    quoted_kinds = Counter()
    for page_id in quotes:
        quote = truth[page_id]
        assert corpus.labels[page_id] == quote.label != quote.quoted and pages_of[quote.label] == [page_id]
        assert quote.event is None and truth[pages_of[quote.quoted][0]].kind in ("wire", "local")
        sentences = _sentence_list(quote.article)
        sources = {source: _sentence_list(truth[source].article) for source in pages_of[quote.quoted]}
        at = [i for i, sentence in enumerate(sentences) if any(sentence in s for s in sources.values())]
        assert at and at == list(range(at[0], at[0] + len(at))), page_id  # one run in the page
        passage = sentences[at[0] : at[0] + len(at)]
        quoted_from = [
            source
            for source, whole in sources.items()
            if any(whole[start : start + len(passage)] == passage for start in range(len(whole)))
            and (len(whole) < 3 or whole[0] != passage[0])  # from the middle
            and _words(tuple(passage)) / _words(truth[source].article) <= QUOTE_MAX_SHARE_OF_QUOTED
            and truth[source].published < quote.published
            and quote.published - truth[source].published <= timedelta(hours=QUOTE_DELAY_HOURS)
        ]
        assert quoted_from, page_id
        quoted_kinds[truth[quoted_from[0]].kind] += 1
        in_passage = [set(_sentence_list((paragraph,))) <= set(passage) for paragraph in quote.article]
        assert not in_passage[0] and all(  # whole paragraphs, after the first
            in_passage[i] or not set(_sentence_list((paragraph,))) & set(passage)
            for i, paragraph in enumerate(quote.article)
        )
        followed += not in_passage[-1]
        before = quote.article[in_passage.index(True) - 1]
        introduced += len(_sentence_list((before,))) == 1 and truth[quoted_from[0]].entities[0] in before
        share = _words(tuple(passage)) / _words(quote.article)
        assert (
            QUOTE_LOW_SHARE[0] <= share <= QUOTE_LOW_SHARE[1]
            or QUOTE_HIGH_SHARE[0] <= share <= QUOTE_HIGH_SHARE[1]
        )
        low += share <= QUOTE_LOW_SHARE[1]
    assert (QUOTE_LOW_SHARE, QUOTE_HIGH_SHARE, QUOTE_MAX_SHARE_OF_QUOTED) == (
        (0.20, 0.30),
        (0.35, 0.50),
        0.60,
    )
    assert _near(low, QUOTE_LOW_SHARE_CHANCE, len(quotes)) and QUOTE_LOW_SHARE_CHANCE == pytest.approx(1 / 3)
    assert quoted_kinds["wire"] > 20 and quoted_kinds["local"] > 10
    assert followed > len(quotes) / 2  # mostly in the middle of the page, own text after it
    assert 0.3 < introduced / len(quotes) < 0.75  # about half introduced by a sentence naming its source


def test_cli_writes_hard_cases_and_refuses_a_bad_share(tmp_path) -> None:
    pages, labels = tmp_path / "pages.jsonl", tmp_path / "labels.json"
    options = ["--teasers", "0.05", "--quotes", "0.05", "--short-stories", "0.2", "--digests", "0.02"]
    arguments = [
        "generate",
        "--pages",
        "300",
        "--seed",
        "4",
        *options,
        "-o",
        str(pages),
        "--labels",
        str(labels),
    ]
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 0, result.output
    assert "15 teasers, 15 quoting pages; 6 digests" in result.stderr
    expected = generate_corpus(300, 4, teasers=0.05, quotes=0.05, short_stories=0.2, digests=0.02)
    write_corpus(expected, tmp_path / "expected.jsonl", tmp_path / "expected.json")
    assert pages.read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
    assert labels.read_bytes() == (tmp_path / "expected.json").read_bytes()

    bad = tmp_path / "bad.jsonl"
    result = CliRunner().invoke(
        cli, ["generate", "--pages", "10", "--short-stories", "-0.1", "-o", str(bad), "--labels", str(labels)]
    )
    assert (
        result.exit_code == 2
        and "'--short-stories': must be a share from 0 to 0.5, got -0.1" in result.stderr
    )
    done = subprocess.run(  # the installed command, as a user runs it
        [
            "stream-lsh",
            "generate",
            "--pages",
            "10",
            "--teasers",
            "0.7",
            "-o",
            str(bad),
            "--labels",
            str(labels),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "'--teasers': must be a share from 0 to 0.5, got 0.7" in done.stderr
    assert not bad.exists()


# --- Stories that spread ------------------------------------------------------------------------

SPREADING = 4


@pytest.fixture(scope="module")
def spreading() -> Corpus:
    return generate_corpus_with_truth(HARD_PAGES, SEED, spreading=SPREADING)


def _spreading_stories(truth: dict[str, PageTruth]) -> dict[str, list[tuple[str, PageTruth]]]:
    stories: dict[str, list[tuple[str, PageTruth]]] = defaultdict(list)
    for page_id, page_truth in truth.items():
        if page_truth.spreading:
            stories[page_truth.label].append((page_id, page_truth))
    return dict(stories)


def test_spreading_stories_reach_their_outlets_within_hours(spreading: Corpus) -> None:
    """By turns 30-36, 10-20 and 3-8 outlets, each once, one language, every copy within
    SPREAD_HOURS of the first, starting in the second half of the window; the corpus keeps its
    size, ids and order."""
    corpus, truth = spreading
    assert [page["id"] for page in corpus.pages] == [f"p{number:06d}" for number in range(HARD_PAGES)]
    moments = [_moment(page) for page in corpus.pages]
    assert moments == sorted(moments)
    stories = _spreading_stories(truth)
    assert sorted(stories) == [f"w{number:05d}" for number in range(SPREADING)]
    for number, label in enumerate(sorted(stories)):
        pages = stories[label]
        low, high = SPREAD_OUTLETS[number % len(SPREAD_OUTLETS)]
        assert low <= len(pages) <= high, label
        assert len({page_truth.outlet for _, page_truth in pages}) == len(pages)
        assert {page_truth.lang for _, page_truth in pages} == {"en"}  # the language with most outlets
        assert {page_truth.kind for _, page_truth in pages} == {"wire"}
        times = [page_truth.published for _, page_truth in pages]
        assert max(times) - min(times) < timedelta(hours=SPREAD_HOURS)
        start_hours = (min(times) - EPOCH) / timedelta(hours=1)
        assert SPREAD_START_HOURS[0] <= start_hours < SPREAD_START_HOURS[1]
        assert all(corpus.labels[page_id] == label for page_id, _ in pages)
    assert all(page_truth.label.startswith("w") == page_truth.spreading for page_truth in truth.values())


def test_extra_outlets_publish_ordinary_stories_before_a_story_spreads(spreading: Corpus) -> None:
    """The world gets outlets for the largest story (36 > the 16 English ones of 2,000 pages); each
    outlet carrying a copy has published ordinary pages before it, so its prose is learnt."""
    _, truth = spreading
    plain_outlets = {
        page_truth.outlet for page_truth in generate_corpus_with_truth(HARD_PAGES, SEED)[1].values()
    }
    outlets = {page_truth.outlet for page_truth in truth.values() if page_truth.lang == "en"}
    assert len(outlets) >= max(len(pages) for pages in _spreading_stories(truth).values()) > 16
    for pages in _spreading_stories(truth).values():
        first = min(page_truth.published for _, page_truth in pages)
        for _, page_truth in pages:
            before = [
                other
                for other in truth.values()
                if other.outlet == page_truth.outlet and not other.spreading and other.published < first
            ]
            assert len(before) >= 2, page_truth.outlet
    assert len(outlets - plain_outlets) > 0


def test_spreading_is_deterministic_and_fits_a_small_corpus() -> None:
    assert _digest(generate_corpus(400, 5, spreading=2)) == _digest(generate_corpus(400, 5, spreading=2))
    assert _digest(generate_corpus(400, 5, spreading=2)) != _PINNED_DIGESTS[400, 5, False, None]
    for pages in (0, 1, 5, 30):
        corpus, truth = generate_corpus_with_truth(pages, 3, spreading=3)
        assert [page["id"] for page in corpus.pages] == [f"p{number:06d}" for number in range(pages)]
        assert pages < 2 or any(not page_truth.spreading for page_truth in truth.values())
    for bad in (-1, 1001, 2.5, True):
        with pytest.raises(ValueError, match="spreading must be a number of stories from 0 to 1000"):
            generate_corpus(10, spreading=bad)


def test_cli_writes_spreading_stories_and_refuses_a_bad_count(tmp_path) -> None:
    pages, labels = tmp_path / "pages.jsonl", tmp_path / "labels.json"
    arguments = ["generate", "--pages", "400", "--seed", "5", "--spreading", "2"]
    result = CliRunner().invoke(cli, [*arguments, "-o", str(pages), "--labels", str(labels)])
    assert result.exit_code == 0, result.output
    _, truth = generate_corpus_with_truth(400, 5, spreading=2)
    sizes = Counter(page_truth.label for page_truth in truth.values() if page_truth.spreading)
    assert f"2 spreading stories of {sizes['w00000']}, {sizes['w00001']} pages" in result.stderr
    expected = generate_corpus(400, 5, spreading=2)
    write_corpus(expected, tmp_path / "expected.jsonl", tmp_path / "expected.json")
    assert pages.read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
    assert labels.read_bytes() == (tmp_path / "expected.json").read_bytes()
    refused = CliRunner().invoke(cli, [*arguments[:-1], "-3", "-o", str(pages), "--labels", str(labels)])
    assert refused.exit_code == 2 and "must be a number of stories from 0 to 1000, got -3" in refused.stderr
