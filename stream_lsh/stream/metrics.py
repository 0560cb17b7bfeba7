"""What a worker has done, in Prometheus' text format, on its web server's ``/metrics``.

The counters are taken where every output leaves the worker: each outbox the app sends
(:meth:`WorkerMetrics.sent`). So they count records sent, as the output topics receive them: a
decision sent again after a crash (at-least-once, always the same decision) is counted again, and
a consumer of the decisions topic that keeps the latest record per page sees one.

Each worker has its own registry (not the process-global one), so that what it exports is exactly
its own metrics and a test can read them without a web server.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, generate_latest

from ..pipeline.outbox import Outbox

__all__ = ["CONTENT_TYPE", "WorkerMetrics"]

#: Prometheus' text format, version 0.0.4, in UTF-8 (aiohttp takes the charset apart from the type)
CONTENT_TYPE = "text/plain; version=0.0.4"


class WorkerMetrics:
    """The counters of one worker process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.decisions = Counter(
            "stream_lsh_decisions",
            "Decisions sent to the decisions topic, by status (unique, duplicate, no_content)",
            ["status"],
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "stream_lsh_dead_letters",
            "Input records sent to the dead-letter topic, by reason (invalid_json, too_large, ...)",
            ["reason"],
            registry=self.registry,
        )
        self.answers = Counter(
            "stream_lsh_answers",
            "Answers to query-only probes sent to the answers topic",
            registry=self.registry,
        )
        self.unique_pages = Counter(
            "stream_lsh_unique_pages",
            "Pages sent to the unique-pages topic",
            registry=self.registry,
        )

    def sent(self, out: Outbox) -> None:
        """Count the output records of an outbox the app has just sent."""
        for _, decision in out.decisions:
            self.decisions.labels(status=decision["status"]).inc()
        for _, letter in out.dead_letters:
            self.dead_letters.labels(reason=letter["reason"]).inc()
        if out.answers:
            self.answers.inc(len(out.answers))
        if out.unique_pages:
            self.unique_pages.inc(len(out.unique_pages))

    def render(self) -> bytes:
        """The registry in Prometheus' text exposition format."""
        return generate_latest(self.registry)
