"""The decide partition on its own: a Decider fed what site partitions send it
(stream_lsh.pipeline.decide), against batch's engine deciding the same pages."""

from conftest import prose

from stream_lsh.core.config import DedupConfig
from stream_lsh.core.dedup import Deduplicator
from stream_lsh.core.page import Page
from stream_lsh.core.prepare import Preparer
from stream_lsh.pipeline.decide import Decider
from stream_lsh.pipeline.messages import PageToSign, ReleaseMark, Retraction, SignedForDecision
from stream_lsh.pipeline.routing import Layout
from stream_lsh.pipeline.signer import Signer

CONFIG = DedupConfig(boilerplate=False)
PREPARER = Preparer(CONFIG)
T0 = 1_772_323_200_000
STORY, OTHER = prose(1, 220), prose(2, 220)


def signed(page_id: str, text: str, clock: int, body: int | None = None) -> SignedForDecision:
    """What a site partition sends the decide partition for this page."""
    to_sign = PageToSign(
        page_id,
        False,
        "a.example",
        "en",
        clock,
        clock / 1000,
        None,
        body or hash(text) & 0xFFFF,
        tuple(text.split("\n")),
        f'{{"id": "{page_id}"}}',
    )
    out = Signer(PREPARER, Layout(1), 0).handle([to_sign])
    [message] = out.internal["decide"][0]
    assert isinstance(message, SignedForDecision)
    return message


def mark(source: int, clock: int, page_id: str = "~") -> ReleaseMark:
    return ReleaseMark(source, [clock, page_id])


def decided(out) -> list[tuple[str, str, str | None]]:
    return [(d["id"], d["status"], d["duplicate_of"]) for _, d in out.decisions]


def test_pages_from_two_site_partitions_are_decided_in_clock_order_whatever_comes_first():
    """The later copy arrives first, from another site partition: it waits for both release points,
    then the earlier copy founds the cluster, as in batch."""
    decider = Decider(CONFIG, sources=2)
    late, early = signed("late", STORY, T0 + 5), signed("early", STORY + " And more.", T0 + 1)
    assert decided(decider.handle([late, mark(0, T0 + 5)])) == []  # site partition 1 has said nothing
    out = decider.handle([early, mark(1, T0 + 5)])
    assert decided(out) == [("early", "unique", None), ("late", "duplicate", "early")]
    engine = Deduplicator(CONFIG)
    batch = engine.process_batch([Page("early", STORY + " And more."), Page("late", STORY)], [T0 + 1, T0 + 5])
    assert [(d.id, d.status, d.duplicate_of) for d in batch] == decided(out)


def test_a_record_applied_already_is_dropped_when_it_comes_again():
    """Read again after a crash, or sent again by a site partition that restarts: its decision
    went out when it was applied, and nothing changes."""
    decider = Decider(CONFIG, sources=1)
    first, copy = signed("a", STORY, T0), signed("b", STORY + " Again.", T0 + 1)
    before = decider.handle([first, copy, mark(0, T0 + 1)])
    assert decided(before) == [("a", "unique", None), ("b", "duplicate", "a")]
    window = decider.snapshot()
    again = decider.handle([first, copy])  # late: at or below the release point
    assert again.is_empty()
    assert decider.snapshot()["engine"] == window["engine"]


def test_a_record_that_comes_again_after_its_page_left_the_window_is_not_decided_afresh():
    """In a backfill, the seconds before a record is read again can carry the clock past the
    window: decided again, the page would find its copies gone and get another decision."""
    config = DedupConfig(boilerplate=False, ttl=3600.0)
    decider = Decider(config, sources=1)
    first, copy = signed("a", STORY, T0), signed("b", STORY + " Again.", T0 + 1)
    later = signed("z", OTHER, T0 + 5 * 3_600_000)
    out = decider.handle([first, copy, later, mark(0, T0 + 5 * 3_600_000)])
    assert decided(out)[1] == ("b", "duplicate", "a")
    assert decider.engine.index.get("b") is None  # expired
    assert decided(decider.handle([copy])) == []


def test_a_page_sent_again_while_it_is_held_is_held_once():
    decider = Decider(CONFIG, sources=1)
    page = signed("a", STORY, T0)
    decider.handle([page, page])
    assert len(decider.held) == 1
    assert decided(decider.handle([mark(0, T0)])) == [("a", "unique", None)]


def test_an_older_version_sent_again_after_its_replacement_is_not_decided_again():
    """v1 of "a" is a copy of x; v2 replaces it with another story. v1 sent again (a site
    partition's restart) must not replace v2, nor be decided against a window that has moved on."""
    decider = Decider(CONFIG, sources=1)
    x = signed("x", STORY, T0)
    v1, v2 = signed("a", STORY + " Told again.", T0 + 1), signed("a", OTHER, T0 + 2)
    out = decider.handle([x, v1, v2, mark(0, T0 + 2)])
    assert decided(out) == [("x", "unique", None), ("a", "duplicate", "x"), ("a", "unique", None)]
    assert decided(decider.handle([v1])) == []
    assert decider.engine.index.get("a").cluster_id == "a"


def test_a_retraction_applies_at_its_place_in_clock_order():
    """Held with the pages: a copy read before the retraction joins the page, one read after it
    does not."""
    decider = Decider(CONFIG, sources=1)
    pages = [
        signed("a", STORY, T0),
        signed("b", STORY + " One.", T0 + 1),
        signed("c", STORY + " Two.", T0 + 3),
    ]
    out = decider.handle([pages[2], Retraction("a", T0 + 2), pages[1], pages[0], mark(0, T0 + 3)])
    assert decided(out) == [("a", "unique", None), ("b", "duplicate", "a"), ("c", "duplicate", "b")]
    assert ("a", None) not in out.clusters  # b is still a member of cluster a
    assert dict(out.clusters)["a"]["size"] == 2 and dict(out.clusters)["a"]["members"] == ["b", "c"]
