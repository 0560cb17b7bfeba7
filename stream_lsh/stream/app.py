"""The Faust app: one agent per stage, each moving the stage's outbox onto the next topics.

The stages themselves are the pure state machines of :mod:`stream_lsh.pipeline`; this module only
decodes micro-batches from Kafka, hands them to the stage object of their partition, and sends what
comes back. Every send of a batch is awaited before the agent takes the next one, so by the time
Faust commits an input offset, everything it caused is on the broker (at-least-once; the stages
make repeats harmless). What the worker says of its input partitions for clock order (idle, caught
up, withdrawn) is :mod:`.claims`'s.

After the sends, each stage partition journals the batch it handled in its RocksDB-backed table
(:mod:`stream_lsh.stream.state`): one row per partition per batch, snapshots now and then. So
"journaled" implies "its outputs are on the broker", and a restart replays exactly the handled
batches; the ones after the last commit come again from Kafka and the stages treat them as repeats.
The rows' changelog messages are acknowledged before the agent takes the next batch, so a
committed input offset always has its rows in the changelog, whatever becomes of the disk.

A failed send or table write must not be followed by a commit of the input (Faust would commit it:
an exception in an agent acks the event). Any error in a batch therefore ends the process with
exit code 70 after logging it (:mod:`.batch_failure`), and the input is redelivered to whoever
runs the partition next.
Brokers that went away are not such an error until ``STREAM_LSH_SEND_TIMEOUT_S`` has passed: sends
and journal rows are retried meanwhile, so a shorter outage is ridden out (docs/architecture.md,
"Broker outages").

Agents run with ``concurrency=1``: they own per-partition state, and faust-streaming #606 loses
messages when a stateful agent runs concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import faust
import orjson
from faust.types import TP

from ..core.prepare import Preparer
from ..pipeline import codec
from ..pipeline.ingest import Ingest, Message
from ..pipeline.limits import RecordLimit
from ..pipeline.outbox import Outbox, Stage
from ..pipeline.stages import stage_factories
from ..pipeline.telemetry import Gauged
from ..settings import Settings, SettingsError
from .batch_failure import or_exit
from .claims import InputClaims, fetched_within
from .connection import KafkaConnection
from .consumer import RewindingTransport
from .health import AgentWatch, LoopPauses
from .metrics import CONTENT_TYPE, PartitionReading, WorkerMetrics, WorkerReading
from .recovery import SafeRecovery, SafeTableManager
from .state import StageStore
from .status import StatusPublisher
from .store import STORE_URL
from .topics import TopicNames, clock_of_message, layout_of
from .undecodable import undecodable_of
from .window_store import WindowStore

__all__ = ["StreamApp", "faust_broker_url", "stage_inputs", "state_guard", "transport_settings"]

log = logging.getLogger(__name__)

MAX_WAIT_REPORTS = 10  # log lines per check of the pending guard; the rest are counted
HEALTH_EVERY_S = 1.0  # how often readiness, liveness and the event loop's lag are checked
FETCHING_WITHIN_S = 10.0  # ready: a fetch of an assigned partition was answered this recently
STUCK_AFTER_SEND_TIMEOUT_S = 60.0  # default liveness bound: the send timeout plus this


def faust_broker_url(bootstrap: str) -> str:
    """``host:port,host:port`` -> Faust's ``kafka://host:port;host:port``."""
    hosts = [h.strip() for h in bootstrap.split(",") if h.strip()]
    if not hosts:
        raise SettingsError("no broker given (STREAM_LSH_BROKER or --broker)")
    return "kafka://" + ";".join(hosts)


def state_guard(preparer: Preparer, settings: Settings) -> dict[str, Any]:
    """What stored state depends on: signatures (the scheme), band keys (the banding) and where
    sites' learners live (the site partitions). Stored with every partition's state and checked
    on load."""
    banding = preparer.banding
    guard = {
        "scheme": preparer.scheme.fingerprint,
        "scheme_params": preparer.scheme.to_dict(),
        "banding": [banding.bands, banding.rows],
        "layout": [settings.stream.site_partitions],
    }
    if stage_inputs(settings) is not None:  # the stages count watermarks per input partition
        guard["order"] = ["clock", stage_inputs(settings)]
    return guard


def stage_inputs(settings: Settings) -> int | None:
    """What the stages count watermarks over: the input partitions under clock order."""
    return settings.stream.input_partitions if settings.stream.order == "clock" else None


def transport_settings(settings: Settings, bootstrap: str) -> dict[str, Any]:
    """Faust settings of how a worker talks to Kafka (the benchmark's bare agent uses them too)."""
    return dict(
        broker=faust_broker_url(bootstrap),
        broker_credentials=KafkaConnection.from_settings(settings, bootstrap).faust_credentials(),
        consumer_auto_offset_reset="earliest",
        # a first JoinGroup otherwise waits out the 60 s rebalance timeout on a fresh group
        broker_rebalance_timeout=4.0,
        broker_session_timeout=6.0,
        broker_heartbeat_interval=1.0,
        broker_commit_interval=1.0,
        # how long a send waits for a broker that went away (a restart, an outage): the records
        # are retried meanwhile; past it the send fails, and _or_exit stops the worker before the
        # batch's input is committed. The journal rows wait as long (StageStore).
        producer_request_timeout=settings.kafka.send_timeout_s,
        stream_buffer_maxsize=max(2 * settings.stream.batch_size, 256),
        producer_max_request_size=settings.kafka.max_message_bytes,
        producer_compression_type=settings.kafka.compression.codec,
        consumer_max_fetch_size=max(2 * settings.input.max_page_bytes, 1_048_576),
        topic_allow_declare=False,
    )


class StreamApp:
    """A Faust app wired to the pipeline stages; ``app`` is what a worker runs."""

    def __init__(self, settings: Settings, bootstrap: str) -> None:
        if settings.engine.verify != "signature":
            raise SettingsError(
                "the stream verifies candidates by signature agreement (verify=signature); "
                "verify=jaccard needs shingle sets, which the decide partition's window does not keep"
            )
        self.settings = settings
        self.names = TopicNames.from_settings(settings)
        self.layout = layout_of(settings)
        self.preparer = Preparer(settings.dedup_config())
        ordered = settings.stream.order == "clock"  # watermarks: see stream_lsh.pipeline.order
        self.limit = RecordLimit(settings.kafka.max_message_bytes)
        self.ingest = Ingest(
            self.preparer,
            self.layout,
            max_page_bytes=settings.input.max_page_bytes,
            watermarks=ordered,
            lateness=settings.stream.lateness_s,
            limit=self.limit,
        )
        self._make = stage_factories(
            self.preparer,
            self.layout,
            stage_inputs(settings),
            int(settings.stream.lateness_s * 1000),
            alerts=settings.engine.alert_rules(),
            windows=self._window_dir,
            cache_bytes=settings.engine.state_cache_mb << 20,
        )
        self.guard = state_guard(self.preparer, settings)
        self.metrics = WorkerMetrics()
        self.metrics.read_from(self._reading)
        stuck_after = settings.stream.stuck_after_s
        if stuck_after is None:
            stuck_after = settings.kafka.send_timeout_s + STUCK_AFTER_SEND_TIMEOUT_S
        self.watch = AgentWatch(stuck_after)
        self._consuming = False
        self._joined = False  # has had an assignment (perhaps empty: more workers than partitions)
        self._loop_lag_s = 0.0
        self._checked_at: float | None = None
        self.agents: dict[str, Any] = {}  # agent name -> faust agent
        self.app = self._build_app(bootstrap)
        self.stores: dict[str, StageStore] = {
            stage: (WindowStore if stage == Stage.DECIDE else StageStore)(
                self.app,
                stage,
                self.layout.partitions(stage),
                self._make[stage],
                self.guard,
                compact_bytes=max(1, int(settings.stream.snapshot_mb * (1 << 20))),
                chunk_bytes=min(512 << 10, self.limit.batch_bytes),
                row_timeout_s=settings.kafka.send_timeout_s,
                on_snapshot=self.metrics.snapshots.labels(stage=stage).observe,
                **({"windows": self._window_dir} if stage == Stage.DECIDE else {}),
            )
            for stage in Stage.ALL
        }
        self.claims = InputClaims(
            self.app,
            self.names.input,
            self.ingest,
            self._send,
            inputs=settings.stream.input_partitions,
            idle_s=settings.stream.idle_ms / 1000.0,
            fetch_wait_s=settings.stream.fetch_wait_ms / 1000.0,
        )
        # faust types its receivers with a keyword-only ``signal``, which these take in ``**_``
        self.app.on_partitions_revoked.connect(self._on_revoked)  # type: ignore[arg-type]
        self.app.on_partitions_assigned.connect(self._on_assigned)  # type: ignore[arg-type]
        self.app.when_stopping = self._on_stopping
        self._declare_agents()
        if ordered:
            self.app.timer(settings.stream.idle_ms / 2000.0, name="idle-inputs")(self.claims.declare_idle)
        self.app.timer(min(1.0, settings.stream.pending_alert_s / 2), name="pending-guard")(
            self._report_stuck_waits
        )
        self.app.timer(HEALTH_EVERY_S, name="health")(self._check_health)
        self.pauses = LoopPauses(self.metrics.loop_pauses.observe)
        self.app.task(self.pauses.run)
        self.status = StatusPublisher(settings, self.metrics)
        if settings.stream.status_interval_s > 0:  # the first at once, then one per interval
            self.app.task(self._publish_status)
            self.app.timer(settings.stream.status_interval_s, name="status-report")(self._publish_status)

    def _window_dir(self, partition: int) -> Path:
        """Where a decide partition's window lives on this worker's disk (beside Faust's tables)."""
        return Path(self.app.conf.tabledir) / f"decide-window-{partition}"

    async def _on_revoked(self, app: Any, revoked: Any, **_: Any) -> None:
        for store in self.stores.values():
            store.forget()  # rebuilt from RocksDB when their partitions' records come again
        self.claims.forget()
        await self.claims.changed_hands(revoked)

    async def _on_assigned(self, app: Any, assigned: Any, **_: Any) -> None:
        self._joined = True
        generation = getattr(app, "consumer_generation_id", None)  # faust sets it before this signal
        inputs = stage_inputs(self.settings)
        if inputs is not None and isinstance(generation, int) and generation >= 0:
            await self.claims.assigned(generation, inputs)  # every older claim, the taken-over too
        else:
            await self.claims.changed_hands(assigned)

    async def _on_stopping(self) -> None:
        await self.claims.withdraw_on_stop(self._assigned())

    async def _report_stuck_waits(self) -> None:
        """The guard of docs/architecture.md ("Liveness"): every page whose decision has waited
        longer than ``STREAM_LSH_PENDING_ALERT_S`` on something that has not moved for as long is
        logged once, with what it waits for."""
        waits = [
            wait
            for store in self.stores.values()
            for stage in store.loaded()
            if hasattr(stage, "stalled")
            for wait in stage.stalled(self.settings.stream.pending_alert_s)
        ]
        if waits:
            self.metrics.stuck_pages.inc(len(waits))
        for wait in waits[:MAX_WAIT_REPORTS]:
            log.warning(
                "%s",
                wait.describe(),
                extra={"stage": wait.stage, "partition": wait.partition, "page_id": wait.page_id},
            )
        if len(waits) > MAX_WAIT_REPORTS:
            log.warning(
                "... and %d more pages undecided for over %g s",
                len(waits) - MAX_WAIT_REPORTS,
                self.settings.stream.pending_alert_s,
            )

    async def _publish_status(self) -> None:
        """This worker's status report, for `stream-lsh status` and `run` (stream/status.py): built
        from its metrics, sent on its own timer; a send that fails or hangs is logged, not raised."""
        await self.status.publish(self.app)

    # -- the Faust app -------------------------------------------------------------------------
    def _build_app(self, bootstrap: str) -> _StoppingApp:
        s = self.settings.stream
        app = _StoppingApp(
            s.app_id,
            datadir=s.data_dir,
            store=STORE_URL,  # Faust's RocksDB store, rebuilt from the changelog when damaged
            web_enabled=s.web_port > 0,
            web_port=s.web_port or 6066,
            web_bind=s.web_bind,
            # only the pages the README documents: Faust's /router/ would list every worker's host
            # and partitions, its /table/, /graph and /stats/ more internals, to anyone on the port
            web_tables_enabled=False,
            web_router_enabled=False,
            web_graph_enabled=False,
            web_stats_enabled=False,
            web_metrics_enabled=False,
            table_standby_replicas=s.standby_replicas,
            TableManager=SafeTableManager,  # recovery reads changelogs to their true end (Tansu)
            **transport_settings(self.settings, bootstrap),
        )
        # before anything reads the app's topics: partitions never committed are read again after a rebalance
        app.transport = RewindingTransport(app.conf.broker_consumer, app)
        if s.web_port > 0:
            app.page("/metrics", name="metrics")(_metrics_page(self.metrics))
            app.page("/ready", name="ready")(_health_page("ready", self._not_ready_because))
            app.page("/live", name="live")(_health_page("live", self._stuck_because))
        return app

    # -- health and gauges -----------------------------------------------------------------------
    @property
    def _recovery(self) -> SafeRecovery:
        return self.app.tables.recovery  # type: ignore[attr-defined,no-any-return]  # SafeTableManager's

    async def _check_health(self) -> None:
        """Once a second: the event loop's lag (how late this timer fires), and whether consuming
        has resumed (the agents' clocks of :class:`AgentWatch` restart then)."""
        now = time.monotonic()
        if self._checked_at is not None:
            self._loop_lag_s = max(0.0, now - self._checked_at - HEALTH_EVERY_S)
        self._checked_at = now
        consuming = self._is_consuming()
        if consuming and not self._consuming:
            self.watch.resumed()
        self._consuming = consuming

    def _is_consuming(self) -> bool:
        return bool(self.app.flow_control.is_active() and not self.app.rebalancing)

    def _stuck_because(self) -> list[str]:
        """Why the worker is not live: agents stuck while consuming. Empty when it is live."""
        return self.watch.stuck(self._waiting()) if self._consuming and self._is_consuming() else []

    def _not_ready_because(self) -> list[str]:
        """Why the worker is not ready: it has not joined the group yet, is rebalancing or
        recovering its state, or has not heard from the brokers lately. Empty when it is ready.

        An empty assignment after joining is ready: a spare worker (more workers than partitions)
        that was never ready would stall a rolling update and block node drains."""
        reasons = []
        assigned = self._assigned()
        recovery = self._recovery
        if not self._joined:
            reasons.append("not in the consumer group yet")
        if self.app.rebalancing:
            reasons.append("rebalancing")
        if recovery.in_recovery:
            reasons.append(f"recovering state: {recovery.active_remaining_total()} changelog records to go")
        elif not recovery.completed.is_set():
            reasons.append("recovering state: not started yet")
        elif not self.app.flow_control.is_active():
            reasons.append("not consuming")
        if assigned and not any(fetched_within(self.app, tp, FETCHING_WITHIN_S) for tp in assigned):
            reasons.append(f"no fetch answered in the last {FETCHING_WITHIN_S:g} s")
        return reasons

    def _assigned(self) -> set[TP]:
        """The partitions assigned to this worker now; none before its consumer exists."""
        try:
            return set(self.app.consumer.assignment())
        except Exception:
            return set()

    def _waiting(self) -> dict[str, bool]:
        """Per agent, whether records are queued for it."""
        waiting = {}
        for name, agent in self.agents.items():
            try:
                waiting[name] = agent.channel_iterator.queue.qsize() > 0
            except Exception:
                waiting[name] = False
        return waiting

    def _reading(self) -> WorkerReading:
        """The gauges of a scrape."""
        partitions = [
            PartitionReading(
                stage,
                partition,
                cast(Gauged, machine).gauges(),
                journal.snapshot_bytes,
                journal.segment_bytes,
            )
            for stage, store in self.stores.items()
            for partition, machine, journal in store.partitions()
        ]
        assigned: dict[str, int] = {}
        lag: dict[int, int] = {}
        recovery = self._recovery
        for tp in self._assigned():
            assigned[tp.topic] = assigned.get(tp.topic, 0) + 1
            if tp.topic == self.names.input:
                lag[tp.partition] = self.claims.lag(tp)
        return WorkerReading(
            partitions=partitions,
            input_lag=lag,
            assigned=assigned,
            recovering=bool(recovery.in_recovery),
            recovery_expected=recovery.expected_records,
            recovery_remaining=recovery.active_remaining_total() if recovery.in_recovery else 0,
            ready=not self._not_ready_because(),
            live=not self._stuck_because(),
            loop_lag_s=self._loop_lag_s,
            longest_pause_s=self.pauses.longest_s,
        )

    def _declare_agents(self) -> None:
        s = self.settings.stream
        within = s.batch_wait_ms / 1000.0
        entry = s.ingest_wait_ms / 1000.0  # the input's batches set the size of every batch downstream

        async def ingest_pages(stream: Any) -> None:
            async for events in stream.take_events(s.batch_size, within=entry):
                with self.watch.batch("ingest-pages"):
                    messages = [_message(e) for e in events]
                    async with self.claims.lock:  # its caught-up marks are idle claims
                        await self.claims.withdraw_belied(messages)
                        caught_up = self.claims.caught_up(messages)
                        ends = await self.claims.ends_elsewhere()
                        self.claims.heard(messages, caught_up)
                        await or_exit(self._send(self.ingest.pages(messages, caught_up, ends)))
                        self.claims.sent(messages)

        async def ingest_queries(stream: Any) -> None:
            async for events in stream.take_events(s.batch_size, within=entry):
                with self.watch.batch("ingest-queries"):
                    await or_exit(self._send(self.ingest.queries([_message(e) for e in events])))

        self._agent(self.names.input, "ingest-pages", ingest_pages)
        self._agent(self.names.queries, "ingest-queries", ingest_queries)
        for stage in Stage.ALL:
            self._agent(self.names.internal(stage), f"stage-{stage}", self._stage_agent(stage, within))

    def _agent(self, topic: str, name: str, run: Callable[[Any], Awaitable[None]]) -> None:
        """One agent over raw records of ``topic`` (concurrency 1: see the module docstring)."""
        raw: dict[str, Any] = {
            "key_type": bytes,
            "value_type": bytes,
            "key_serializer": "raw",
            "value_serializer": "raw",
            "allow_empty": True,
        }
        self.agents[name] = self.app.agent(self.app.topic(topic, **raw), name=name, concurrency=1)(run)

    def _stage_agent(self, stage: str, within: float) -> Callable[[Any], Awaitable[None]]:
        store = self.stores[stage]
        batch = self.settings.stream.batch_size

        async def run(stream: Any) -> None:
            async for events in stream.take_events(batch, within=within):
                with self.watch.batch(f"stage-{stage}"):
                    await or_exit(self._handle(stage, store, events))

        return run

    async def _handle(self, stage: str, store: StageStore, events: list[Any]) -> None:
        """Handle one micro-batch of a stage, send what it caused, then journal it."""
        by_partition: dict[int, list[Any]] = {}
        for event in events:
            by_partition.setdefault(event.message.partition, []).append(event)
        held = await store.open(by_partition)
        by_partition = {
            partition: fresh
            for partition, group in by_partition.items()
            if partition in held and (fresh := store.unhandled(partition, group))
        }
        out = Outbox()
        states = {}
        for partition, group in by_partition.items():
            messages = [message for event in group for message in codec.decode(stage, event.message.value)]
            states[partition] = store.state(partition)
            out.extend(states[partition].handle(messages))
        await self._send(out)
        for partition, group in by_partition.items():
            store.record(partition, states[partition], group[-1], [event.message.value for event in group])
        await store.durable()  # before Faust may commit the batch's input

    # -- sending an outbox -----------------------------------------------------------------------
    def _records(self, section: dict[str, dict[int, list[Any]]]) -> Iterator[tuple[str, int, bytes]]:
        """The records of a section of an outbox: a stage partition's messages in as few records
        as the message limit allows, in order (stream_lsh.pipeline.limits)."""
        for stage, parts in section.items():
            for partition, messages in parts.items():
                if messages:
                    for record in codec.encode_within(messages, self.limit.batch_bytes):
                        yield stage, partition, record

    async def _send(self, out: Outbox) -> None:
        if out.is_empty():
            self.metrics.sent(out)  # its tally (a batch of held probes, say)
            return
        producer = self.app.producer
        first = [
            await producer.send(self.names.internal(stage), None, record, partition, None, None)
            for stage, partition, record in self._records(out.first)
        ]
        if first:
            await asyncio.gather(*first)
        pending: list[Awaitable[Any]] = [
            await producer.send(self.names.internal(stage), None, record, partition, None, None)
            for stage, partition, record in self._records(out.internal)
        ]
        for topic, items in (
            (self.names.decisions, out.decisions),
            (self.names.answers, out.answers),
            (self.names.clusters, out.clusters),
            (self.names.alerts, out.alerts),
            (self.names.dead_letters, out.dead_letters),
        ):
            for key, value in items:
                pending.append(
                    await producer.send(
                        topic, _key(key), None if value is None else orjson.dumps(value), None, None, None
                    )
                )
        for key, raw in out.unique_pages:
            pending.append(await producer.send(self.names.unique, _key(key), raw, None, None, None))
        if pending:
            await asyncio.gather(*pending)
        self.metrics.sent(out)
        if out.tally.late_ids:
            _report_late(out.tally.late_ids)


def _report_late(ids: list[str]) -> None:
    """Pages the decide partition applied behind its release point: decided after pages of later
    clocks, so their decisions may differ from batch's (docs/operating.md, "The stream")."""
    shown = ", ".join(repr(page_id) for page_id in ids[:MAX_WAIT_REPORTS])
    more = f" and {len(ids) - MAX_WAIT_REPORTS} more" if len(ids) > MAX_WAIT_REPORTS else ""
    log.warning(
        "%d page%s reached the decide partition behind its release point and were decided on "
        "arrival, after pages of later clocks; their decisions may differ from batch's: %s%s",
        len(ids),
        "" if len(ids) == 1 else "s",
        shown,
        more,
        extra={"stage": Stage.DECIDE, "page_id": ids[0]},
    )


class _StoppingApp(faust.App):
    """Faust's app, with a step that runs when it begins to stop: before its consumer is stopped
    and while its producer still sends (``App.on_stop`` stops reading first, then signals
    ``on_before_shutdown``, then flushes the producer)."""

    when_stopping: Callable[[], Awaitable[None]] | None = None

    async def on_stop(self) -> None:
        if self.when_stopping is not None:
            await self.when_stopping()
        await super().on_stop()


def _metrics_page(metrics: WorkerMetrics) -> Callable[[Any, Any], Awaitable[Any]]:
    """``GET /metrics``: this worker's counters (a Faust view handler: the view, then the request)."""

    async def get(view: Any, request: Any) -> Any:
        return view.bytes(metrics.render(), content_type=CONTENT_TYPE)

    return get


def _health_page(name: str, reasons: Callable[[], list[str]]) -> Callable[[Any, Any], Awaitable[Any]]:
    """``GET /ready`` or ``GET /live``: 200 and ``{"<name>": true}``, or 503 with the reasons."""

    async def get(view: Any, request: Any) -> Any:
        why = reasons()
        return view.json({name: not why, "reasons": why}, status=503 if why else 200)

    return get


def _key(key: str | None) -> bytes | None:
    return None if key is None else key.encode("utf-8")


def _message(event: Any) -> Message:
    message = event.message
    timestamp = 0 if message.timestamp is None else round(message.timestamp * 1000)  # Faust gives seconds
    clock = clock_of_message(timestamp, message.headers)
    undecodable = undecodable_of(message.value, message.headers)
    return Message(
        message.topic,
        message.partition,
        message.offset,
        message.key,
        message.value,
        clock,
        undecodable,
        timestamp,
    )
