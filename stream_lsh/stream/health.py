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

The event loop itself needs no watch here: when it is stuck, the web server that answers the probe
is stuck with it, and the probe times out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["AgentWatch"]


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
