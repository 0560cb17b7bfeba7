"""A batch that fails ends the worker, before Faust can commit its input.

An exception in a Faust agent acks the event, and Faust then commits the input offset: a batch
whose sends or journal rows failed would be lost. So every batch's work runs under
:func:`or_exit`, which logs the failure and ends the process at once (``os._exit``, no cleanup
that could commit), and the input is redelivered to whoever runs the partition next.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable

from ..errors import ExitCode, IncompleteStateError, StateMismatchError

__all__ = ["or_exit"]

log = logging.getLogger("stream_lsh.stream.app")  # the worker's log lines keep the name they always had


async def or_exit(work: Awaitable[None]) -> None:
    """Run one batch's work; on any failure, log it and end the process before Faust can commit
    the batch's input. Cancellation (shutdown) passes through. Stored state built under another
    guard, or lost from its changelog too, ends it with its own exit code, so that a supervisor
    does not restart it in a loop."""
    try:
        await work
    except asyncio.CancelledError:
        raise
    except (StateMismatchError, IncompleteStateError) as error:
        log.critical("refusing to run: %s", error)
        logging.shutdown()
        os._exit(ExitCode.STATE_MISMATCH)
    except BaseException:
        log.critical("a batch failed; stopping the worker so that its input is redelivered", exc_info=True)
        logging.shutdown()
        os._exit(ExitCode.FAILED_BATCH)
