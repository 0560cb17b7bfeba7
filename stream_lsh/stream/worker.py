"""Running one worker process: create the topics if needed, then run the Faust worker until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import faust

from ..errors import BrokerUnreachableError, SettingsError
from ..gc_policy import tune_gc
from ..settings import Settings
from .admin import claim_state, ensure_topics
from .app import StreamApp
from .connection import KafkaConnection
from .fetch_wait import set_fetch_max_wait
from .logs import set_up_logging
from .metadata_backoff import back_off_failed_metadata
from .topics import TopicNames, topic_specs
from .undecodable import skip_undecodable_batches

__all__ = ["prepare", "prepare_when_reachable", "run_worker"]

log = logging.getLogger(__name__)

FIRST_RETRY_S, LONGEST_RETRY_S = 0.5, 10.0


async def prepare(settings: Settings, bootstrap: str, guard: dict[str, Any]) -> None:
    """Topics exist with the right shape and the app's state is built with these parameters
    (raises BrokerUnreachableError, TopicShapeError or StateMismatchError otherwise)."""
    kafka = KafkaConnection.from_settings(settings, bootstrap)
    await ensure_topics(kafka, topic_specs(settings))
    await claim_state(kafka, TopicNames.from_settings(settings).guard, guard)


async def prepare_when_reachable(settings: Settings, bootstrap: str, guard: dict[str, Any]) -> None:
    """:func:`prepare`, tried again with backoff while no broker can be reached, each failure
    logged: a worker started before its brokers (a cluster's maintenance window, an orchestrator
    starting everything at once) waits for them instead of exiting into a crash loop. The wait is
    bounded by ``STREAM_LSH_BROKER_WAIT_S`` (none: forever, as Kafka's own clients retry)."""
    limit = settings.kafka.broker_wait_s
    loop = asyncio.get_running_loop()
    started, delay, attempt = loop.time(), FIRST_RETRY_S, 1
    while True:
        try:
            await prepare(settings, bootstrap, guard)
        except BrokerUnreachableError as error:
            waited = loop.time() - started
            if limit is not None and waited + delay > limit:
                raise BrokerUnreachableError(
                    f"{error} (gave up after {attempt} attempts in {waited:.0f} s: "
                    f"STREAM_LSH_BROKER_WAIT_S={limit:g})"
                ) from None
            log.warning("attempt %d: %s; trying again in %.1f s", attempt, error, delay)
            await asyncio.sleep(delay)
            delay, attempt = min(2 * delay, LONGEST_RETRY_S), attempt + 1
        else:
            if attempt > 1:
                log.warning("the broker answered at attempt %d, after %.0f s", attempt, loop.time() - started)
            return


@contextlib.contextmanager
def own_data_dir(path: Path) -> Iterator[None]:
    """Hold the data directory for this worker alone: a second worker on it would wait on
    RocksDB's locks until Faust gives up with a crash. The lock is the kernel's (flock), so it
    goes with the process, however it ends. Raises SettingsError, naming the holder, if taken."""
    path.mkdir(parents=True, exist_ok=True)
    lock = path / "worker.lock"
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise SettingsError(
                f"the data directory {path} is in use by another worker ({holder}): give each worker "
                "its own STREAM_LSH_DATA_DIR"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()}\n")
        handle.flush()
        yield


def run_worker(settings: Settings, bootstrap: str) -> None:
    """Block until SIGTERM/SIGINT (Faust's worker installs the handlers and stops cleanly)."""
    with own_data_dir(Path(settings.stream.data_dir)):
        _run_worker(settings, bootstrap)


def _run_worker(settings: Settings, bootstrap: str) -> None:
    loglevel = settings.stream.log_level.lower()
    set_up_logging(loglevel, settings.stream.log_format)
    stream_app = StreamApp(settings, bootstrap)
    asyncio.run(prepare_when_reachable(settings, bootstrap, stream_app.guard))
    tune_gc()
    set_fetch_max_wait(settings.stream.fetch_wait_ms)
    back_off_failed_metadata()
    names = TopicNames.from_settings(settings)
    skip_undecodable_batches({names.input, names.queries})
    worker = faust.Worker(
        stream_app.app, loglevel=loglevel, quiet=True, redirect_stdouts=False, override_logging=False
    )
    worker.spinner = None  # a terminal's progress spinner: control characters between log lines
    worker.execute_from_commandline()
