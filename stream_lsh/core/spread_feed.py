"""How decisions feed the spread of clusters: the one rule batch and the stream's decider share.

Each page is applied as the window applies it: the window's expiry at the page's clock first,
then its decision. A unique or duplicate page joins its cluster with its site and event time (a
new version leaves its old cluster first, :meth:`.spread.SpreadTracker.join`); a redelivery
changes nothing; a page decided ``no_content`` (a new version that lost its text) and a
retraction leave. Written once so that batch's alerts and cluster records and the stream's are
the same sequence of calls, hence the same output.
"""

from __future__ import annotations

from .decision import Decision
from .spread import Alert, Member, SpreadTracker

__all__ = ["follow_decision", "follow_retraction"]


def follow_decision(
    tracker: SpreadTracker,
    decision: Decision,
    *,
    site: str | None,
    clock_ms: int | None,
    event_time: float | None,
    ttl: float | None,
) -> list[Alert]:
    """Apply one decision; ``ttl``: the window, seconds (None: forever). Returns the alerts fired."""
    if clock_ms is not None and ttl is not None:
        tracker.expire(clock_ms / 1000.0 - ttl)
    if decision.replayed:
        return []
    if decision.cluster_id is None:
        follow_retraction(tracker, decision.id)
        return []
    return tracker.join(decision.cluster_id, Member(decision.id, site or None, event_time))


def follow_retraction(tracker: SpreadTracker, page_id: str) -> None:
    """A page left the window (retracted): it leaves its cluster."""
    home = tracker.cluster_of(page_id)
    if home is not None:
        tracker.leave(home, page_id)
