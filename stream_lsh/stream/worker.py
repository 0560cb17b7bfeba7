"""Running one worker process: create the topics if needed, then run the Faust worker until stopped."""

from __future__ import annotations

import asyncio
import logging

import faust

from ..settings import Settings
from .admin import ensure_topics
from .app import StreamApp
from .fetch_wait import set_fetch_max_wait
from .topics import topic_specs

__all__ = ["run_worker"]


def run_worker(settings: Settings, bootstrap: str) -> None:
    """Block until SIGTERM/SIGINT (Faust's worker installs the handlers and stops cleanly)."""
    loglevel = settings.log_level.lower()
    asyncio.run(ensure_topics(bootstrap, topic_specs(settings)))
    set_fetch_max_wait(settings.fetch_wait_ms)
    stream_app = StreamApp(settings, bootstrap)
    worker = faust.Worker(stream_app.app, loglevel=loglevel, quiet=True, redirect_stdouts=False,
                          override_logging=False)
    logging.basicConfig(level=loglevel.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    worker.execute_from_commandline()
