"""Commands of the stream: ``run``, ``worker``, ``topics``, ``produce``, ``status`` and ``tail``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from ..batch import RejectSink
from ..core.record import split_lines
from ..errors import ExitCode
from ..settings import LogFormat, SecurityProtocol
from .group import cli
from .params import (
    InputFile,
    OutputFile,
    distinct,
    load_settings,
    open_output,
    rejects_option,
    report_rejects,
    settings_options,
    stream_errors,
)


@cli.command()
@settings_options("worker")
def worker(**flags: Any) -> None:
    """Run one stream worker against an existing broker (start several for more throughput).

    Stops cleanly on SIGTERM or Ctrl-C.
    """
    from ..stream.worker import run_worker

    settings = load_settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("a worker needs a broker: --broker host:port or STREAM_LSH_BROKER")
    with stream_errors(logged=settings.stream.log_format is LogFormat.JSON):
        run_worker(settings, settings.stream.broker)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Print the topics as JSON lines; do not connect.")
@settings_options("topics")
def topics(dry_run: bool, **flags: Any) -> None:
    """Create every topic the app uses (workers do it too; run this first on a real cluster, with
    STREAM_LSH_REPLICATION_FACTOR set), and check the shape of those that exist."""
    import asyncio

    from ..stream.admin import ensure_topics
    from ..stream.connection import KafkaConnection
    from ..stream.topics import topic_specs

    settings = load_settings(flags)
    specs = topic_specs(settings)
    if dry_run:
        for spec in specs:
            click.echo(
                orjson.dumps(
                    {
                        "name": spec.name,
                        "partitions": spec.partitions,
                        "replication_factor": spec.replication,
                        "config": spec.config,
                    }
                ).decode()
            )
        return
    if not settings.stream.broker:
        raise click.UsageError("creating topics needs a broker: --broker host:port or STREAM_LSH_BROKER")
    with stream_errors():
        created = asyncio.run(ensure_topics(KafkaConnection.from_settings(settings), specs))
    click.echo(f"{len(created)} of {len(specs)} topics created: {', '.join(created) or 'none'}", err=True)


@cli.command()
@click.option(
    "--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Worker processes to start."
)
@click.option("--feed", "feed", type=InputFile(), help="JSON lines of pages to send in.")
@click.option("--rate", type=float, help="Pages per second to feed at [as fast as possible].")
@click.option(
    "--until-idle", is_flag=True, help="Exit once every fed page has its decision (or a dead letter)."
)
@click.option(
    "-o",
    "--output",
    "output",
    type=OutputFile(),
    help="With --until-idle: the final decision per page, one JSON line each, in feed order.",
)
@click.option(
    "--alerts",
    "alerts_out",
    type=OutputFile(),
    help="With --until-idle: the story-spread alerts from the alerts topic, one JSON line each, in the "
    "order they came (it waits until the workers report every alert of the fed pages out).",
)
@click.option(
    "--dead-letters",
    "dead_letters_out",
    type=OutputFile(),
    help="Write the dead letters read during the run here, one JSON line each, when it ends (they "
    "are lost with an embedded broker).",
)
@rejects_option("Fed lines the input topic cannot take (over --max-message-bytes)")
@click.option("--quiet", is_flag=True, help="Print only the final summary: no decisions, no status lines.")
@click.option(
    "--embedded",
    type=click.Choice(["tansu", "kafka"]),
    default=None,
    help="Without --broker, the broker to start: Tansu (no Java) or Apache Kafka (needs Java 17+; "
    "its jars are fetched with Maven on first use, as `stream-lsh fetch-kafka` does) [tansu].",
)
@settings_options("run")
def run(
    workers: int,
    feed: str | None,
    rate: float | None,
    until_idle: bool,
    output: str | None,
    alerts_out: str | None,
    dead_letters_out: str | None,
    rejects: str,
    quiet: bool,
    embedded: str | None,
    **flags: Any,
) -> None:
    """Run the stream: broker (embedded unless --broker), topics, workers; feed a file, print decisions.

    Without --until-idle it runs until Ctrl-C or SIGTERM; either stops the workers and the embedded
    broker before it exits.
    """
    import asyncio
    import signal

    from ..stream.runner import Progress, run_stream

    distinct(
        {"--feed": feed},
        {"-o": output, "--alerts": alerts_out, "--dead-letters": dead_letters_out, "--rejects": rejects},
    )
    settings = load_settings(flags)
    if embedded is not None and settings.stream.broker:
        raise click.UsageError("--embedded starts a broker of its own; it cannot be used with --broker")
    if not settings.stream.broker and settings.kafka.security_protocol != SecurityProtocol.PLAINTEXT:
        raise click.UsageError(
            f"security_protocol {settings.kafka.security_protocol.value} is for a cluster given with "
            "--broker; the embedded broker is plaintext"
        )
    if output is not None and not until_idle:
        raise click.UsageError(
            "-o needs --until-idle (the final decisions are known only when the stream is idle)"
        )
    if alerts_out is not None and not until_idle:
        raise click.UsageError("--alerts needs --until-idle (it writes the alerts once they are all out)")
    if alerts_out is not None and settings.stream.order != "clock":
        raise click.UsageError(
            "--alerts needs clock order (STREAM_LSH_ORDER=clock): in arrival order nothing tells "
            "when every alert of the fed pages is out"
        )
    if alerts_out is not None and settings.stream.status_interval_s == 0:
        raise click.UsageError(
            "--alerts needs the workers' status reports (they say when every alert is out): "
            "STREAM_LSH_STATUS_INTERVAL_S must not be 0"
        )
    if until_idle and feed is None:
        raise click.UsageError("--until-idle needs --feed (idle means: everything fed has been decided)")
    lines = split_lines(Path(feed).read_bytes()) if feed else None
    out = sys.stdout.buffer

    def show(record: dict[str, Any]) -> None:
        if not quiet:
            out.write(orjson.dumps(record) + b"\n")
            out.flush()

    def status(line: str) -> None:
        if not quiet:
            click.echo(f"[stream-lsh] {line}", err=True)

    # SIGTERM (a supervisor, `timeout`, `docker stop`) takes Ctrl-C's path: its default action would
    # end this process at once and leave the workers and the embedded broker running
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    progress = Progress()
    try:
        with stream_errors():
            asyncio.run(
                run_stream(
                    settings,
                    workers=workers,
                    feed=lines,
                    until_idle=until_idle,
                    rate=rate,
                    on_decision=show,
                    on_status=status,
                    embedded=embedded or "tansu",
                    alerts=alerts_out is not None,
                    progress=progress,
                )
            )
        stopped = False
    except KeyboardInterrupt:
        stopped = True
    click.echo(f"[stream-lsh] {'stopped: ' if stopped else ''}{progress.summary()}", err=True)
    if dead_letters_out is not None:
        with open_output(dead_letters_out) as handle:
            for record in progress.dead_letter_records:
                handle.write(orjson.dumps(record) + b"\n")
    sink = RejectSink(lambda: open_output(rejects))
    for line, why in progress.refused:
        sink.write(line.number, why, line.raw)
    sink.close()
    if stopped:
        report_rejects(sink, rejects)
        return
    if output is not None:
        order = list(dict.fromkeys(f.page_id for f in progress.fed if f.page_id in progress.decisions))
        with open_output(output) as handle:
            for page_id in order:
                handle.write(orjson.dumps(progress.decisions[page_id]) + b"\n")
    if alerts_out is not None:
        with open_output(alerts_out) as handle:
            for record in progress.alerts.values():
                handle.write(orjson.dumps(record) + b"\n")
    report_rejects(sink, rejects)


@cli.command()
@click.argument("pages", type=InputFile())
@click.option("--rate", type=float, help="Pages per second [as fast as possible].")
@rejects_option("Lines the input topic cannot take (over --max-message-bytes)")
@settings_options("produce")
def produce(pages: str, rate: float | None, rejects: str, **flags: Any) -> None:
    """Send a file of JSON-line pages to the input topic, keyed by page id, each record stamped
    with the file's clock (the one `dedup` reads the file with).

    A line too large for the input topic is not sent: it goes to the rejects file with its line
    number and size, the rest of the file is sent, and the exit status is 1.
    """
    import asyncio

    from ..stream.client import feed_lines
    from ..stream.connection import KafkaConnection

    distinct({"PAGES": pages}, {"--rejects": rejects})
    settings = load_settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("produce needs a broker: --broker host:port or STREAM_LSH_BROKER")
    sink = RejectSink(lambda: open_output(rejects))
    with stream_errors():
        fed = asyncio.run(
            feed_lines(
                KafkaConnection.from_settings(settings),
                settings.stream.input_topic,
                split_lines(Path(pages).read_bytes()),
                clock=settings.file_clock(),
                max_page_bytes=settings.input.max_page_bytes,
                rate=rate,
                max_record_bytes=settings.kafka.max_message_bytes,
                on_refused=lambda line, why: sink.write(line.number, why, line.raw),
            )
        )
    sink.close()
    click.echo(f"sent {len(fed):,} records to {settings.stream.input_topic}", err=True)
    report_rejects(sink, rejects)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@click.option(
    "--since",
    type=click.FloatRange(min=1),
    default=600,
    show_default=True,
    help="Show the workers that reported in the last this many seconds (the status topic keeps a day).",
)
@settings_options("status")
def status(as_json: bool, since: float, **flags: Any) -> None:
    """Print a running deployment: its workers (up or stale), their partitions, rates, backlog and
    input lag, from the reports they publish every STREAM_LSH_STATUS_INTERVAL_S; and the consumer
    group's committed lag, from the broker. Exit code 69 when no worker is up."""
    import asyncio

    from ..stream.connection import KafkaConnection
    from ..stream.deployment import format_status, read_deployment
    from ..stream.topics import TopicNames

    settings = load_settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("status needs a broker: --broker host:port or STREAM_LSH_BROKER")
    names = TopicNames.from_settings(settings)
    # its clients' failures end as one line below; aiokafka would log each attempt of each client too
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    with stream_errors():
        found = asyncio.run(read_deployment(KafkaConnection.from_settings(settings), names, since_s=since))
    click.echo(found.to_json().decode() if as_json else format_status(found))
    if not found.up:
        seen = len(found.workers)
        why = (
            f"the {seen} seen in the last {since:g} s have not reported for 3 of their intervals"
            if seen
            else f"none has reported to {names.status} in the last {since:g} s (are workers of this "
            "app id running on this broker, with STREAM_LSH_STATUS_INTERVAL_S above 0?)"
        )
        click.echo(f"stream-lsh: no worker of app {names.app_id} is up: {why}", err=True)
        sys.exit(ExitCode.UNAVAILABLE)


@cli.command()
@click.argument("topic")
@click.option("--follow/--no-follow", default=True, help="Keep waiting for new records [follow].")
@settings_options("tail")
def tail(topic: str, follow: bool, **flags: Any) -> None:
    """Print a topic from its start, one JSON line per record: {"key", "value", "partition", "offset"}."""
    import asyncio

    from ..stream.client import read_topic
    from ..stream.connection import KafkaConnection

    settings = load_settings(flags)
    if not settings.stream.broker:
        raise click.UsageError("tail needs a broker: --broker host:port or STREAM_LSH_BROKER")
    kafka = KafkaConnection.from_settings(settings)

    async def show() -> None:
        async for key, value, partition, offset in read_topic(kafka, topic, follow=follow):
            try:
                decoded = None if value is None else orjson.loads(value)
            except orjson.JSONDecodeError:
                decoded = value.decode("utf-8", "replace") if value is not None else None
            line = {
                "key": None if key is None else key.decode("utf-8", "replace"),
                "value": decoded,
                "partition": partition,
                "offset": offset,
            }
            sys.stdout.buffer.write(orjson.dumps(line) + b"\n")
            sys.stdout.buffer.flush()

    try:
        with stream_errors():
            asyncio.run(show())
    except KeyboardInterrupt:
        pass
