"""``stream-lsh run``: broker (embedded unless one is given), topics, workers, feed, outputs.

The workers are child processes (``python -m stream_lsh worker``), each with its own data
directory, as they would run on separate machines. The runner reads the decision and dead-letter
topics as they fill; with ``until_idle`` it stops once every record it fed is accounted for: a
decision for each page, or a dead letter naming its partition and offset. That test uses what has
been read, never the broker's end offsets.

Its live status lines come from the workers' status reports (:mod:`.status`), the numbers
``stream-lsh status`` and each worker's /metrics show; its final summary counts the output topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..core.prepare import Preparer
from ..core.record import InputLine, Rejected
from ..settings import Settings
from .app import state_guard
from .brokers import embedded_broker
from .client import Fed, feed_lines, read_topic
from .connection import KafkaConnection
from .deployment import LatestReports, follow_reports, live_line
from .topics import TopicNames
from .worker import prepare

__all__ = ["LiveLines", "Progress", "Workers", "run_stream"]


@dataclass
class Progress:
    """What has been fed and what has come out; decides when a fed file is fully processed."""

    fed: list[Fed] = field(default_factory=list)
    decisions: dict[str, dict[str, Any]] = field(
        default_factory=dict[str, Any]
    )  # the latest decision per page
    decided: Counter[str] = field(default_factory=Counter)  # decision records per page id
    statuses: Counter[str] = field(default_factory=Counter)
    dead: set[tuple[int, int]] = field(default_factory=set)  # (partition, offset) of dead-lettered inputs
    dead_letters: int = 0
    changed: int = 0  # decisions replaced by a different one: new versions of a page (or a bug)
    started: float = field(default_factory=time.perf_counter)
    first_at: float | None = None  # when the first decision came
    last_at: float | None = None
    alerts: dict[str, dict[str, Any]] = field(default_factory=dict[str, Any])  # by key, in firing order
    dead_letter_records: list[dict[str, Any]] = field(default_factory=list)  # as they came
    refused: list[tuple[InputLine, Rejected]] = field(default_factory=list)  # lines the feeder could not send

    def on_refused(self, line: InputLine, rejected: Rejected) -> None:
        self.refused.append((line, rejected))

    def on_alert(self, key: str, record: dict[str, Any]) -> None:
        self.alerts.setdefault(key, record)  # an alert sent again (after a crash) is the same record

    def alerts_out(self, reports: LatestReports | None, since: float) -> bool:
        """Whether every alert of the fed pages is out: the worker holding the decide partition has
        reported, since ``since`` (wall clock), that its decide partition applied every decision
        to its cluster's spread before a clock past the last fed record's
        (:class:`stream_lsh.pipeline.decide.Decider`)."""
        clocks = [f.clock for f in self.fed if f.clock is not None]
        if not clocks:
            return True
        if reports is None:
            return False
        deciders = [r for r in reports.reports() if r.sent_at >= since and r.partitions.decide]
        return bool(deciders) and all(
            r.backlog.alerts_frontier_ms is not None and r.backlog.alerts_frontier_ms > max(clocks)
            for r in deciders
        )

    def on_decision(self, record: dict[str, Any]) -> None:
        page_id = record["id"]
        self.last_at = time.perf_counter()
        if self.first_at is None:
            self.first_at = self.last_at
        if page_id in self.decisions and self.decisions[page_id] != record:
            self.changed += 1
        if page_id not in self.decisions:
            self.statuses[record["status"]] += 1
        else:
            self.statuses[self.decisions[page_id]["status"]] -= 1
            self.statuses[record["status"]] += 1
        self.decisions[page_id] = record
        self.decided[page_id] += 1

    def on_dead_letter(self, record: dict[str, Any], input_topic: str) -> None:
        self.dead_letters += 1
        self.dead_letter_records.append(record)
        if record.get("topic") == input_topic:  # an undecodable batch: a range of offsets
            last = record.get("last_offset", record["offset"])
            self.dead.update((record["partition"], offset) for offset in range(record["offset"], last + 1))

    def complete(self) -> bool:
        """Every fed page has its decision (one per delivery) or a dead letter; retractions need nothing."""
        needed: Counter[str] = Counter()
        for record in self.fed:
            if record.delete or (record.partition, record.offset) in self.dead:
                continue
            if record.page_id is None:
                return False  # not parseable: it can only end as a dead letter, not seen yet
            needed[record.page_id] += 1
        return all(self.decided[page_id] >= count for page_id, count in needed.items())

    def summary(self) -> str:
        """Counts, and when the first and the last decision came (start-up included).

        Not a rate from the first decision on: in clock order a backlog's decisions are held until
        every partition has spoken, then come all at once, so such a rate would flatter the stream.
        """
        pages, statuses = len(self.decisions), self.statuses
        if self.fed:  # this run's pages: a broker that under-reports its end offsets (Tansu) lets
            # the decisions topic be read from before this run, and those pages are not its own
            ids = {fed.page_id for fed in self.fed if fed.page_id is not None} & self.decisions.keys()
            pages, statuses = len(ids), Counter(self.decisions[page_id]["status"] for page_id in ids)
        text = (
            f"{pages:,} pages decided ({statuses['unique']:,} unique, {statuses['duplicate']:,} "
            f"duplicate, {statuses['no_content']:,} no content), {self.dead_letters:,} dead letters"
        )
        if self.alerts:
            text += f", {len(self.alerts):,} alerts"
        if self.refused:
            refused = len(self.refused)
            text += f", {refused:,} line{'s' if refused > 1 else ''} refused (too large for the input topic)"
        if self.first_at is None or self.last_at is None:
            return f"{text}; waiting for the first decision ({time.perf_counter() - self.started:.1f} s)"
        return (
            f"{text}; the first decision came {self.first_at - self.started:.1f} s after start, "
            f"the last {self.last_at - self.started:.1f} s"
        )


class LiveLines:
    """``run``'s status lines: from the workers' reports once they come, one line per round of
    new reports; before the first, how long it has waited. With reports switched off
    (``STREAM_LSH_STATUS_INTERVAL_S=0``, ``reports`` None): what the output topics hold."""

    def __init__(self, progress: Progress, reports: LatestReports | None) -> None:
        self.progress, self.reports = progress, reports
        self.shown = 0  # reports received when the last line was made

    def next(self) -> str | None:
        """The line to print now, None when nothing has changed since the last one."""
        if self.reports is None:
            return self.progress.summary()
        if not self.reports.by_worker:
            waited = time.perf_counter() - self.progress.started
            return f"waiting for the workers' first status reports ({waited:.1f} s)"
        if self.reports.received == self.shown:
            return None
        self.shown = self.reports.received
        return live_line(self.reports.reports(), time.time())


class Workers:
    """Worker child processes; stopped with SIGTERM (a clean Faust shutdown), then SIGKILL."""

    def __init__(self, settings: Settings, bootstrap: str, count: int, *, first: int = 0) -> None:
        """Start ``count`` workers numbered from ``first`` (worker i: ``<data_dir>/worker-i``)."""
        self.processes: list[subprocess.Popen[bytes]] = []
        base = Path(settings.stream.data_dir)
        base.mkdir(parents=True, exist_ok=True)
        indexes = range(first, first + count)
        self.logs = {index: base / f"worker-{index}.log" for index in indexes}
        for index in indexes:
            env = dict(os.environ)
            env.update(settings.to_environ())
            env["STREAM_LSH_DATA_DIR"] = str(base / f"worker-{index}")
            env["STREAM_LSH_BROKER"] = bootstrap
            if settings.stream.web_port:
                env["STREAM_LSH_WEB_PORT"] = str(settings.stream.web_port + index)
            with open(self.logs[index], "ab") as log:
                self.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "stream_lsh", "worker"],
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )

    def check(self) -> None:
        for (index, log), process in zip(self.logs.items(), self.processes):
            if process.poll() is not None:
                tail = log.read_text(errors="replace").splitlines()[-15:]
                raise RuntimeError(
                    f"worker {index} exited with code {process.returncode}; "
                    f"the end of {log}:\n" + "\n".join(tail)
                )

    def stop(self, timeout: float = 20.0, *, how: signal.Signals = signal.SIGTERM) -> None:
        """Stop every worker with ``how`` (SIGTERM: clean; SIGKILL: a crash), killing laggards."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(how)
        deadline = time.monotonic() + timeout
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def run_stream(
    settings: Settings,
    *,
    workers: int,
    feed: Iterable[bytes] | None,
    until_idle: bool,
    rate: float | None = None,
    on_decision: Callable[[dict[str, Any]], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    status_every: float = 2.0,
    timeout: float | None = None,
    embedded: str = "tansu",
    alerts: bool = False,
    progress: Progress | None = None,
) -> Progress:
    """Run the stream until idle (with ``until_idle``) or until cancelled; returns what came out.

    Without ``settings.stream.broker``, an embedded broker of kind ``embedded`` is started for the run.
    ``on_status`` gets a status line every ``status_every`` seconds, when there is a new one
    (:class:`LiveLines`). With ``alerts``, the alerts topic is read too, and ``until_idle`` also
    waits until the workers report every alert of the fed pages out (status reports must be on).
    ``progress``: where to gather what comes out (a new one if None), which the caller keeps when
    the run is cancelled.
    """
    names = TopicNames.from_settings(settings)
    started = time.time()  # the status reports of this run are those sent from now on
    broker = None if settings.stream.broker else embedded_broker(embedded)
    if broker is not None:
        discard_worker_state(Path(settings.stream.data_dir))
        broker.start()
    bootstrap = settings.stream.broker or broker.bootstrap  # type: ignore[union-attr]
    kafka = KafkaConnection.from_settings(settings, bootstrap)
    pool = feeding = None
    progress = Progress() if progress is None else progress
    reports = LatestReports(since=started) if settings.stream.status_interval_s > 0 else None
    lines = LiveLines(progress, reports)
    try:
        await prepare(settings, bootstrap, state_guard(Preparer(settings.dedup_config()), settings))
        pool = Workers(settings, bootstrap, workers)
        readers = [
            asyncio.create_task(
                _read(
                    kafka,
                    names.decisions,
                    from_start=broker is not None,
                    handle=lambda r: _both(progress.on_decision, on_decision, r),
                )
            ),
            asyncio.create_task(
                _read(
                    kafka,
                    names.dead_letters,
                    from_start=broker is not None,
                    handle=lambda r: progress.on_dead_letter(r, names.input),
                )
            ),
        ]
        if reports is not None:
            readers.append(asyncio.create_task(follow_reports(kafka, names.status, reports)))
        if alerts:
            readers.append(
                asyncio.create_task(
                    _read_keyed(kafka, names.alerts, from_start=broker is not None, handle=progress.on_alert)
                )
            )
        decided_at: float | None = None  # wall clock, when every fed page had its decision
        # fed alongside the loop, so that a paced feed has its status lines as it goes
        if feed is not None:
            feeding = asyncio.create_task(
                feed_lines(
                    kafka,
                    names.input,
                    feed,
                    clock=settings.file_clock(),
                    max_page_bytes=settings.input.max_page_bytes,
                    rate=rate,
                    max_record_bytes=settings.kafka.max_message_bytes,
                    on_refused=progress.on_refused,
                )
            )
        last_status = time.monotonic()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            await asyncio.sleep(0.1)
            pool.check()
            for reader in readers:
                if reader.done():
                    reader.result()  # re-raise what stopped it
            if feeding is not None and feeding.done():
                progress.fed, feeding = feeding.result(), None  # complete() needs all of it
            if on_status is not None and time.monotonic() - last_status >= status_every:
                line = lines.next()
                if line is not None:
                    on_status(line)
                    last_status = time.monotonic()
            if until_idle and feeding is None and progress.complete():
                decided_at = decided_at or time.time()
                if not alerts or progress.alerts_out(reports, since=decided_at):
                    break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the stream did not finish in {timeout} s: {progress.summary()}")
        for reader in readers:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        return progress
    finally:
        if feeding is not None:
            feeding.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feeding
        if pool is not None:
            pool.stop()
        if broker is not None:
            broker.stop()
            broker.cleanup()


def discard_worker_state(data_dir: Path) -> list[Path]:
    """Remove the RocksDB state of earlier runs (``<data_dir>/worker-i``) before an embedded broker
    starts. That broker keeps its topics in memory, so state from a run before it belongs to
    changelogs that no longer exist; Faust would refuse it (its persisted offsets lie beyond the
    new, empty changelogs) and the workers would stop. Logs stay."""
    stale = sorted(path for path in data_dir.glob("worker-*") if path.is_dir()) if data_dir.is_dir() else []
    for path in stale:
        shutil.rmtree(path)
    return stale


async def _read(
    kafka: KafkaConnection, topic: str, *, from_start: bool, handle: Callable[[dict[str, Any]], object]
) -> None:
    async for _, value, _, _ in read_topic(kafka, topic, from_start=from_start, follow=True, idle_ms=200):
        if value is not None:
            handle(orjson.loads(value))


async def _read_keyed(
    kafka: KafkaConnection, topic: str, *, from_start: bool, handle: Callable[[str, dict[str, Any]], None]
) -> None:
    async for key, value, _, _ in read_topic(kafka, topic, from_start=from_start, follow=True, idle_ms=200):
        if key is not None and value is not None:
            handle(key.decode("utf-8", "replace"), orjson.loads(value))


def _both(
    first: Callable[[dict[str, Any]], None],
    second: Callable[[dict[str, Any]], object] | None,
    record: dict[str, Any],
) -> None:
    """A decision record to the progress counter, then to the caller's handler if there is one."""
    first(record)
    if second is not None:
        second(record)
