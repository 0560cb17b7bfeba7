"""Workers killed at random moments while pages stream in: one decision per page, the same one
when repeated, batch's clusters. Real broker, real worker processes, real SIGKILL and SIGTERM.

The moments are drawn from a seeded generator over the whole life of a worker: during its
start-up (before it joins the group, ~0-3 s), its group join and recovery (~3-5 s), and steady
work (later). The longer version, many kills and thousands of pages, is
``benchmarks/chaos_rounds.py``.
"""

from __future__ import annotations

import asyncio
import random
import re
import shutil
import signal
from pathlib import Path

import orjson
import pytest
from stream_helpers import batch_reference, stream_settings

from stream_lsh.evaluation import decisions_by_page, pair_scores, repeats_that_differ
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.client import feed_lines, read_topic
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus


async def all_decisions(bootstrap: str, topic: str) -> list[dict]:
    return [
        orjson.loads(v)
        async for _, v, _, _ in read_topic(bootstrap, topic, follow=False, idle_ms=500)
        if v is not None
    ]


async def until_decided(
    bootstrap: str, topic: str, ids: set[str], pools: list[Workers], timeout: float
) -> list[dict]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        for pool in pools:
            pool.check()
        records = await all_decisions(bootstrap, topic)
        if ids <= {r["id"] for r in records} or loop.time() > deadline:
            return records
        await asyncio.sleep(1)


# each scenario on one broker, to keep the suite short; the soak runs every variant on either.
# Boilerplate learning on throughout (each site partition learns in clock order, as batch does).
# Statuses are compared with two workers and a crash too: until the group notices the crash, the
# dead worker's claims that its partitions are caught up stand, but the survivor's end offsets of
# those partitions belie them once pages pile up there (pipeline/order.py), so nothing is released
# past those pages (before, 0-46 of 2,000 statuses changed in kill2 chaos rounds).
@pytest.mark.parametrize(
    "seed, disk, workers, how, kind",
    [
        (1, "keep", 1, signal.SIGKILL, "tansu"),
        (2, "drop", 1, signal.SIGKILL, "kafka"),
        (3, "keep", 2, signal.SIGKILL, "kafka"),
        (8, "keep", 2, signal.SIGTERM, "tansu"),  # fails without a stopping worker's withdrawals
    ],
)
async def test_kills_at_random_moments_change_no_decision(request, tmp_path, seed, disk, workers, how, kind):
    """Three stops (SIGKILL, or SIGTERM: a graceful rebalance) of worker 0 at seeded moments from 0.3
    to 9 s of its life, while pages are fed at ~60/s; its data dir kept or deleted after each stop;
    with two workers, worker 1 runs throughout and takes over worker 0's partitions each time."""
    broker = request.getfixturevalue(f"{kind}_broker")
    rng = random.Random(seed)
    if how == signal.SIGTERM:  # the shape of ../shared/repro/rebalance-handover: real prose in HTML,
        # and a window that holds about a quarter of the feed, so a page that comes late finds its
        # copies gone (unique, no candidates) rather than only swapping with them
        pages, ttl_hours = generate_corpus(600, seed=40 + seed, prose="real").pages, 12.0
    else:
        pages, ttl_hours = generate_corpus(360, seed=40 + seed).pages, None
    overrides = {} if ttl_hours is None else {"ttl_hours": ttl_hours}
    settings = stream_settings(broker, tmp_path, snapshot_mb=0.05, **overrides)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    started: list[Workers] = [Workers(settings, settings.stream.broker, 1, first=1)] if workers == 2 else []
    feed = asyncio.create_task(
        feed_lines(settings.stream.broker, names.input, [orjson.dumps(p) for p in pages], rate=60)
    )
    try:
        for _ in range(3):
            victim = Workers(settings, settings.stream.broker, 1)
            started.append(victim)
            await asyncio.sleep(rng.uniform(0.3, 9.0))
            victim.stop(how=how)
            if disk == "drop":
                shutil.rmtree(Path(settings.stream.data_dir) / "worker-0", ignore_errors=True)
        await feed
        started.append(Workers(settings, settings.stream.broker, 1))
        alive = [pool for pool in started if pool.processes[0].poll() is None]
        records = await until_decided(
            settings.stream.broker, names.decisions, {p["id"] for p in pages}, alive, 120
        )
    finally:
        feed.cancel()
        for pool in started:
            pool.stop()
    by_page = decisions_by_page(records)
    assert set(by_page) == {p["id"] for p in pages}, f"{len(pages) - len(by_page)} pages undecided"
    differing = repeats_that_differ(by_page)
    assert not differing, f"decided differently when repeated: {dict(list(differing.items())[:5])}"
    reference = batch_reference(pages, boilerplate=settings.engine.boilerplate, ttl_hours=ttl_hours)
    truth = {d["id"]: d["cluster_id"] or d["id"] for d in reference}
    final = {page_id: decided[-1]["cluster_id"] or page_id for page_id, decided in by_page.items()}
    assert pair_scores(truth, final).f1 >= 0.99
    changed = {
        d["id"]: (d["status"], by_page[d["id"]][-1]["status"])
        for d in reference
        if d["status"] != by_page[d["id"]][-1]["status"]
    }
    assert not changed, f"{len(changed)} statuses differ from batch's: {dict(list(changed.items())[:5])}"


@pytest.mark.parametrize("kind", ["tansu", "kafka"])
async def test_two_workers_on_a_steady_feed_release_no_page_early(request, tmp_path, kind):
    """Two workers share the input partitions; real prose in HTML comes at ~60 pages/s with the
    file's clock, so every batch leaves its partitions caught up and every mark is an idle claim.
    A page stored in one worker's partition milliseconds before a later page in the other's used
    to come late whenever the other's mark reached the site partitions first: 10-24 pages of the
    first 260 of ../shared/repro/rebalance-handover reached the decide partition behind its release
    point (19-44 in this test). The other worker's end offsets belie such a claim
    (pipeline/order.py): at most the rare page of one worker's own fetch race comes late, and every
    record but those of a late page's cluster equals batch's."""
    broker = request.getfixturevalue(f"{kind}_broker")
    pages = generate_corpus(400, seed=52, prose="real").pages
    settings = stream_settings(broker, tmp_path)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pools = [
        Workers(settings, settings.stream.broker, 1),
        Workers(settings, settings.stream.broker, 1, first=1),
    ]
    try:
        await asyncio.sleep(8)  # both in the group before the first page
        await feed_lines(settings.stream.broker, names.input, [orjson.dumps(p) for p in pages], rate=60)
        records = await until_decided(
            settings.stream.broker, names.decisions, {p["id"] for p in pages}, pools, 120
        )
    finally:
        for pool in pools:
            pool.stop()
    late = {
        page_id
        for pool in pools
        for log in pool.logs.values()
        for line in log.read_text(errors="replace").splitlines()
        if "behind its release point" in line
        for page_id in re.findall(r"'([^']+)'", line.split("batch's:", 1)[-1])
    }
    # before the end offsets: 19-44 late pages a run. What is left is the race of one worker's own
    # fetch, which can read a later record of one of its partitions and the high watermark of
    # another from before an earlier record was stored (docs/architecture.md); rare, and accepted
    assert len(late) <= 2, f"{len(late)} late pages: {sorted(late)[:10]}"
    by_page = decisions_by_page(records)
    assert set(by_page) == {p["id"] for p in pages}
    reference = batch_reference(pages, boilerplate=settings.engine.boilerplate)
    touched = {d["cluster_id"] for d in reference if d["id"] in late} | late  # a late page's cluster
    differ = [
        d["id"]
        for d in reference
        if d != by_page[d["id"]][-1] and d["cluster_id"] not in touched and d["id"] not in touched
    ]
    assert not differ, f"{len(differ)} records differ from batch's, e.g. {differ[:5]}"
