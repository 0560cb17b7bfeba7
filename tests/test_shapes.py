"""Page shapes real feeds send, and the world in real prose: the generator makes what it claims
(stream_lsh.synthetic.shapes, stream_lsh.synthetic.real_world)."""

from __future__ import annotations

import re
import zlib
from collections import Counter, defaultdict

import orjson
import pytest
from click.testing import CliRunner

from stream_lsh.cli import cli
from stream_lsh.core.config import DedupConfig
from stream_lsh.core.page import page_from_dict
from stream_lsh.core.prepare import Preparer
from stream_lsh.core.text import html_blocks
from stream_lsh.errors import CorpusError
from stream_lsh.synthetic import Shapes, generate_corpus, generate_corpus_with_truth
from stream_lsh.synthetic.notices import NOTICE_SHARE
from stream_lsh.synthetic.outlets import _UI
from stream_lsh.synthetic.real_prose import articles
from stream_lsh.synthetic.shapes import COLD_PAGES, LIST_HEADLINES, NO_SHAPES

PAGES = 600
_SEMANTIC = re.compile(r"<(header|nav|menu|main|article|section|aside|footer|p|ul|ol|li|h1|h2)\b")


def body(page: dict) -> str:
    return page.get("html") or page.get("text") or page.get("maintext") or ""


def shaped(*names: str, **options) -> tuple:
    return generate_corpus_with_truth(PAGES, 5, shapes=Shapes.parse(names), **options)


def test_no_shape_is_the_default_corpus():
    assert generate_corpus(200, 3, shapes=NO_SHAPES) == generate_corpus(200, 3)


def test_unknown_and_clashing_shapes_are_refused():
    with pytest.raises(ValueError, match="unknown page shape 'bogus'"):
        Shapes.parse(["bogus"])
    with pytest.raises(ValueError, match="one in-body list"):
        Shapes.parse(["fixed-list", "rotating-list"])


def test_one_line_bodies_hold_the_whole_article_on_one_line():
    corpus, truth = shaped("one-line")
    checked = 0
    for page in corpus.pages:
        article = truth[page["id"]].article
        if "text" not in page or len(article) < 2 or truth[page["id"]].kind == "no-content":
            continue
        assert " ".join(article) in page["text"].splitlines()
        checked += 1
    assert checked > 50


def test_a_fixed_list_is_the_same_on_every_page_of_an_outlet_and_a_rotating_one_is_not():
    for name, fixed in (("fixed-list", True), ("rotating-list", False)):
        corpus, truth = shaped(name)
        lists = defaultdict(set)
        for page in corpus.pages:
            known = truth[page["id"]]
            if "text" not in page or known.kind == "no-content":
                continue
            lines = page["text"].splitlines()
            at = lines.index(_UI[known.lang].most_read)
            lists[known.outlet].add(tuple(lines[at + 1 : at + 1 + LIST_HEADLINES]))
        per_outlet = [len(variants) for variants in lists.values()]
        assert max(per_outlet) == 1 if fixed else max(per_outlet) > 3


def test_div_only_pages_have_no_semantic_element():
    corpus, _ = shaped("div-only")
    html = [page["html"] for page in corpus.pages if "html" in page]
    assert len(html) > 300
    assert not any(_SEMANTIC.search(page.split("<body", 1)[1]) for page in html)


def test_trimmed_copies_keep_down_to_55_percent():
    """Copies a third shorter than their story's longest copy are rare by default (a copy keeps
    70-100% of the wire text), common when trimmed (55-100%)."""
    short = []
    for names in ((), ("trimmed",)):
        corpus, truth = shaped(*names)
        by_story = defaultdict(list)
        for page in corpus.pages:
            known = truth[page["id"]]
            if known.kind == "wire":
                by_story[known.label].append(sum(len(p.split()) for p in known.article))
        ratios = [size / max(sizes) for sizes in by_story.values() if len(sizes) > 1 for size in sizes]
        short.append(sum(ratio < 0.67 for ratio in ratios) / len(ratios))
    assert short[0] < 0.03 and short[1] > 0.1


def test_cold_sites_come_first_site_after_site():
    corpus, truth = shaped("cold-sites")
    outlets = [truth[page["id"]].outlet for page in corpus.pages]
    first = outlets[: COLD_PAGES * len(set(outlets))]
    runs = [outlet for i, outlet in enumerate(first) if i == 0 or first[i - 1] != outlet]
    assert len(runs) == len(set(runs))  # each outlet's first pages in one run
    assert all(count <= COLD_PAGES for count in Counter(first).values())
    assert sorted(page["id"] for page in corpus.pages) == sorted(shaped()[0].labels)


def test_early_teasers_come_before_every_page_of_their_story():
    corpus, truth = shaped("early-teasers", teasers=0.06)
    first_of: dict[str, int] = {}
    for position, page in enumerate(corpus.pages):
        if truth[page["id"]].kind != "teaser":
            first_of.setdefault(corpus.labels[page["id"]], position)
    teasers = [(p, page) for p, page in enumerate(corpus.pages) if truth[page["id"]].kind == "teaser"]
    assert len(teasers) >= 20
    assert all(position < first_of[corpus.labels[page["id"]]] for position, page in teasers)
    # without the shape, a teaser comes after the copy it excerpts
    corpus, truth = shaped(teasers=0.06)
    position = {page["id"]: p for p, page in enumerate(corpus.pages)}
    assert all(position[t.excerpt_of] < position[i] for i, t in truth.items() if t.kind == "teaser")


def test_hard_wrapped_text_pages_break_their_paragraphs_at_the_outlets_width():
    corpus, truth = shaped("hard-wrapped")
    texts = [page for page in corpus.pages if "text" in page]
    assert len(texts) >= 50
    for page in texts:
        lines = page["text"].split("\n")
        outlet = truth[page["id"]].outlet
        article = [line for line in lines if line.startswith("   ")]  # each paragraph's first line
        assert article, page["text"]
        width = 60 + zlib.crc32(outlet.encode()) % 20
        starts = [i for i, line in enumerate(lines) if line.startswith("   ")]
        for i in starts:
            assert len(lines[i]) <= width
    capitalised = sum(
        line[:1].isupper()
        for page in texts
        for i, line in enumerate(page["text"].split("\n")[1:])
        if line[:1].strip()
    )
    assert capitalised > 100  # wrapped lines that start with a name or a sentence: the shape at stake
    assert {page["id"]: corpus.labels[page["id"]] for page in corpus.pages} == shaped()[
        0
    ].labels  # labels stay


# -- real prose -----------------------------------------------------------------------------------


def test_the_real_articles_are_fetched_and_reruns_dropped():
    texts = articles()
    assert len(texts) == 339  # 349 in the two files, 10 reruns of others
    assert texts[0].startswith("Hundreds of people have been forced to vacate their homes")


def test_a_real_corpus_tells_its_stories_in_the_articles_own_sentences():
    corpus, truth = generate_corpus_with_truth(400, 2, prose="real", teasers=0.06, quotes=0.06)
    sentences = {s for text in articles() for s in re.split(r"(?<=[.!?])\s+", text)}
    stories = [t for t in truth.values() if t.kind in ("wire", "local")]
    found = sum(
        any(sentence in sentences for sentence in re.split(r"(?<=[.!?])\s+", t.article[0])) for t in stories
    )
    assert found > 0.9 * len(stories)
    labels = Counter(corpus.labels.values())
    assert sum(size > 1 for size in labels.values()) > 50
    assert {t.kind for t in truth.values()} >= {"teaser", "quote", "wire", "local"}


def test_no_text_of_the_reserve_is_used_twice():
    """Quoting pages' own stories and copies' local leads come from articles that are never
    stories, each sentence once: two pages share text only where the generator means them to."""
    _, truth = generate_corpus_with_truth(500, 4, prose="real", quotes=0.1)
    stories = {s for t in truth.values() if t.kind in ("wire", "local") for s in sentences(t.article)}
    owns = [sentences(t.article) - stories for t in truth.values() if t.kind == "quote"]
    assert len(owns) > 30 and all(owns)
    assert sum(map(len, owns)) == len(set().union(*owns))


def sentences(paragraphs: tuple[str, ...]) -> set[str]:
    """Its sentences of four words or more (a cut can leave a word or two: "Meanwhile.")."""
    pieces = (s for paragraph in paragraphs for s in re.split(r"(?<=[.!?])\s+", paragraph))
    return {s for s in pieces if s.count(" ") >= 3}


def test_too_many_pages_of_real_prose_are_refused_with_what_fits():
    with pytest.raises(CorpusError, match="fit"):
        generate_corpus(3000, 1, prose="real")
    with pytest.raises(ValueError, match="English"):
        generate_corpus(100, 1, prose="real", languages=("de",))


def test_the_cli_generates_shapes_and_real_prose(tmp_path):
    pages, labels = tmp_path / "p.jsonl", tmp_path / "l.json"
    args = ["generate", "--pages", "120", "--prose", "real", "--shape", "one-line", "--shape", "div-only"]
    result = CliRunner().invoke(cli, [*args, "-o", str(pages), "--labels", str(labels)])
    assert result.exit_code == 0, result.output
    assert len(pages.read_bytes().splitlines()) == 120 and orjson.loads(labels.read_bytes())
    bad = CliRunner().invoke(
        cli, ["generate", "--pages", "5", "--shape", "bogus", "-o", "x", "--labels", "y"]
    )
    assert bad.exit_code == 2 and "unknown page shape" in bad.output


def test_notices_are_a_sites_one_text_at_many_addresses_each_a_page_of_its_own():
    corpus, truth = shaped("notices")
    notices = [page for page in corpus.pages if truth[page["id"]].kind == "notice"]
    assert len(notices) == round(PAGES * NOTICE_SHARE)
    assert len({corpus.labels[page["id"]] for page in notices}) == len(notices)
    assert all(truth[page["id"]].article == () for page in notices)
    sections = defaultdict(set)  # a site's notice of one kind (its title): the same words each time
    for page in notices:
        found = re.search(r'<section class="notice">(.*?)</section>', page.get("html", ""))
        if found:
            sections[page["source"], page["title"]].add(re.sub(r"[0-9a-f]{16}", "REF", found.group(1)))
    assert sum(len(s) == 1 for s in sections.values()) == len(sections) >= 10
    assert sum(t.kind == "no-content" for t in truth.values()) == 0  # notices stand in for galleries


def test_script_built_pages_hold_their_article_only_as_data_and_are_read_from_it():
    corpus, _ = shaped("script-built")
    plain, _ = shaped()
    before = {page["id"]: page for page in plain.pages}
    shells = [page for page in corpus.pages if "html" in page and '<div id="__next">' in page["html"]]
    assert len(shells) >= 50
    assert {"__NEXT_DATA__" in page["html"] for page in shells} == {True, False}  # state, or JSON-LD
    preparer = Preparer(DedupConfig())
    for page in shells:
        shown = html_blocks(page["html"])
        assert shown == [page["title"]], shown  # a crawler that runs no scripts sees the headline
        article = preparer.blocks(page_from_dict(page))[1:]  # after its headline, with no byline to cut it
        assert article == preparer.blocks(page_from_dict(before[page["id"]]))[: len(article)]
        assert len(" ".join(article).split()) > 3 * len(shown[0].split())
    # the shape renders, it does not change what a page is or which pages there are
    assert corpus.labels == plain.labels
    others = [page for page in corpus.pages if page not in shells]
    assert all(page == before[page["id"]] for page in others)
