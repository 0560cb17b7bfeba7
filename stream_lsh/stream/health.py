"""Liveness: whether the worker's agents still make progress when they have work.

A worker can be alive as a process and dead as a stream processor: an agent blocked on a send
that will never return, a deadlock between agents, a loop hogged by one call. Kubernetes restarts
a container whose liveness probe fails, so the probe must fail exactly then and never because the
worker is merely idle, recovering, or riding out a broker outage (its sends then wait up to
``STREAM_LSH_SEND_TIMEOUT_S``, after which the worker exits by itself).

:class:`AgentWatch` keeps, per agent, when it last finished a batch and whether it is in one now.
An agent is *stuck* when it has been inside one batch for longer than the bound, or when its input
has records waiting and it has taken none for longer than the bound. Time spent while the worker
was not consuming (a rebalance, a recovery) does not count: :meth:`AgentWatch.resumed` restarts
every agent's clock when consuming resumes.

The event loop itself needs no watch for the probe: when it is stuck, the web server that answers
the probe is stuck with it, and the probe times out. But a loop that stops for a moment (a large
synchronous write, a long micro-batch, a garbage collection) delays every decision behind it
without failing anything: :class:`LoopPauses` measures those pauses, for the metrics and the
stream benchmark.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["AgentWatch", "LoopPauses"]


@dataclass
class _Agent:
    progress_at: float  # when it last finished a batch (or consuming resumed)
    busy_since: float | None = None  # when the batch it is in began


@dataclass
class AgentWatch:
    """Progress of a worker's agents, for ``/live``.

    Args:
        bound: seconds without progress, with work waiting, after which an agent is stuck.
        clock: monotonic seconds.
    """

    bound: float
    clock: Callable[[], float] = time.monotonic
    _agents: dict[str, _Agent] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.bound <= 0:
            raise ValueError(f"bound must be positive, got {self.bound!r}")

    @contextmanager
    def batch(self, agent: str) -> Iterator[None]:
        """Around the handling of one batch by ``agent``."""
        state = self._agent(agent)
        state.busy_since = self.clock()
        try:
            yield
        finally:
            state.busy_since = None
            state.progress_at = self.clock()

    def resumed(self) -> None:
        """Consuming resumed (after a rebalance or a recovery): nobody has been waiting yet."""
        now = self.clock()
        for state in self._agents.values():
            state.progress_at = max(state.progress_at, now)

    def stuck(self, waiting: Mapping[str, bool]) -> list[str]:
        """Why agents are stuck, one line each; empty when all are well. ``waiting``: per agent,
        whether records are waiting for it (agents not in it count as not waiting)."""
        now = self.clock()
        reasons = []
        for agent in sorted({*self._agents, *waiting}):
            state = self._agent(agent)
            if state.busy_since is not None and now - state.busy_since > self.bound:
                reasons.append(f"{agent} has been handling one batch for {now - state.busy_since:.0f} s")
            elif state.busy_since is None and waiting.get(agent) and now - state.progress_at > self.bound:
                reasons.append(
                    f"{agent} has taken nothing for {now - state.progress_at:.0f} s while records wait for it"
                )
        return reasons

    def _agent(self, agent: str) -> _Agent:
        state = self._agents.get(agent)
        if state is None:
            state = self._agents[agent] = _Agent(self.clock())
        return state


#: How often :class:`LoopPauses` wakes: its resolution. A hundred wake-ups a second cost the loop
#: well under 1% of a core.
PAUSE_TICK_S = 0.01
#: A wake-up this late or later is a pause, and observed.
MIN_PAUSE_S = 0.005


class LoopPauses:
    """How long the event loop stops: a task that asks to wake every :data:`PAUSE_TICK_S` and
    counts how late it wakes. Lateness is time in which no other callback ran either, whatever held
    the loop (this process's code, a library's synchronous call, the garbage collector).

    Args:
        observe: called with each pause of :data:`MIN_PAUSE_S` or more, in seconds.
    """

    def __init__(self, observe: Callable[[float], None] = lambda _: None) -> None:
        self.observe = observe
        self.longest_s = 0.0  # since the watch started

    async def run(self) -> None:
        """Watch until cancelled (a Faust task: it takes no argument)."""
        clock = time.monotonic
        due = clock() + PAUSE_TICK_S
        while True:
            await asyncio.sleep(max(0.0, due - clock()))
            now = clock()
            self.note(now - due)
            due = now + PAUSE_TICK_S

    def note(self, late_s: float) -> None:
        """One wake-up, ``late_s`` seconds after it was due."""
        if late_s >= MIN_PAUSE_S:
            self.longest_s = max(self.longest_s, late_s)
            self.observe(late_s)
