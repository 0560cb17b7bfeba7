"""A page too short to compare, found by its keys (stream_lsh.core.keyed): an alert that comes
before its story founds the cluster the story joins; nothing is ever matched to it by similarity."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

from stream_lsh.batch import RejectSink, run_batch
from stream_lsh.core.config import DedupConfig
from stream_lsh.core.decision import DUPLICATE, HEADLINE, NO_CONTENT, OPENING, UNIQUE
from stream_lsh.core.dedup import Deduplicator, export_state, import_state
from stream_lsh.core.keyed import no_shingles
from stream_lsh.core.page import Page
from stream_lsh.stores.disk_index import DiskIndex

HEADLINE_TEXT = "UK pledges a billion pounds to the global vaccine effort"
FIRST = "Chancellor offers money to the scheme for the poorest countries."  # 4 shingles: too few to sign
STORY = "\n".join(
    [
        HEADLINE_TEXT,
        FIRST,
        "In a speech in London he called for action to close the gap in immunisation between rich and "
        "poor nations, and urged other governments to follow with pledges of their own.",
        "Officials said the money would be paid in yearly parts and that the first of them would reach "
        "the scheme before the end of the year, once the partners had agreed on how it was spent.",
        "Charities welcomed the pledge but said that the sum was still short of what the scheme needed "
        "to reach all the children who were missing out on their first doses.",
        "The scheme buys vaccines in bulk for the countries that take part and pays for the clinics "
        "and the staff who give them, which its backers say has cut the price of several of them.",
    ]
)


def page(page_id: str, text: str, site: str, title: str | None = None) -> Page:
    return Page(id=page_id, text=text, source=site, title=title)


def test_an_alert_of_a_headline_before_its_story_founds_the_cluster_the_story_joins():
    engine = Deduplicator()
    alert = engine.process(page("alert", f"BREAKING: {HEADLINE_TEXT}", "alerts.example"))
    assert (alert.status, alert.cluster_id) == (UNIQUE, "alert")  # no longer no_content
    story = engine.process(page("story", STORY, "wire.example"))
    assert (story.status, story.duplicate_of, story.match) == (DUPLICATE, "alert", HEADLINE), story
    assert story.similarity is None and story.containment is None  # nothing measured against an alert
    copy = engine.process(page("copy", STORY, "paper.example"))
    assert (copy.status, copy.cluster_id) == (DUPLICATE, "alert")
    entry = engine.index.get("alert")
    assert entry is not None and entry.band_keys.size == 0 and no_shingles(entry.signature)


def test_an_alert_of_the_first_sentence_before_its_story_is_held_by_it():
    engine = Deduplicator()
    assert engine.process(page("alert", FIRST, "alerts.example")).status == UNIQUE
    assert engine.sign([engine.prepare(page("again", FIRST, "x.example"), None)])[0].signature is None
    story = engine.process(page("story", STORY, "wire.example"))
    assert (story.status, story.duplicate_of, story.match) == (DUPLICATE, "alert", OPENING), story
    # with containment off, nothing joins by what it holds (core/opening.py), keyed or not
    strict = Deduplicator(DedupConfig(containment=None))
    strict.process(page("alert", FIRST, "alerts.example"))
    assert strict.process(page("story", STORY, "wire.example")).status == UNIQUE


def test_a_keyed_page_is_found_by_keys_only_never_by_its_text():
    engine = Deduplicator()
    stock = "More details to follow later today."
    first = engine.process(page("a", stock, "one.example", title="A council votes to close the old library"))
    second = engine.process(page("b", stock, "two.example", title="Storm leaves thousands without any power"))
    assert first.status == second.status == UNIQUE  # the same few words, two stories: no copies
    assert second.duplicate_of is None


def test_short_pages_of_one_site_under_one_title_stay_apart():
    engine = Deduplicator()
    title = "Weather Forecast | KVTN NewsChannel 13"
    monday = engine.process(page("mon", "Now: 54°F, overcast. Wind NW 5 mph.", "kvtn.example", title))
    tuesday = engine.process(page("tue", "Now: 40°F, fog. Wind SW 10 mph.", "kvtn.example", title))
    assert (monday.status, tuesday.status) == (UNIQUE, UNIQUE), tuesday


def test_a_page_with_no_key_or_no_text_left_stays_no_content():
    engine = Deduplicator()
    assert engine.process(page("short", "Load more", "app.example")).status == NO_CONTENT
    shell = Page(id="shell", html=f"<html><head><title>{HEADLINE_TEXT}</title></head><body></body></html>")
    assert engine.process(shell).status == NO_CONTENT
    wall = engine.process(page("wall", "Checking your browser before accessing the site.", "x.example"))
    assert (wall.status, wall.notice) == (NO_CONTENT, "bot_check")
    assert len(engine.index) == 0


def test_a_story_that_joined_by_its_text_names_the_headline_for_the_cards_after_it():
    """A card founds a cluster; the story's first copy has another headline and founds its own; a
    second copy carries the card's headline and joins the first by its text. A card that comes
    later with that headline joins the story, not the first card."""
    engine = Deduplicator()
    card_title = "Chancellor pledges money for vaccines in poor countries"
    engine.process(page("card", f"{card_title}\nRead more in the app.", "app.example", title=card_title))
    assert engine.process(page("story", STORY, "wire.example")).status == UNIQUE
    copy = engine.process(page("copy", STORY.replace(HEADLINE_TEXT, card_title), "paper.example", card_title))
    assert (copy.cluster_id, copy.duplicate_of) == ("story", "story"), copy
    late = engine.process(page("late", f"{card_title}\nTap to read.", "cards.example", title=card_title))
    assert (late.cluster_id, late.match) == ("story", HEADLINE), late


def test_a_keyed_page_stays_keyed_in_a_saved_state_and_on_disk(tmp_path: Path):
    pages = [
        page("alert", f"BREAKING: {HEADLINE_TEXT}", "alerts.example"),
        page("story", STORY, "wire.example"),
    ]
    engine = Deduplicator()
    engine.process(pages[0])
    header, arrays = export_state(engine)
    loaded = Deduplicator()
    import_state(loaded, header, arrays)
    entry = loaded.index.get("alert")
    assert entry is not None and entry.band_keys.size == 0
    assert loaded.process(pages[1]).duplicate_of == "alert"
    config = DedupConfig()
    on_disk = Deduplicator(config)
    on_disk.index = DiskIndex(tmp_path / "w", on_disk.scheme, on_disk.banding)
    on_disk.process(pages[0])
    on_disk.index.close()
    reopened = Deduplicator(config)
    reopened.index = DiskIndex(tmp_path / "w", reopened.scheme, reopened.banding)
    assert reopened.process(pages[1]).duplicate_of == "alert"


def test_the_story_after_its_alert_is_the_page_to_index():
    """Dedup before indexing keeps each cluster's fullest telling so far: the alert founded the
    cluster, and the story that joined it holds it, so both go to the unique output, the story
    marked ``fuller``; a copy of the story no larger than it does not."""
    lines = [
        orjson.dumps({"id": "alert", "text": f"BREAKING: {HEADLINE_TEXT}", "source": "alerts.example"}),
        orjson.dumps({"id": "story", "text": STORY, "source": "wire.example"}),
        orjson.dumps({"id": "copy", "text": STORY, "source": "paper.example"}),
    ]
    out, kept = io.BytesIO(), io.BytesIO()
    run_batch(lines, Deduplicator(), out=out, rejects=RejectSink(io.BytesIO), unique_out=kept)
    records = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["id"], r["status"], r.get("fuller", False)) for r in records] == [
        ("alert", UNIQUE, False),
        ("story", DUPLICATE, True),
        ("copy", DUPLICATE, False),
    ]
    assert [orjson.loads(line)["id"] for line in kept.getvalue().splitlines()] == ["alert", "story"]
