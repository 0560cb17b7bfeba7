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

__all__ = ["CONTEXT_FIELDS", "JsonFormatter", "set_up_logging", "worker_name"]

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


def set_up_logging(level: str, form: LogFormat) -> None:
    """The root logger of a worker process, in ``form``; threads' exceptions and warnings go
    through it, so that nothing reaches the output unformatted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if form is LogFormat.JSON else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
    logging.captureWarnings(True)
    threading.excepthook = _log_thread_exception


def _log_thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    name = args.thread.name if args.thread is not None else "a thread"
    logging.getLogger("stream_lsh.thread").error("an exception in %s", name, exc_info=args.exc_value)
