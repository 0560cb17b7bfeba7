"""A worker's /metrics, scraped as Prometheus scrapes it, against what the output topics hold."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections import Counter
from pathlib import Path

import orjson
from prometheus_client.parser import text_string_to_metric_families
from stream_helpers import feed_until_accounted, stream_settings

from stream_lsh.pipeline.outbox import Outbox
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import free_port
from stream_lsh.stream.metrics import WorkerMetrics
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus

BAD = [b"{not json", orjson.dumps({"text": "no id"}), orjson.dumps({"id": "no-body"}), b"[1, 2]"]


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """(sample name, labels) -> value, of a Prometheus text exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def by_label(scraped: dict, name: str, label: str) -> Counter:
    return Counter(
        {dict(labels)[label]: int(value) for (sample, labels), value in scraped.items() if sample == name}
    )


def test_counters_count_what_an_outbox_sends():
    metrics = WorkerMetrics()
    out = Outbox(
        decisions=[
            ("a", {"status": "unique"}),
            ("b", {"status": "duplicate", "match": "opening"}),
            ("c", {"status": "unique", "refused_by": "a", "roundup": True}),
            ("d", {"status": "duplicate", "match": "containment"}),
        ],
        dead_letters=[(None, {"reason": "invalid_json"})],
        answers=[("q", {"id": "q"})],
        unique_pages=[("a", b"{}"), ("c", b"{}")],
    )
    metrics.sent(out)
    scraped = samples(metrics.render().decode())
    assert by_label(scraped, "stream_lsh_decisions_total", "status") == {"unique": 2, "duplicate": 2}
    assert by_label(scraped, "stream_lsh_duplicates_total", "match") == {"opening": 1, "containment": 1}
    assert scraped[("stream_lsh_refused_pages_total", ())] == 1
    assert scraped[("stream_lsh_roundup_pages_total", ())] == 1
    assert by_label(scraped, "stream_lsh_dead_letters_total", "reason") == {"invalid_json": 1}
    assert scraped[("stream_lsh_answers_total", ())] == 1
    assert scraped[("stream_lsh_unique_pages_total", ())] == 2


async def test_the_scraped_counters_equal_the_output_topics(broker, tmp_path):
    """Generated pages and bad lines through one worker: decisions by status and dead letters by
    reason, scraped from its /metrics, equal what the decisions and dead-letter topics hold."""
    pages = generate_corpus(120, seed=23).pages
    port = free_port("127.0.0.1")
    settings = stream_settings(broker, tmp_path, web_port=port)
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pool = Workers(settings, settings.stream.broker, 1)
    try:
        statuses, reasons = await feed_until_accounted(settings, pages, BAD, pool)
        partitions = settings.stream.input_partitions
        deadline = time.monotonic() + 10
        while True:  # the counters move once the broker has acknowledged the sends
            scraped = samples(await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics"))
            got = by_label(scraped, "stream_lsh_decisions_total", "status")
            letters = by_label(scraped, "stream_lsh_dead_letters_total", "reason")
            if (got, letters) == (statuses, reasons) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        assert sum(statuses.values()) == len(pages)
        assert got == statuses
        assert letters == reasons and sum(reasons.values()) == len(BAD)
        decided = sum(statuses.values())
        assert total(scraped, "stream_lsh_duplicates_total") == statuses["duplicate"]
        assert scraped[("stream_lsh_inputs_total", (("kind", "page"),))] == len(pages)
        assert scraped[("stream_lsh_decision_latency_seconds_count", ())] == decided
        assert scraped[("stream_lsh_event_time_latency_seconds_count", ())] == decided
        assert scraped[("stream_lsh_candidates_per_page_count", ())] == decided
        assert scraped[("stream_lsh_assigned_partitions", (("topic", names.input),))] == partitions
        kept = statuses["unique"] + statuses["duplicate"]  # the window holds every decided page with content
        assert total(scraped, "stream_lsh_window_pages", stage="decide") == kept
        for backlog in ("stream_lsh_pending_pages", "stream_lsh_input_lag_records"):
            assert total(scraped, backlog) == 0, backlog
        assert scraped[("stream_lsh_ready", ())] == 1 and scraped[("stream_lsh_live", ())] == 1
        assert orjson.loads(
            await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/ready", "application/json")
        ) == {
            "ready": True,
            "reasons": [],
        }
        assert orjson.loads(
            await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/live", "application/json")
        ) == {
            "live": True,
            "reasons": [],
        }
    finally:
        pool.stop()


def total(scraped: dict, name: str, **labels: str) -> float:
    """The sum of a metric's samples over the labels not given."""
    return sum(
        value
        for (sample, sample_labels), value in scraped.items()
        if sample == name and labels.items() <= dict(sample_labels).items()
    )


def _get(url: str, content_type: str = "text/plain") -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith(content_type)
        return response.read().decode()


def test_the_readme_explains_every_metric():
    """Each metric a worker exports has its line in docs/operating.md's "Operating it" table."""
    operating = (Path(__file__).parents[1] / "docs" / "operating.md").read_text()
    section = operating[operating.index("## Operating it") :]
    for family in WorkerMetrics().registry.collect():
        name = f"{family.name}_total" if family.type == "counter" else family.name
        assert f"`{name}`" in section, f"{name} is not in docs/operating.md's Operating it section"
