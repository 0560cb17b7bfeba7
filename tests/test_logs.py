"""Worker logs as JSON lines (STREAM_LSH_LOG_FORMAT=json): every line an object, never a page's text."""

from __future__ import annotations

import logging
import os
import subprocess

import orjson
from stream_helpers import DecisionReader, stream_settings

from stream_lsh.settings import LogFormat, Settings
from stream_lsh.stream.admin import ensure_topics
from stream_lsh.stream.brokers import free_port
from stream_lsh.stream.client import feed_lines
from stream_lsh.stream.logs import JsonFormatter, set_up_logging
from stream_lsh.stream.runner import Workers
from stream_lsh.stream.topics import TopicNames, topic_specs
from stream_lsh.synthetic import generate_corpus


def test_a_record_is_one_line_of_json_with_its_context_and_traceback():
    formatter = JsonFormatter()
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord(
            "stream_lsh.x", logging.ERROR, __file__, 1, "page %s: %s", ("p1", "late"), None
        )
        record.exc_info = __import__("sys").exc_info()
    record.page_id, record.partition, record.stage = "p1", 0, "decide"
    line = formatter.format(record)
    assert "\n" not in line
    parsed = orjson.loads(line)
    assert parsed["message"] == "page p1: late" and parsed["level"] == "error"
    assert (parsed["page_id"], parsed["partition"], parsed["stage"]) == ("p1", 0, "decide")
    assert "ValueError: boom" in parsed["exception"] and parsed["time"].endswith("+00:00")
    assert Settings.load(environ={"STREAM_LSH_LOG_FORMAT": "JSON"}).stream.log_format is LogFormat.JSON


async def test_a_worker_writes_only_json_lines_and_no_page_text(broker, tmp_path):
    pages = generate_corpus(60, seed=31).pages
    settings = stream_settings(broker, tmp_path, log_format="json", log_level="info")
    names = TopicNames.from_settings(settings)
    await ensure_topics(settings.stream.broker, topic_specs(settings))
    pool = Workers(settings, settings.stream.broker, 1)
    try:
        async with DecisionReader(
            broker.bootstrap, names.decisions, settings.stream.input_partitions
        ) as reader:
            await feed_lines(settings.stream.broker, names.input, [orjson.dumps(p) for p in pages])
            for page in pages:
                await reader.until(page["id"], timeout=90, check=pool.check)
    finally:
        pool.stop()
    lines = pool.logs[0].read_text().splitlines()
    assert len(lines) > 20
    records = [orjson.loads(line) for line in lines]  # every line, or this raises
    assert all({"time", "level", "logger", "message", "worker"} <= record.keys() for record in records)
    loaded = [r for r in records if "state loaded" in r["message"]]
    assert loaded and all({"stage", "partition"} <= r.keys() for r in loaded)
    text = "\n".join(lines)
    for page in pages:
        body = max((value for value in page.values() if isinstance(value, str)), key=len)  # its body
        sentences = [s for s in body.replace("<", ".").replace(">", ".").split(".") if len(s) > 40]
        assert not any(sentence in text for sentence in sentences), page["id"]


def test_a_worker_that_refuses_to_start_says_so_in_json_too(tmp_path):
    """A refusal at start-up (here: no broker within STREAM_LSH_BROKER_WAIT_S) is the last line of
    a JSON log like any other, not a plain line a log pipeline cannot parse."""
    port = free_port("127.0.0.1")  # nothing listens there
    environ = {**os.environ, "STREAM_LSH_LOG_FORMAT": "json", "STREAM_LSH_BROKER_WAIT_S": "1"}
    done = subprocess.run(
        ["stream-lsh", "worker", "--broker", f"127.0.0.1:{port}", "--data-dir", str(tmp_path)],
        env=environ,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = [
        orjson.loads(line) for line in done.stderr.decode().splitlines() + done.stdout.decode().splitlines()
    ]
    refusal = [line for line in lines if line["level"] == "critical"]
    assert len(refusal) == 1 and refusal[0]["message"].startswith(
        "refusing to run: cannot reach a Kafka broker"
    )


def test_expected_conditions_the_libraries_log_as_errors_are_one_line_at_their_level(capsys):
    """Faust's slow-processing report after a broker outage (a twenty-line ERROR) is one WARNING
    line; aiokafka's coordinator-not-available on a fresh broker is INFO (dropped at WARNING); a
    real error of either library stays an ERROR."""
    from aiokafka.errors import GroupCoordinatorNotAvailableError
    from faust.transport.drivers.aiokafka import (
        SLOW_PROCESSING_EXPLAINED,
        SLOW_PROCESSING_STREAM_IDLE_SINCE_START,
    )

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        set_up_logging("warning", LogFormat.TEXT)
        faust_driver = logging.getLogger("faust.transport.drivers.aiokafka")
        explained = SLOW_PROCESSING_EXPLAINED % {"setting": "stream_processing_timeout", "current_value": 300}
        faust_driver.error(
            SLOW_PROCESSING_STREAM_IDLE_SINCE_START + " " + explained,
            "TP(topic='x', partition=3)",
            "2 minutes ago",
        )
        logging.getLogger("aiokafka.consumer.group_coordinator").error(
            "Group Coordinator Request failed: %s", GroupCoordinatorNotAvailableError()
        )
        faust_driver.error("No active partitions for %s", "TP(topic='x', partition=3)")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2, lines
    assert (
        " WARNING faust.transport.drivers.aiokafka: " in lines[0]
        and "Stream has not started processing" in lines[0]
    )
    assert "a real stall fails /live" in lines[0]
    assert " ERROR faust.transport.drivers.aiokafka: No active partitions" in lines[1]
