"""Running one worker process: create the topics if needed, then run the Faust worker until stopped."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import faust

from ..gc_policy import tune_gc
from ..settings import Settings
from .admin import claim_state, ensure_topics
from .app import StreamApp
from .connection import KafkaConnection
from .fetch_wait import set_fetch_max_wait
from .topics import TopicNames, topic_specs
from .undecodable import skip_undecodable_batches

__all__ = ["prepare", "run_worker"]


async def prepare(settings: Settings, bootstrap: str, guard: dict[str, Any]) -> None:
    """Topics exist with the right shape and the app's state is built with these parameters
    (raises BrokerUnreachableError, TopicShapeError or StateMismatchError otherwise)."""
    kafka = KafkaConnection.from_settings(settings, bootstrap)
    await ensure_topics(kafka, topic_specs(settings))
    await claim_state(kafka, TopicNames.from_settings(settings).guard, guard)


def run_worker(settings: Settings, bootstrap: str) -> None:
    """Block until SIGTERM/SIGINT (Faust's worker installs the handlers and stops cleanly)."""
    loglevel = settings.stream.log_level.lower()
    stream_app = StreamApp(settings, bootstrap)
    asyncio.run(prepare(settings, bootstrap, stream_app.guard))
    tune_gc()
    set_fetch_max_wait(settings.stream.fetch_wait_ms)
    names = TopicNames.from_settings(settings)
    skip_undecodable_batches({names.input, names.queries})
    worker = faust.Worker(
        stream_app.app, loglevel=loglevel, quiet=True, redirect_stdouts=False, override_logging=False
    )
    logging.basicConfig(level=loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker.execute_from_commandline()
