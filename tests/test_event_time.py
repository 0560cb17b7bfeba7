"""Event time as real feeds send it: the stream's decisions are batch's, for any mix of dates and any
interleaving (in-process, every stage as the workers run it), and batch does not depend on the day.

What a feed sends (issue 10): dates in every format, none, unreadable ones, wrong years, dates a few
hours ahead, pages days late, whole days sharing one timestamp, and redeliveries. A file is fed as
``stream-lsh produce`` feeds it: each record stamped with the file's clock, so the stream reads it
as batch does; the consumer then sees the input partitions in any interleaving, in micro-batches
of any size, and the stages run in any order.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import orjson
from conftest import prose
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream_lsh.core.dedup import DedupConfig, Deduplicator
from stream_lsh.core.record import Delete, InputLine, parse_record, read_lines
from stream_lsh.pipeline.local import LocalPipeline
from stream_lsh.pipeline.routing import Layout

START = datetime(2026, 11, 1, tzinfo=timezone.utc)
WINDOW_HOURS = 6.0  # short, so that pages leave the window within an example
MAX_BYTES = 10_000_000


@dataclass(frozen=True)
class Feed:
    """A file of pages (JSON lines in file order) and how a consumer meets it."""

    lines: list[bytes]
    layout: Layout
    inputs: int
    seed: int  # the interleaving, micro-batches and stage order


def written(moment: datetime, form: str) -> object:
    """``moment`` as a feed might write it."""
    if form == "iso":
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if form == "offset":
        return moment.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat()
    if form == "rfc2822":
        return format_datetime(moment, usegmt=True)
    if form == "epoch":
        return int(moment.timestamp())
    if form == "epoch_ms":
        return int(moment.timestamp() * 1000)
    return moment.strftime("%Y-%m-%d")  # a date without a time: a whole day shares one timestamp


@st.composite
def feeds(draw: st.DrawFn, *, outlets: bool = False) -> Feed:
    """``outlets``: pages as outlets write them for the boilerplate learner: each site repeats a
    paragraph of its own prose on every page, and carries a story at most once."""
    stories = [prose(900 + i, 120) for i in range(draw(st.integers(2, 5)))]
    sites = [f"site{i}.example" for i in range(draw(st.integers(1, 4)))]
    carried: set[tuple[str, int]] = set()
    received = START
    lines: list[bytes] = []
    ids: list[str] = []
    for number in range(draw(st.integers(1, 45))):
        if lines and draw(st.integers(0, 19)) == 0:  # a redelivery of an earlier line
            lines.append(draw(st.sampled_from(lines)))
            continue
        if ids and draw(st.integers(0, 24)) == 0:  # a retraction of an earlier page
            lines.append(orjson.dumps({"id": draw(st.sampled_from(ids)), "op": "delete"}))
            continue
        received += timedelta(minutes=draw(st.integers(0, 150)))
        kind = draw(
            st.sampled_from(
                [
                    "dated",
                    "dated",
                    "dated",
                    "same",
                    "missing",
                    "unreadable",
                    "2099",
                    "1970",
                    "0001",
                    "hours-ahead",
                    "days-late",
                ]
            )
        )
        published = {
            "dated": received - timedelta(minutes=draw(st.integers(0, 180))),
            "same": received.replace(hour=0, minute=0, second=0),
            "hours-ahead": received + timedelta(hours=draw(st.integers(1, 6))),
            "days-late": received - timedelta(days=draw(st.integers(1, 4))),
        }.get(kind)
        page_id = (
            draw(st.sampled_from(ids)) if ids and draw(st.integers(0, 14)) == 0 else f"p{number}"
        )  # a new version
        ids.append(page_id)
        record: dict[str, object] = {"id": page_id, "source": draw(st.sampled_from(sites))}
        if published is not None:
            record["published_at"] = written(
                published,
                draw(
                    st.sampled_from(
                        ["iso", "offset", "rfc2822", "epoch", "epoch_ms", "date"]
                        if kind != "same"
                        else ["date"]
                    )
                ),
            )
        elif kind != "missing":
            record["published_at"] = {
                "unreadable": "n/a",
                "2099": "2099-03-01T10:00:00Z",
                "1970": "1970-01-01T00:00:00Z",
                "0001": "0001-01-01",
            }[kind]
        story = draw(st.integers(-1, len(stories) - 1))
        if outlets and (record["source"], story) in carried:
            story = -1
        carried.add((record["source"], story))
        if story < 0:
            record["text"] = prose(5000 + number, 120)  # a story of its own
        else:  # a copy: trimmed, sometimes with a line of its own
            words = stories[story].split(" ")
            record["text"] = " ".join(words[: len(words) * draw(st.integers(70, 100)) // 100]) + (
                " " + prose(7000 + number, 12) if draw(st.booleans()) else ""
            )
        if outlets:  # the site's own prose, a block of its own on every page
            record["text"] = f"{record['text']}\n{prose(100 + sites.index(record['source']), 40)}"
        lines.append(orjson.dumps(record))
    inputs = draw(st.integers(1, 4))
    layout = Layout(draw(st.integers(1, 3)))
    return Feed(lines, layout, inputs, draw(st.integers(0, 2**32 - 1)))


def batch_decisions(feed: Feed, config: DedupConfig) -> dict[str, list[dict]]:
    engine = Deduplicator(config)
    out = defaultdict(list)
    for line in read_lines(feed.lines, MAX_BYTES):  # as `dedup` reads a file
        clock = engine.file_clock.tick(line.date, line.site)
        if isinstance(line.parsed, Delete):
            engine.remove(line.parsed.id)
        else:
            decision = engine.process(line.parsed, clock).to_dict()
            out[decision["id"]].append(decision)
    return out


def stream_decisions(feed: Feed, config: DedupConfig, *, by_site: bool) -> dict[str, list[dict]]:
    """The feed through every stage in-process: stamped in file order (as produce does), each
    input partition in file order, the partitions interleaved at random, micro-batches of random
    sizes, the stage partitions run in random order; a partition is caught up (idle after its
    mark) only once it has nothing left."""
    rng = random.Random(feed.seed)
    pipe = LocalPipeline(config, feed.layout, inputs=feed.inputs, rng=rng)
    stamps = pipe.stamp(feed.lines)
    spread = Layout(sites=feed.inputs)
    queues: dict[int, list[tuple[bytes, int]]] = defaultdict(list)
    for line, stamp in zip(feed.lines, stamps):
        site = InputLine(0, line, parse_record(line, MAX_BYTES)).site
        partition = (
            spread.site(site) if by_site else rng.randrange(feed.inputs)
        )  # by_site: as produce sends them
        queues[partition].append((line, stamp))
    for partition in range(feed.inputs):
        if not queues[partition]:
            pipe.idle(partition)
    while any(queues.values()):
        chunk, parts, stamped = [], [], []
        for _ in range(rng.randint(1, 12)):  # one consumer batch: records of one or more partitions
            partition = rng.choice([p for p, queue in queues.items() if queue])
            take = rng.randint(1, 6)
            for line, stamp in queues[partition][:take]:
                chunk.append(line), parts.append(partition), stamped.append(stamp)
            del queues[partition][:take]
            if not any(queues.values()):
                break
        done = {p for p in set(parts) if not queues[p]}
        pipe.feed(chunk, partition=parts, timestamps=stamped, caught_up=done if rng.random() < 0.5 else ())
        if rng.random() < 0.5:
            for partition in sorted(done):
                pipe.idle(partition)  # the idle timer's message, for a partition with nothing left
        for _ in range(rng.randint(0, 30)):
            pipe.step()
    pipe.finish()
    pipe.run()
    out = defaultdict(list)
    for _, decision in pipe.outputs.decisions:
        out[decision["id"]].append(decision)
    return out


def named(decision: dict) -> bytes:
    """A decision with its cluster id up to the suffix of a reused id: a page that founds a cluster
    again is ``id#2`` while a cluster named ``id`` is alive, which batch knows at that moment and a
    stream home learns as joins arrive (README, "What it decides"); who is clustered with whom,
    and every other field, must be the same."""
    cluster = decision["cluster_id"]
    return orjson.dumps(
        {**decision, "cluster_id": None if cluster is None else re.sub(r"#\d+$", "", cluster)}
    )


def assert_same(stream: dict[str, list[dict]], batch: dict[str, list[dict]]) -> None:
    """One decision per delivery, each batch's (a redelivery after its page left the window is
    decided again, in batch too, so one id's decisions may differ: compared as multisets)."""
    assert stream.keys() == batch.keys(), "a page without a decision, or one that came from nowhere"
    for page_id, decisions in stream.items():
        assert len(decisions) == len(batch[page_id]), f"{page_id}: one decision per delivery"
        assert Counter(map(named, decisions)) == Counter(map(named, batch[page_id])), (
            f"{page_id}: {decisions} in the stream, batch {batch[page_id]}"
        )


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(feeds())
def test_any_mix_of_dates_any_interleaving_gives_the_batch_decisions_record_for_record(feed):
    """Without boilerplate learning every decision is batch's: status, cluster, match, similarity,
    and why a date was ignored. Pages of a site may come through any input partitions."""
    config = DedupConfig(boilerplate=False, ttl=WINDOW_HOURS * 3600)
    assert_same(stream_decisions(feed, config, by_site=False), batch_decisions(feed, config))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(feeds(outlets=True))
def test_with_boilerplate_learning_too_whatever_partition_each_page_comes_through(feed):
    """With learning, a site's pages reach its learner from every input partition, interleaved
    at random: the site partition holds them for its release point and learns from them in
    (clock, id) order, as batch does, and a site's learner is its own (nothing it learns reaches
    another site's pages)."""
    config = DedupConfig(ttl=WINDOW_HOURS * 3600)
    assert_same(stream_decisions(feed, config, by_site=False), batch_decisions(feed, config))


FAKE_CLOCK = """
import datetime, os, time
_shift = float(os.environ["FAKE_NOW"]) - time.time()
_time = time.time
time.time = lambda: _time() + _shift
time.time_ns = lambda: int((_time() + _shift) * 1e9)


class _Shifted(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.datetime.fromtimestamp(time.time(), tz)

    @classmethod
    def utcnow(cls):
        return datetime.datetime.utcfromtimestamp(time.time())


datetime.datetime = _Shifted
"""


def test_batch_gives_the_same_decisions_whatever_day_it_runs(tmp_path):
    """The issue's file: dated 2026-11-01 to 2026-11-28, run on 2026-11-24 and a year later, each
    run a process whose wall clock says so from its first line (a sitecustomize shifts time.time
    and datetime.now before anything is imported). The old engine ignored dates over a day ahead
    of the wall clock, so on 2026-11-24 it took the last days' pages for undated and clustered
    them otherwise; now nothing reads the wall clock."""
    import os
    import subprocess
    import sys

    from stream_lsh.synthetic import generate_corpus

    pages = generate_corpus(300, seed=4).pages
    for i, page in enumerate(pages):
        moment = START + timedelta(days=27) * i / len(pages)
        page.pop("date_publish", None)
        page["published_at"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (
        sum(page["published_at"] > "2026-11-25T10:00:00Z" for page in pages) > 20
    )  # a day past the first "today"
    source = tmp_path / "november.jsonl"
    source.write_bytes(b"".join(orjson.dumps(page) + b"\n" for page in pages))
    (tmp_path / "clock").mkdir()
    (tmp_path / "clock" / "sitecustomize.py").write_text(FAKE_CLOCK)
    runs = []
    for today in (
        datetime(2026, 11, 24, 10, tzinfo=timezone.utc),
        datetime(2027, 11, 24, 10, tzinfo=timezone.utc),
    ):
        out = tmp_path / f"decisions-{today.year}.jsonl"
        env = {
            **os.environ,
            "FAKE_NOW": str(today.timestamp()),
            "PYTHONPATH": os.pathsep.join(
                [str(tmp_path / "clock"), *filter(None, [os.environ.get("PYTHONPATH")])]
            ),
        }
        done = subprocess.run(
            [sys.executable, "-c", "import datetime; print(datetime.datetime.now().year)"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == str(today.year)  # the process believes it
        subprocess.run(
            [sys.executable, "-m", "stream_lsh", "dedup", str(source), "-o", str(out)],
            env=env,
            check=True,
            capture_output=True,
        )
        runs.append(out.read_bytes())
    assert runs[0] == runs[1]
