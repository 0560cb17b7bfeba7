"""Brokers for users: ``broker`` (one on this machine) and ``fetch-kafka``."""

from __future__ import annotations

import sys

import click

from .group import cli
from .params import UserError, stream_errors


@cli.command(name="fetch-kafka")
@click.option(
    "--tools",
    is_flag=True,
    help="Also fetch Kafka's command-line tools (console producer and consumer, topics, consumer "
    "groups) and print how to run them.",
)
def fetch_kafka(tools: bool) -> None:
    """Fetch the Apache Kafka broker (its jars, from Maven Central, with mvn) into the cache.

    For `broker --kind kafka`, `run --embedded kafka` and the test suite; prints where the jars are.
    Needs Maven and, to run the broker, Java 17 or newer. STREAM_LSH_KAFKA_CACHE sets the cache
    [~/.cache/stream-lsh].
    """
    from ..stream.brokers import KAFKA_VERSION, fetch_tools, find_kafka, find_tools
    from ..stream.brokers import fetch_kafka as fetch

    with stream_errors():
        cached = find_kafka()
        distribution = cached or fetch(quiet=False)
    verb = "already in" if cached else "fetched into"
    click.echo(f"Apache Kafka {KAFKA_VERSION} {verb} {distribution.libs}", err=True)
    if tools:
        with stream_errors():
            had = find_tools()
            kit = had or fetch_tools(quiet=False)
        verb = "already in" if had else "fetched into"
        click.echo(f"Kafka's tools {verb} {kit.libs}; run one with:", err=True)
        for main_class, example in _KAFKA_TOOLS:
            click.echo(f'  java -cp "{kit.classpath}" {main_class} {example}', err=True)


#: Kafka's tools a user reaches for first, with an example of each against `stream-lsh broker`.
_KAFKA_TOOLS = (
    (
        "org.apache.kafka.tools.ConsoleProducer",
        "--bootstrap-server 127.0.0.1:9092 --topic pages < pages.jsonl",
    ),
    (
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        "--bootstrap-server 127.0.0.1:9092 --topic dedup-decisions --from-beginning",
    ),
    ("org.apache.kafka.tools.TopicCommand", "--bootstrap-server 127.0.0.1:9092 --list"),
    (
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server 127.0.0.1:9092 --describe --all-groups",
    ),
)


@cli.command()
@click.option(
    "--kind",
    type=click.Choice(["tansu", "kafka"]),
    default="tansu",
    show_default=True,
    help="Tansu (no Java, memory only) or Apache Kafka (needs Java 17+; fetched with Maven on first use).",
)
@click.option("--port", type=click.IntRange(1, 65535), default=9092, show_default=True, help="Client port.")
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help="Kafka only: keep the broker's data here, across restarts [a temporary directory, removed at exit].",
)
def broker(kind: str, port: int, data_dir: str | None) -> None:
    """Run a single-node broker on this machine until Ctrl-C, to try the stream out or to develop
    against: prints its bootstrap address (for --broker or STREAM_LSH_BROKER).

    It listens on 127.0.0.1 only and keeps one copy of everything: a real deployment runs a Kafka
    cluster (see docs/operating.md).
    """
    import signal
    import socket
    import time

    from ..stream.brokers import embedded_broker

    if kind == "tansu" and data_dir is not None:
        raise click.UsageError("Tansu keeps its data in memory: --data-dir is for --kind kafka")
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise click.UsageError(f"port {port} is in use (another broker?): choose another with --port")
    started = embedded_broker(kind, port=port, data_dir=data_dir)
    for stop in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a shell starts background jobs ignoring it
        signal.signal(stop, signal.default_int_handler)
    try:
        with stream_errors():
            started.start()
        name = "Apache Kafka" if kind == "kafka" else "Tansu"
        kept = f", data in {data_dir}" if data_dir else ", data discarded at exit"
        click.echo(f"{name} broker at {started.bootstrap}{kept}; Ctrl-C stops it", err=True)
        click.echo(started.bootstrap)
        sys.stdout.flush()
        while started.running:
            time.sleep(0.5)
        raise UserError(f"the {name} broker exited by itself; its log ends with:\n{started.log_tail()}")
    except KeyboardInterrupt:
        click.echo("stopping the broker", err=True)
    finally:
        started.stop()
        started.cleanup()  # its log; its data too unless kept in --data-dir
