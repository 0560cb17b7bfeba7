"""A worker's log lines: plain text for people, or one JSON object per line for a log pipeline.

With ``STREAM_LSH_LOG_FORMAT=json`` every line a worker writes is a JSON object: ``time`` (UTC,
ISO 8601), ``level``, ``logger``, ``message``, ``worker`` (host and process), the ``exception``
with its traceback when there is one, and ``stage``, ``partition`` and ``page_id`` when the line
is about one (given as ``extra`` by the code that logs it). So a log pipeline can filter one page's
or one partition's lines without parsing messages.

What would otherwise reach the same stream unformatted goes through logging too: exceptions of
threads (aiokafka's consumer runs in one), Python's warnings, and Faust's terminal spinner is
switched off (it writes control characters between lines). Messages never carry a page's body
(dead letters name the record, not its content) or a secret (settings print masked).

An ERROR line means something is wrong and needs the operator. Two kinds that the libraries log at
ERROR are expected, and are lowered (:class:`ExpectedConditions`):

* aiokafka's "Group Coordinator Request failed: CoordinatorNotAvailable": a fresh broker creating
  its offsets topic, or a coordinator moving; the consumer retries. INFO.
* Faust's "Stream has not started processing ...", "Stream stopped processing ...", "Has not
  committed ..." (each with a twenty-line explanation): a stage partition that had nothing to do,
  or waited out a broker outage. A real stall fails the worker's ``/live`` and sets the
  ``stream_lsh_live`` gauge to 0; these become one WARNING line.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from datetime import datetime, timezone
from typing import Any

import orjson

from ..settings import LogFormat

__all__ = ["CONTEXT_FIELDS", "ExpectedConditions", "JsonFormatter", "set_up_logging", "worker_name"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_FIELDS = ("stage", "partition", "page_id")  # ``extra`` fields a line about one carries


def worker_name() -> str:
    """This worker process, as its log lines and status reports name it: ``host:pid``. In
    Kubernetes the host is the pod's name, in a container the container's, so the name is unique
    in a deployment and a restarted process is a new worker."""
    return f"{socket.gethostname()}:{os.getpid()}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (tracebacks are a field, not more lines)."""

    def __init__(self) -> None:
        super().__init__()
        self.worker = worker_name()

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "worker": self.worker,
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class ExpectedConditions(logging.Filter):
    """Lowers the libraries' ERROR lines about expected conditions (see the module doc) to the
    level they deserve, and drops them when that is below the worker's level."""

    #: (logger name prefix, text in the message, the level it deserves, the note added)
    RULES = (
        (
            "aiokafka",
            "CoordinatorNotAvailable",
            logging.INFO,
            "expected while a broker creates its offsets topic or a coordinator moves; retrying",
        ),
        (
            "faust",
            "Stream has not started processing",
            logging.WARNING,
            "a partition with nothing to do yet, or a broker outage; a real stall fails /live",
        ),
        (
            "faust",
            "Stream stopped processing",
            logging.WARNING,
            "after a broker outage or a long batch; a real stall fails /live",
        ),
        (
            "faust",
            "Has not committed",
            logging.WARNING,
            "after a broker outage or a rebalance; a real stall fails /live",
        ),
    )

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.ERROR:
            return True
        message = record.getMessage()
        for prefix, text, level, note in self.RULES:
            if record.name.startswith(prefix) and text in message:
                first = message.strip().splitlines()[0].rstrip()
                record.msg, record.args = f"{first} ({note})", None
                record.levelno, record.levelname = level, logging.getLevelName(level)
                return level >= logging.getLogger().getEffectiveLevel()
        return True


def set_up_logging(level: str, form: LogFormat) -> None:
    """The root logger of a worker process, in ``form``; threads' exceptions and warnings go
    through it, so that nothing reaches the output unformatted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ExpectedConditions())
    handler.setFormatter(JsonFormatter() if form is LogFormat.JSON else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "a thread"
    logging.getLogger("stream_lsh.thread").error("an exception in %s", name, exc_info=args.exc_value)
