"""What the stages tell the metrics: the tally of each handling and the gauges of each partition,
checked against what the pipeline did (the in-process pipeline runs the stages the workers run)."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
import pytest

from stream_lsh.core.dedup import DedupConfig
from stream_lsh.core.window import BandWindow
from stream_lsh.pipeline.local import LocalPipeline
from stream_lsh.pipeline.outbox import Stage
from stream_lsh.pipeline.routing import Layout
from stream_lsh.synthetic import generate_corpus


@dataclass
class Entry:
    keys: list[int]
    content_hash: int | None = None
    event_time: float | None = None
    opening: int = 0
    headline: int = 0
    site_headline: int = 0


@pytest.fixture(scope="module")
def pages():
    return generate_corpus(300, seed=41).pages


def run(pages, **config) -> LocalPipeline:
    pipe = LocalPipeline(DedupConfig(**config), Layout(3), inputs=1)
    pipe.feed([orjson.dumps(p) for p in pages], caught_up={0})
    pipe.run()
    return pipe


def test_the_tally_counts_every_page_decision_and_candidate_check(pages):
    pipe = run(pages)
    tally, out = pipe.outputs.tally, pipe.outputs
    assert tally.pages == len(pages) and tally.retractions == tally.queries == 0
    assert len(tally.decided) == len(out.decisions) == len(pages)
    assert all(t.received_ms and t.received_ms > 0 for t in tally.decided)  # the record timestamp travels
    assert len(tally.blocks_dropped) == len(pages)  # boilerplate learning is on: one count a page
    assert sum(tally.blocks_dropped) > 0
    # every candidate a decision reports was checked once, but for an exact copy (similarity 1.0),
    # found by its content without a check
    perfect = [d for _, d in out.decisions if d["similarity"] == 1.0]
    candidates = sum(decision["candidates"] for _, decision in out.decisions)
    assert candidates - len(perfect) <= tally.verified + tally.rejected <= candidates
    duplicates = sum(decision["status"] == "duplicate" for _, decision in out.decisions)
    assert tally.verified >= duplicates - sum(
        decision["similarity"] == 1.0 and decision["candidates"] == 1 for _, decision in out.decisions
    )
    assert tally.evicted == 0  # the default bucket cap is far above these buckets


def test_pages_with_an_article_on_one_line_are_counted(pages):
    """The ingest stage counts pages whose text holds a whole article on one line (queries not)."""
    flat = [
        dict(page, text=" ".join(["word"] * 200) + ".", id=f"flat{i}") for i, page in enumerate(pages[:7])
    ]
    for page in flat:
        page.pop("html", None)
    assert run(pages).outputs.tally.flattened == 0
    assert run(flat + pages[7:]).outputs.tally.flattened == 7


def test_a_small_bucket_cap_shows_as_evictions(pages):
    tally = run(pages, bucket_cap=1).outputs.tally
    assert tally.evicted > 0


def test_the_window_counts_the_ids_its_bucket_cap_pushes_out():
    window: BandWindow[Entry] = BandWindow(bucket_cap=2, ttl=None)
    assert window.insert("a", Entry([1, 2])) == 0
    assert window.insert("b", Entry([1, 3])) == 0
    assert window.insert("c", Entry([1, 2, 3])) == 1  # bucket 1 held a, b: a goes
    assert window.insert("d", Entry([1, 2, 3])) == 3  # 1: b; 2: a; 3: b


def test_the_gauges_say_what_each_partition_holds(pages):
    pipe = run(pages)
    [decide] = [stage.gauges() for stage in pipe.stages[Stage.DECIDE]]
    sites = [stage.gauges() for stage in pipe.stages[Stage.SITES]]
    decided = {d["id"] for _, d in pipe.outputs.decisions if d["status"] != "no_content"}
    assert decide.window_pages == len(decided)
    assert decide.waiting == 0 and decide.oldest_wait_s is None  # all decided, nothing held
    assert all(g.boilerplate_blocks is not None for g in sites)
    assert sum(g.boilerplate_blocks or 0 for g in sites) > 0


def test_pending_pages_show_with_the_age_of_the_oldest(pages):
    """Pages of an input partition that is not caught up wait for its watermark: they are held
    at their site partitions (so that each site's learner reads them in clock order), pending."""
    now = [1000.0]
    pipe = LocalPipeline(DedupConfig(), Layout(3), inputs=2, clock=lambda: now[0])
    pipe.feed([orjson.dumps(p) for p in pages[:40]], partition=0)  # partition 1 holds everything back
    pipe.run()
    now[0] += 7.5
    sites = [stage.gauges() for stage in pipe.stages[Stage.SITES]]
    assert sum(g.waiting for g in sites) == 40
    assert max(g.oldest_wait_s or 0.0 for g in sites) == pytest.approx(7.5)
    pipe.idle(1)
    pipe.idle(0)  # its last page is released only once it is known that nothing follows it
    pipe.run()
    assert sum(stage.gauges().waiting for stages in pipe.stages.values() for stage in stages) == 0
    assert len(pipe.outputs.tally.decided) == 40
