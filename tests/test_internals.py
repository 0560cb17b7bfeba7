"""The faust-streaming, aiokafka and mode internals that stream_lsh/stream patches or relies on.

stream_lsh/stream overrides private methods, reads private attributes and subclasses internal
classes of its Kafka stack (see the modules named below for why). pyproject.toml pins upper bounds
on these dependencies for that reason; when raising one, this test says what to re-check: each
entry names an internal, where stream_lsh uses it, and checks what that use needs (the name exists,
an overridden or called method still takes the parameters stream_lsh passes, an attribute is still
set on a real object). It does not prove the behaviour is unchanged: a failure, or a new release,
means reading the named module's docstring and the library's code again.

Everything is built for real but never started: no broker is needed.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

FAUST, AIOKAFKA, MODE = "faust-streaming", "aiokafka", "mode-streaming"
FA = "faust.transport.drivers.aiokafka"
FC = "faust.transport.consumer"
AF = "aiokafka.consumer.fetcher"


def resolve(path: str) -> Any:
    """``"package.module:Class.attr"`` -> that object, imported now (a missing one fails its entry only).

    Functions that stream_lsh.stream.fetch_wait and metadata_backoff patched in this process
    (tests/test_recovery.py and tests/test_broker_outages.py run them), and the class
    stream_lsh.stream.undecodable replaced, resolve to the originals they saved, so the checks
    always see the library's own code."""
    module, _, attrs = path.partition(":")
    obj = importlib.import_module(module)
    for name in filter(None, attrs.split(".")):
        obj = getattr(obj, name)
    if getattr(obj, "__module__", None) == "stream_lsh.stream.undecodable":
        from stream_lsh.stream import undecodable

        obj = undecodable._ORIGINAL
    if getattr(obj, "__module__", None) == "stream_lsh.stream.metadata_backoff":
        from stream_lsh.stream import metadata_backoff

        obj = metadata_backoff._ORIGINAL
    if getattr(obj, "__module__", None) == "stream_lsh.stream.fetch_wait":
        from stream_lsh.stream import fetch_wait

        originals = {"create_worker_consumer": fetch_wait._ORIGINAL, "getmany": fetch_wait._ORIGINAL_GETMANY}
        obj = originals[obj.__name__]
    return obj


# -- checks -----------------------------------------------------------------------------------


def store_url_resolves() -> None:
    """Faust resolves the app's store URL to the rebuilding store."""
    from faust.stores import by_url

    from stream_lsh.stream.store import STORE_URL, RebuildingStore

    assert by_url(STORE_URL) is RebuildingStore


def params(path: str, *expected: str) -> Callable[[], None]:
    """The function takes exactly these parameters, in this order."""

    def check() -> None:
        got = tuple(inspect.signature(resolve(path)).parameters)
        assert got == expected, f"{path} takes {got}, stream_lsh expects {expected}"

    return check


def source_has(path: str, *snippets: str) -> Callable[[], None]:
    """The function's code still contains these (what stream_lsh's patch hooks into)."""

    def check() -> None:
        code = inspect.getsource(resolve(path))
        missing = [s for s in snippets if s not in code]
        assert not missing, f"{path} no longer contains {missing}"

    return check


def same(path: str, other: str) -> Callable[[], None]:
    def check() -> None:
        assert resolve(path) is resolve(other), f"{path} is no longer {other} (overridden or replaced)"

    return check


def property_on(path: str, *, setter: bool = False) -> Callable[[], None]:
    def check() -> None:
        owner, _, name = path.rpartition(".")
        found = inspect.getattr_static(resolve(owner), name)
        assert isinstance(found, property), f"{path} is a {type(found).__name__}, not a property"
        assert not setter or found.fset is not None, f"{path} has no setter"

    return check


def with_app(check: Callable[[Any], Any], **options: str) -> Callable[[], None]:
    """``check(app)`` on a real faust App (never started), in an event loop of its own; the
    options are faust settings given as paths of the objects to pass."""

    def run() -> None:
        async def main() -> None:
            import faust

            app = faust.App(
                "stream-lsh-internals",
                broker="kafka://127.0.0.1:9",
                **{key: resolve(value) for key, value in options.items()},
            )
            result = check(app)
            if inspect.isawaitable(result):
                await result
            app.consumer._thread.thread_loop.close()  # mode made it for the consumer's thread, never started

        asyncio.run(main())

    return run


def with_aiokafka_consumer(check: Callable[[Any], None]) -> Callable[[], None]:
    """``check(consumer)`` on a real AIOKafkaConsumer, never started."""

    def run() -> None:
        async def main() -> None:
            consumer = resolve("aiokafka:AIOKafkaConsumer")(bootstrap_servers="127.0.0.1:9")
            try:
                check(consumer)
            finally:
                await consumer.stop()

        asyncio.run(main())

    return run


def response_fields(prefix: str, module: str, *needed: str) -> Callable[[], None]:
    """Every version of an aiokafka protocol response has these fields in its ``to_object()``."""

    def paths(schema: Any, above: str = "") -> set[str]:
        found = set()
        for name, field in zip(schema.names, schema.fields):
            found.add(above + name)
            inner = getattr(field, "array_of", field)
            if hasattr(inner, "names"):
                found |= paths(inner, above + name + ".")
        return found

    def check() -> None:
        versions = {
            name: cls
            for name, cls in vars(importlib.import_module(module)).items()
            if name.startswith(prefix)
        }
        assert versions, f"{module} has no {prefix}* classes"
        for name, cls in sorted(versions.items()):
            assert callable(getattr(cls, "to_object", None)), f"{name} has no to_object()"
            missing = sorted(set(needed) - paths(cls.SCHEMA))
            assert not missing, f"{name}.to_object() has no {missing}"

    return check


# -- checks that need real objects ---------------------------------------------------------------


async def worker_consumer_is_aiokafkas(app: Any) -> None:
    """The original builds an AIOKafkaConsumer whose _fetch_max_wait_ms the patch can overwrite."""
    make = resolve(f"{FA}:AIOKafkaConsumerThread._create_worker_consumer")
    consumer = make(app.consumer._thread, app.transport)
    try:
        assert isinstance(consumer, resolve("aiokafka:AIOKafkaConsumer")), f"it built a {type(consumer)!r}"
        assert hasattr(consumer, "_fetch_max_wait_ms"), "the consumer it builds has no _fetch_max_wait_ms"
    finally:
        await consumer.stop()


def fetch_wait_slot(consumer: Any) -> None:
    assert hasattr(consumer, "_fetch_max_wait_ms"), "AIOKafkaConsumer instances have no _fetch_max_wait_ms"


def client_of(consumer: Any) -> None:
    client = consumer._client
    assert isinstance(client, resolve("aiokafka.client:AIOKafkaClient")), f"_client is a {type(client)!r}"


def retry_backoff_of_client(consumer: Any) -> None:
    backoff = getattr(consumer._client, "_retry_backoff", None)
    assert isinstance(backoff, float) and backoff > 0, f"AIOKafkaClient._retry_backoff is {backoff!r}"


def committed_offsets(app: Any) -> None:
    offsets = app.consumer._committed_offset
    assert isinstance(offsets, Mapping), f"a {type(offsets)!r}, not a mapping of TP -> offset"


def consumer_thread(app: Any) -> None:
    thread = app.consumer._thread
    assert isinstance(thread, resolve(f"{FA}:AIOKafkaConsumerThread")), f"a {type(thread)!r}"


def rewinding_transport(app: Any) -> None:
    """What app.py does: faust then builds its consumer from the transport's Consumer class."""
    from stream_lsh.stream.consumer import RewindingConsumer, RewindingTransport

    app.transport = RewindingTransport(app.conf.broker_consumer, app)
    assert isinstance(app.consumer, RewindingConsumer), f"app.consumer is a {type(app.consumer)!r}"


def safe_table_manager(app: Any) -> None:
    from stream_lsh.stream.recovery import SafeRecovery, SafeTableManager

    assert type(app.tables) is SafeTableManager, f"app.tables is a {type(app.tables)!r}"
    recovery = app.tables.recovery
    assert type(recovery) is SafeRecovery, f"app.tables.recovery is a {type(recovery)!r}"


def recovery_slot(app: Any) -> None:
    assert hasattr(app.tables, "_recovery"), "TableManager instances have no _recovery"
    assert app.tables._recovery is None, "TableManager._recovery is not None before first use"


def recovery_built_as_stream_lsh_does(app: Any) -> None:
    tables = app.tables
    recovery = resolve("faust.tables.recovery:Recovery")(app, tables, beacon=tables.beacon, loop=tables.loop)
    assert recovery.app is app and recovery.tables is tables


def transport_address(app: Any) -> None:
    transport = app.transport
    assert transport.url, "Transport.url is empty"
    assert isinstance(transport.default_port, int), f"Transport.default_port is {transport.default_port!r}"


def producer_buffer(app: Any) -> None:
    buffer = app.producer.buffer
    assert isinstance(buffer, resolve("faust.transport.producer:ProducerBuffer")), f"a {type(buffer)!r}"


def buffer_crash_state(app: Any) -> None:
    buffer = app.producer.buffer
    assert buffer.crashed is False and buffer.crash_reason is None, (buffer.crashed, buffer.crash_reason)


def current_event_is_a_weakref_slot() -> None:
    """state.py sets it to weakref.ref(event) and expects faust's current_event() to return the event."""
    slot = resolve("faust.streams:_current_event")
    assert isinstance(slot, contextvars.ContextVar), f"a {type(slot)!r}, not a ContextVar"

    class Event:
        pass

    event = Event()

    def inside() -> Any:
        token = slot.set(weakref.ref(event))
        try:
            return resolve("faust.streams:current_event")()
        finally:
            slot.reset(token)

    returned = contextvars.copy_context().run(inside)
    assert returned is event, "current_event() no longer returns the event set there"


# -- the internals -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Internal:
    name: str  # what the library calls it
    library: str
    where: str  # where stream_lsh uses it
    use: str  # what stream_lsh does with it
    checks: tuple[Callable[[], None], ...]


def internal(name: str, library: str, where: str, use: str, *checks: Callable[[], None]) -> Internal:
    return Internal(name, library, where, use, checks)


S = "stream_lsh/stream/"
INTERNALS = [
    # fetch_wait.py: shorter fetch and drain waits
    internal(
        "AIOKafkaConsumerThread._create_worker_consumer",
        FAUST,
        S + "fetch_wait.py",
        "replaces with a wrapper calling the original(self, transport)",
        params(f"{FA}:AIOKafkaConsumerThread._create_worker_consumer", "self", "transport"),
        with_app(worker_consumer_is_aiokafkas),
    ),
    internal(
        "AIOKafkaConsumer._fetch_max_wait_ms",
        AIOKAFKA,
        S + "fetch_wait.py",
        "overwrites after construction (read when the consumer starts)",
        with_aiokafka_consumer(fetch_wait_slot),
        source_has("aiokafka:AIOKafkaConsumer.start", "self._fetch_max_wait_ms"),
    ),
    internal(
        "Consumer.getmany",
        FAUST,
        S + "fetch_wait.py",
        "replaces on faust.transport.consumer.Consumer, calling the original(self, timeout=...)",
        params(f"{FC}:Consumer.getmany", "self", "timeout"),
        same(f"{FA}:Consumer.getmany", f"{FC}:Consumer.getmany"),
    ),
    internal(
        "Consumer._drain_messages",
        FAUST,
        S + "fetch_wait.py",
        "relies on its calling self.getmany (the patched one)",
        source_has(f"{FC}:Consumer._drain_messages", "self.getmany"),
    ),
    # app.py: a stopping worker withdraws its idle claims before Faust stops reading
    internal(
        "App.on_stop",
        FAUST,
        S + "app.py",
        "subclasses and overrides (withdrawals first, then super(): the consumer is stopped there, "
        "the producer after)",
        params("faust.app.base:App.on_stop", "self"),
        source_has("faust.app.base:App.on_stop", "await self._stop_consumer()", "self._producer_flush("),
    ),
    # consumer.py: rewinding partitions never committed
    internal(
        "faust.transport.drivers.aiokafka.Consumer.seek_to_committed",
        FAUST,
        S + "consumer.py",
        "subclasses and overrides (calling super(); faust's perform_seek must call it)",
        params(f"{FA}:Consumer.seek_to_committed", "self"),
        source_has(f"{FC}:Consumer.perform_seek", "self.seek_to_committed()"),
    ),
    internal(
        "Consumer._is_changelog_tp",
        FAUST,
        S + "consumer.py",
        "calls with (tp)",
        params(f"{FC}:Consumer._is_changelog_tp", "self", "tp"),
    ),
    internal("Consumer._thread", FAUST, S + "consumer.py app.py", "reads", with_app(consumer_thread)),
    internal(
        "AIOKafkaConsumerThread._ensure_consumer",
        FAUST,
        S + "consumer.py app.py",
        "calls with ()",
        params(f"{FA}:AIOKafkaConsumerThread._ensure_consumer", "self"),
    ),
    internal(
        "QueueServiceThread.call_thread",
        MODE,
        S + "consumer.py",
        "calls on faust's consumer thread with (fun, *args)",
        params(f"{FA}:AIOKafkaConsumerThread.call_thread", "self", "fun", "args", "kwargs"),
    ),
    internal(
        "faust.transport.drivers.aiokafka.Transport.Consumer",
        FAUST,
        S + "consumer.py app.py",
        "subclasses the transport, sets its Consumer class, builds it with (url, app) and assigns "
        "app.transport",
        same(f"{FA}:Transport.Consumer", f"{FA}:Consumer"),
        property_on("faust:App.transport", setter=True),
        with_app(rewinding_transport),
    ),
    # app.py
    internal(
        "Consumer._committed_offset",
        FAUST,
        S + "app.py",
        "reads (.get(tp)), as faust's seek sets it",
        with_app(committed_offsets),
        source_has(f"{FC}:Consumer.perform_seek", "self._committed_offset"),
    ),
    internal(
        "App(TableManager=...)",
        FAUST,
        S + "app.py",
        "passes SafeTableManager as a setting",
        with_app(safe_table_manager, TableManager="stream_lsh.stream.recovery:SafeTableManager"),
    ),
    internal(
        "Producer.send",
        FAUST,
        S + "app.py",
        "calls with six positional arguments (topic, key, value, partition, timestamp, headers)",
        params(
            f"{FA}:Producer.send",
            "self",
            "topic",
            "key",
            "value",
            "partition",
            "timestamp",
            "headers",
            "transactional_id",
        ),
    ),
    internal(
        "AIOKafkaConsumer.last_poll_timestamp",
        AIOKAFKA,
        S + "app.py",
        "calls with (tp) on faust's worker consumer: wall-clock ms of the partition's latest fetch answer",
        params("aiokafka:AIOKafkaConsumer.last_poll_timestamp", "self", "partition"),
        source_has(f"{AF}:Fetcher._proc_fetch_request", "tp_state.timestamp = now_ms", "time.time()"),
    ),
    # recovery.py: true changelog ends, no input dropped after recovery
    internal(
        "Recovery._build_highwaters",
        FAUST,
        S + "recovery.py",
        "overrides, calling super() with a consumer view whose highwaters() is replaced",
        params(
            "faust.tables.recovery:Recovery._build_highwaters",
            "self",
            "consumer",
            "tps",
            "destination",
            "title",
        ),
        source_has("faust.tables.recovery:Recovery._build_highwaters", "consumer.highwaters("),
    ),
    internal(
        "Service.crash",
        MODE,
        S + "recovery.py",
        "overrides on Recovery, calling super()",
        params("faust.tables.recovery:Recovery.crash", "self", "reason"),
    ),
    internal(
        "Recovery.on_recovery_completed",
        FAUST,
        S + "recovery.py",
        "overrides, calling super()",
        params("faust.tables.recovery:Recovery.on_recovery_completed", "self", "generation_id"),
    ),
    internal(
        "TableManager.recovery / TableManager._recovery",
        FAUST,
        S + "recovery.py",
        "overrides the property, filling faust's _recovery slot",
        property_on("faust.tables:TableManager.recovery"),
        with_app(recovery_slot),
    ),
    internal(
        "Recovery(app, tables, beacon=, loop=)",
        FAUST,
        S + "recovery.py",
        "constructs",
        with_app(recovery_built_as_stream_lsh_does),
    ),
    internal(
        "faust.transport.drivers.aiokafka.server_list",
        FAUST,
        S + "recovery.py",
        "imports and calls with (urls, default_port)",
        params(f"{FA}:server_list", "urls", "default_port"),
    ),
    internal(
        "faust.transport.drivers.aiokafka.credentials_to_aiokafka_auth",
        FAUST,
        S + "recovery.py",
        "imports and calls with (credentials, ssl_context)",
        params(f"{FA}:credentials_to_aiokafka_auth", "credentials", "ssl_context"),
    ),
    internal(
        "Transport.url / Transport.default_port",
        FAUST,
        S + "recovery.py",
        "reads",
        with_app(transport_address),
    ),
    # state.py: journal rows written for the right partition, and awaited
    internal(
        "faust.streams._current_event",
        FAUST,
        S + "state.py",
        "imports, sets to weakref.ref(event) and resets",
        current_event_is_a_weakref_slot,
    ),
    internal(
        "Table.send_changelog",
        FAUST,
        S + "state.py",
        "overrides (keeping the future it returns); table writes must go through it",
        params(
            "faust:Table.send_changelog",
            "self",
            "partition",
            "key",
            "value",
            "key_serializer",
            "value_serializer",
        ),
        source_has("faust.tables.table:Table.on_key_set", "self.send_changelog("),
        source_has("faust.tables.table:Table.on_key_del", "self.send_changelog("),
    ),
    internal(
        "rocksdb Store._db_for_partition",
        FAUST,
        S + "state.py",
        "calls with (partition)",
        params("faust.stores.rocksdb:Store._db_for_partition", "self", "partition"),
    ),
    internal(
        "rocksdb Store._open_for_partition",
        FAUST,
        S + "store.py",
        "overrides; every open of a partition's database goes through it",
        params("faust.stores.rocksdb:Store._open_for_partition", "self", "partition"),
        source_has("faust.stores.rocksdb:Store._db_for_partition", "self._open_for_partition(partition)"),
        params("faust.stores.rocksdb:Store.partition_path", "self", "partition"),
    ),
    internal(
        "stores.STORES.aliases",
        FAUST,
        S + "store.py",
        "registers the store's URL scheme",
        store_url_resolves,
    ),
    internal("Producer.buffer", FAUST, S + "state.py", "reads", with_app(producer_buffer)),
    internal(
        "Service.crashed / Service.crash_reason",
        MODE,
        S + "state.py",
        "reads on faust's ProducerBuffer",
        with_app(buffer_crash_state),
    ),
    # client.py, admin.py
    internal(
        "AIOKafkaConsumer._client.force_metadata_update",
        AIOKAFKA,
        S + "client.py",
        "calls with ()",
        with_aiokafka_consumer(client_of),
        params("aiokafka.client:AIOKafkaClient.force_metadata_update", "self"),
    ),
    internal(
        "CreateTopicsResponse.to_object()['topic_errors']",
        AIOKAFKA,
        S + "admin.py",
        "reads topic, error_code (and error_message if there) from create_topics' response",
        response_fields(
            "CreateTopicsResponse_v",
            "aiokafka.protocol.admin",
            "topic_errors.topic",
            "topic_errors.error_code",
        ),
    ),
    internal(
        "MetadataResponse.to_object()['topics'] (describe_topics)",
        AIOKAFKA,
        S + "admin.py",
        "reads topic, error_code, partitions[].leader",
        response_fields(
            "MetadataResponse_v",
            "aiokafka.protocol.metadata",
            "topics.topic",
            "topics.error_code",
            "topics.partitions",
            "topics.partitions.leader",
        ),
    ),
    # metadata_backoff.py: a failed metadata refresh waits before it answers
    internal(
        "AIOKafkaClient._metadata_update",
        AIOKAFKA,
        S + "metadata_backoff.py",
        "replaces on the class with a wrapper awaiting the original(self, cluster_metadata, topics), "
        "which returns False on failure, then sleeping self._retry_backoff",
        params("aiokafka.client:AIOKafkaClient._metadata_update", "self", "cluster_metadata", "topics"),
        source_has("aiokafka.client:AIOKafkaClient._md_synchronizer", "await self._metadata_update("),
        source_has("aiokafka.client:AIOKafkaClient._metadata_update", "return False"),
        with_aiokafka_consumer(retry_backoff_of_client),
    ),
    # undecodable.py: an input batch that cannot be decoded becomes markers, not a crash
    internal(
        "fetcher.PartitionRecords",
        AIOKAFKA,
        S + "undecodable.py",
        "replaces on the module with a subclass that wraps `records` before the original __init__",
        params(
            f"{AF}:PartitionRecords.__init__",
            "self",
            "tp",
            "records",
            "aborted_transactions",
            "fetch_offset",
            "key_deserializer",
            "value_deserializer",
            "check_crcs",
            "isolation_level",
        ),
        source_has(f"{AF}:Fetcher._proc_fetch_request", "PartitionRecords("),
        source_has(
            f"{AF}:PartitionRecords._unpack_records",
            "records = self._records",
            "records.has_next()",
            "records.next_batch()",
            "for record in next_batch",
            "next_batch.next_offset",
        ),
        source_has(
            f"{AF}:PartitionRecords._consumer_record",
            "record.offset",
            "record.timestamp",
            "record.timestamp_type",
            "record.checksum",
            "record.headers",
        ),
    ),
]


@pytest.mark.parametrize("entry", INTERNALS, ids=[entry.name for entry in INTERNALS])
def test_internal_keeps_the_shape_stream_lsh_relies_on(entry: Internal) -> None:
    for check in entry.checks:
        try:
            check()
            continue
        except Exception as error:
            failure = f"{type(error).__name__}: {error}"
        pytest.fail(
            f"{entry.library} changed {entry.name}, which {entry.where} {entry.use}: {failure}", pytrace=False
        )
