"""Story spread: when a cluster reaches N pages from M distinct sources within T of event time.

A newsroom wants to know when a story is *spreading*: the same wire text published by several
outlets within a short time. The dedup engine already knows which pages are copies of one story
(a cluster); this module follows each cluster's live members, with their outlet (``source``) and
event time, and fires an :class:`Alert` the first time a cluster meets a level of
:class:`AlertRules` (by default 3, 10 and 30 pages from as many distinct sources within 6 hours).

Why these rules:

* **Event time, not arrival.** A level is met when some span of ``within_s`` seconds of event time
  holds the pages, so a replay or a backfill fires the alerts the live feed would have fired, and
  batch and stream agree. Pages without event time (a file's lines before its clock starts) never
  count toward an alert; pages without a source count as pages but not as sources.
* **The window contains the page that joins.** A join only adds a page to the windows around its
  own event time, and a leave only removes pages, so a level can only become met at a join, in a
  window holding the joining page. Checking those windows at every join finds every alert, at
  the page that made it true (the *trigger*), also when pages arrive out of event-time order.
* **The earliest such window is reported.** The windows worth trying start at a member's event time
  in ``[t - within_s, t]`` (t: the trigger's); the first of them, in event time, that meets the
  level is the alert's window. With pages in event-time order it is the ``within_s`` before the
  trigger: the alert then lists every copy of that span, which is what a newsroom reads as "how
  far it has spread". Any fixed choice would be deterministic; this one is the most complete.
* **Once per level.** A (cluster, level) fires once. A retraction lowers the counts but never makes
  a fired level fire again: fired levels are kept while the cluster has members, and after its
  last member is retracted until the window passes its newest event time (a retracted page sent
  again joins a cluster of the same name). A cluster whose members all left the window is
  forgotten: its id may then be handed out again (see :func:`.decision.cluster_name`) and alerts
  under it fire afresh.
* **Bounded.** Members stay only while they are in the engine's window (:meth:`SpreadTracker.expire`,
  the same rule as the index's TTL), so memory follows the index.

Deterministic given the sequence of calls: nothing depends on the iteration order of sets of
strings (hash-randomised), so batch and the stream, calling in the same order, fire the same alerts.
Pure: no I/O.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "Alert",
    "AlertRules",
    "Member",
    "SourceSpread",
    "Spread",
    "SpreadLevel",
    "SpreadTracker",
]

_HOUR = 3600.0
STATE_FORMAT = 1


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class SpreadLevel:
    """One level of alert: at least ``pages`` pages from at least ``sources`` distinct sources."""

    pages: int
    sources: int

    def __post_init__(self) -> None:
        if not _is_count(self.pages) or self.pages < 1:
            raise ValueError(f"a level's pages must be an integer >= 1, got {self.pages!r}")
        if not _is_count(self.sources) or self.sources < 1:
            raise ValueError(f"a level's sources must be an integer >= 1, got {self.sources!r}")
        if self.sources > self.pages:
            raise ValueError(
                f"a level cannot ask for more sources than pages ({self.pages}:{self.sources}): "
                "each source counted is a page"
            )

    def dominates(self, other: SpreadLevel) -> bool:
        """At least as many pages and sources as ``other``, and not the same level."""
        return self != other and self.pages >= other.pages and self.sources >= other.sources

    def __str__(self) -> str:
        return str(self.pages) if self.pages == self.sources else f"{self.pages}:{self.sources}"


@dataclass(frozen=True)
class AlertRules:
    """The levels of alert, numbered 1..k, and the span of event time they must be met within.

    Each level must ask for more than the one before it (at least as many pages and sources, and
    more of one): so a cluster meeting a level meets every lower one in the same window, and
    levels fire in order.
    """

    levels: tuple[SpreadLevel, ...]
    within_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.levels, tuple) or not self.levels:
            raise ValueError(f"alert rules need at least one level, got {self.levels!r}")
        if not all(isinstance(level, SpreadLevel) for level in self.levels):
            raise ValueError("alert levels must be SpreadLevel values")
        if isinstance(self.within_s, bool) or not isinstance(self.within_s, (int, float)):
            raise ValueError(f"within_s must be seconds, got {self.within_s!r}")
        if not (math.isfinite(self.within_s) and self.within_s > 0):
            raise ValueError(f"within_s must be positive finite seconds, got {self.within_s!r}")
        for number, (lower, higher) in enumerate(zip(self.levels, self.levels[1:]), 2):
            if not higher.dominates(lower):
                raise ValueError(
                    f"alert level {number} ({higher}) must ask for more than level {number - 1} "
                    f"({lower}): levels go up, in pages and sources, with no repeats"
                )

    @classmethod
    def parse(cls, levels: str, within_hours: float) -> AlertRules:
        """Rules from settings text: ``levels`` is ``"3,10,30"`` (N pages from N sources) or
        ``"5:3,12:10"`` (PAGES:SOURCES), or a mix; ``within_hours`` the span in hours."""
        if isinstance(within_hours, bool) or not isinstance(within_hours, (int, float)):
            raise ValueError(f"within_hours must be a number of hours, got {within_hours!r}")
        return cls(tuple(_parse_level(part) for part in _parts(levels)), float(within_hours) * _HOUR)

    def describe(self) -> str:
        """The rules as settings text: ``3,10,30 within 6 h``."""
        return f"{','.join(map(str, self.levels))} within {self.within_s / _HOUR:g} h"


def _parts(levels: str) -> list[str]:
    if not isinstance(levels, str):
        raise ValueError(f"alert levels must be text such as '3,10,30', got {levels!r}")
    parts = [part.strip() for part in levels.split(",")]
    if not levels.strip() or any(not part for part in parts):
        raise ValueError(
            f"alert levels {levels!r}: write them as N or PAGES:SOURCES separated by commas, "
            "e.g. '3,10,30' or '5:3,12:10'"
        )
    return parts


def _parse_level(text: str) -> SpreadLevel:
    pages, _, sources = text.partition(":")
    try:
        numbers = int(pages), int(sources if sources else pages)
    except ValueError:
        raise ValueError(
            f"alert level {text!r} is not N or PAGES:SOURCES (whole numbers), e.g. '10' or '12:10'"
        ) from None
    return SpreadLevel(*numbers)


@dataclass(frozen=True)
class Member:
    """A decided page in a cluster: its id, its outlet (None: unknown) and its event time
    (POSIX seconds; None: none, the page never counts toward an alert)."""

    page_id: str
    source: str | None
    event_time: float | None

    def __post_init__(self) -> None:
        if not isinstance(self.page_id, str) or not self.page_id:
            raise ValueError(f"page_id must be a non-empty string, got {self.page_id!r}")
        if self.source is not None and not isinstance(self.source, str):
            raise ValueError(f"source must be a string or None, got {self.source!r}")
        if self.source == "":
            object.__setattr__(self, "source", None)  # an unknown site is '' in Page.site
        if self.event_time is not None and not (
            isinstance(self.event_time, (int, float))
            and not isinstance(self.event_time, bool)
            and math.isfinite(self.event_time)
        ):
            raise ValueError(f"event_time must be finite seconds or None, got {self.event_time!r}")
        if self.event_time is not None:
            object.__setattr__(self, "event_time", float(self.event_time))


@dataclass(frozen=True)
class SourceSpread:
    """One source of a cluster: its first page and that page's event time (ties: the smaller id)."""

    source: str
    first_page: str
    first_time: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "first_page": self.first_page, "first_time": _iso(self.first_time)}


@dataclass(frozen=True)
class Spread:
    """A cluster's current spread, what a query's answer carries: its live pages, its distinct
    sources (sorted by first time, then name), and the levels it has fired."""

    cluster_id: str
    first_page: str
    pages: int
    sources: tuple[SourceSpread, ...]
    levels_fired: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "first_page": self.first_page,
            "pages": self.pages,
            "sources": [source.to_dict() for source in self.sources],
            "levels_fired": list(self.levels_fired),
        }


@dataclass(frozen=True)
class Alert:
    """A cluster met a level of the rules: the window of event time that met it, and the page whose
    join made it so.

    ``pages``, ``sources``, ``first_time`` and ``last_time`` describe the window's members (the
    cluster's live pages with event times from ``first_time`` to ``last_time``, at most
    ``within_s`` apart); ``first_page`` is the cluster's first page, which may have left it since.
    """

    cluster_id: str
    level: int  # 1-based, in the order of the rules
    rule: SpreadLevel
    within_s: float
    first_page: str
    trigger: str
    trigger_time: float
    pages: int
    sources: tuple[SourceSpread, ...]
    first_time: float
    last_time: float

    @property
    def key(self) -> str:
        """``cluster_id@level``: one record per (cluster, level), so that an alert sent again
        replaces itself on a compacted topic. The level follows the last ``@``."""
        return f"{self.cluster_id}@{self.level}"

    @property
    def span_s(self) -> float:
        """Seconds between the window's first and last event time."""
        return self.last_time - self.first_time

    def to_dict(self) -> dict[str, Any]:
        """The alert record: times as ISO 8601 UTC with milliseconds, the span in seconds."""
        return {
            "key": self.key,
            "cluster_id": self.cluster_id,
            "level": self.level,
            "rule": {
                "pages": self.rule.pages,
                "sources": self.rule.sources,
                "within_hours": self.within_s / _HOUR,
            },
            "first_page": self.first_page,
            "trigger": self.trigger,
            "trigger_time": _iso(self.trigger_time),
            "pages": self.pages,
            "sources": [source.to_dict() for source in self.sources],
            "first_time": _iso(self.first_time),
            "last_time": _iso(self.last_time),
            "span_s": round(self.span_s, 3),
        }


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="milliseconds")


_Timed = tuple[float, str]  # (event time, page id): the order of a cluster's timeline


@dataclass
class _Cluster:
    """What the tracker keeps of one cluster."""

    first_page: str
    members: dict[str, Member] = field(default_factory=dict)  # in join order
    timeline: list[_Timed] = field(default_factory=list)  # members with event time, sorted
    fired: set[int] = field(default_factory=set)  # level numbers (ints: iteration is not randomised)
    latest: float | None = None  # the newest event time a member has had

    def add(self, member: Member) -> None:
        self.members[member.page_id] = member
        if member.event_time is not None:
            insort(self.timeline, (member.event_time, member.page_id))
            self.latest = member.event_time if self.latest is None else max(self.latest, member.event_time)

    def remove(self, page_id: str) -> Member:
        member = self.members.pop(page_id)
        if member.event_time is not None:
            del self.timeline[bisect_left(self.timeline, (member.event_time, page_id))]
        return member


class SpreadTracker:
    """The spread of every cluster, fed with joins, leaves and the window's expiry (see the module doc).

    Args:
        rules: the levels to alert on and the span they must be met within; None follows the
            clusters (their members, for the stream's cluster records) and fires nothing.
    """

    def __init__(self, rules: AlertRules | None) -> None:
        if rules is not None and not isinstance(rules, AlertRules):
            raise ValueError(f"rules must be AlertRules or None, got {rules!r}")
        self.rules = rules
        # clusters whose members changed since the caller last took them (see take_touched)
        self._touched: dict[str, None] = {}
        # clusters whose stored form changed since the caller last took them (see take_changed);
        # None unless asked for: a tracker kept whole in memory needs no account of its changes
        self._changed: set[str] | None = None
        self._clusters: dict[str, _Cluster] = {}
        self._homes: dict[str, str] = {}  # page id -> its cluster
        self._expiry: list[tuple[float, str, str]] = []  # (event time, page, cluster); stale ones skipped
        self._retired: list[tuple[float, str]] = []  # (newest event time, cluster) of memberless clusters
        self.horizon: float | None = None  # the latest horizon expired up to

    def __len__(self) -> int:
        """Pages tracked."""
        return len(self._homes)

    def cluster_of(self, page_id: str) -> str | None:
        """The cluster a page is a member of, if it is tracked."""
        return self._homes.get(page_id)

    # -- joins and leaves -------------------------------------------------------------------------
    def join(self, cluster_id: str, member: Member, first_page: str | None = None) -> list[Alert]:
        """A decided page joins its cluster; returns the alerts this makes fire, by level.

        A page in another cluster leaves it first (a new version decided anew); a page already in
        this cluster is replaced by its new version; the same join again changes nothing.
        ``first_page`` names the cluster's first page when this join creates the cluster's
        entry (the stream's cluster record knows it); by default the member is the first.
        """
        if not isinstance(cluster_id, str) or not cluster_id:
            raise ValueError(f"cluster_id must be a non-empty string, got {cluster_id!r}")
        home = self._homes.get(member.page_id)
        cluster = self._clusters.get(cluster_id)
        if home == cluster_id and cluster is not None:
            if cluster.members[member.page_id] == member:
                return []  # a redelivery
            cluster.remove(member.page_id)
        elif home is not None:
            self.leave(home, member.page_id)
            cluster = self._clusters.get(cluster_id)
        if cluster is None:
            cluster = self._clusters[cluster_id] = _Cluster(first_page or member.page_id)
        cluster.add(member)
        self._homes[member.page_id] = cluster_id
        self._touch(cluster_id)
        if member.event_time is not None:
            heapq.heappush(self._expiry, (member.event_time, member.page_id, cluster_id))
        return self._fire(cluster_id, cluster, member)

    def leave(self, cluster_id: str, page_id: str) -> bool:
        """A page leaves its cluster (retracted, or replaced by a version decided elsewhere).
        Fired levels stay fired. False if the page was not a member of that cluster."""
        if self._homes.get(page_id) != cluster_id:
            return False
        del self._homes[page_id]
        cluster = self._clusters[cluster_id]
        cluster.remove(page_id)
        self._touch(cluster_id)
        if not cluster.members:
            self._retire(cluster_id, cluster)
        return True

    def expire(self, horizon_s: float) -> int:
        """Members whose event time is before ``horizon_s`` leave, as pages leave the index when the
        clock passes their event time plus the window; returns how many left. Clusters left
        without members are forgotten once the horizon passes their newest event time. The
        horizon only moves forward, as the clock does: one at or before the last changes nothing
        (so the tracker drops a page exactly when the index does)."""
        if self.horizon is not None and horizon_s <= self.horizon:
            return 0
        self.horizon = horizon_s
        left = 0
        while self._expiry and self._expiry[0][0] < horizon_s:
            stamp, page_id, cluster_id = heapq.heappop(self._expiry)
            cluster = self._clusters.get(cluster_id)
            member = None if cluster is None else cluster.members.get(page_id)
            if member is not None and member.event_time == stamp and self._homes.get(page_id) == cluster_id:
                left += self.leave(cluster_id, page_id)
        while self._retired and self._retired[0][0] < horizon_s:
            stamp, cluster_id = heapq.heappop(self._retired)
            cluster = self._clusters.get(cluster_id)
            if cluster is not None and not cluster.members and cluster.latest == stamp:
                del self._clusters[cluster_id]
                self._note(cluster_id)
        return left

    def _retire(self, cluster_id: str, cluster: _Cluster) -> None:
        """A cluster without members: kept while its fired levels may still matter (a retracted
        page sent again rejoins it), forgotten otherwise."""
        latest = cluster.latest
        if cluster.fired and latest is not None and (self.horizon is None or latest >= self.horizon):
            heapq.heappush(self._retired, (latest, cluster_id))
        else:
            del self._clusters[cluster_id]
            self._note(cluster_id)

    # -- the rule -----------------------------------------------------------------------------------
    def _fire(self, cluster_id: str, cluster: _Cluster, member: Member) -> list[Alert]:
        """Every level not fired yet that a window holding ``member`` meets fires, lowest first."""
        if member.event_time is None or self.rules is None:
            return []
        alerts = []
        for number, level in enumerate(self.rules.levels, 1):
            if number in cluster.fired:
                continue
            window = self._window(cluster, member.event_time, level)
            if window is None:
                break  # a higher level asks for more: its windows cannot meet it either
            cluster.fired.add(number)
            alerts.append(self._alert(cluster_id, cluster, number, level, member, window))
        return alerts

    def _window(self, cluster: _Cluster, moment: float, level: SpreadLevel) -> list[_Timed] | None:
        """The earliest window of ``within_s`` seconds that holds ``moment`` and meets ``level``: a
        sweep over the window starts at members' event times in [moment - within_s, moment]."""
        assert self.rules is not None  # only called from _fire, which needs rules
        timeline, within = cluster.timeline, self.rules.within_s
        start = bisect_left(timeline, (moment - within, ""))
        while start > 0 and moment - timeline[start - 1][0] <= within:  # the same test as below
            start -= 1
        while start < len(timeline) and moment - timeline[start][0] > within:
            start += 1
        left = right = start
        counts: dict[str, int] = {}
        members = cluster.members
        while start < len(timeline) and timeline[start][0] <= moment:
            opening = timeline[start][0]
            while right < len(timeline) and timeline[right][0] - opening <= within:
                _count(counts, members[timeline[right][1]].source, +1)
                right += 1
            while left < start:
                _count(counts, members[timeline[left][1]].source, -1)
                left += 1
            if right - left >= level.pages and len(counts) >= level.sources:
                return timeline[left:right]
            while start < len(timeline) and timeline[start][0] == opening:
                start += 1
        return None

    def _alert(
        self,
        cluster_id: str,
        cluster: _Cluster,
        number: int,
        level: SpreadLevel,
        trigger: Member,
        window: list[_Timed],
    ) -> Alert:
        assert trigger.event_time is not None and self.rules is not None
        return Alert(
            cluster_id=cluster_id,
            level=number,
            rule=level,
            within_s=self.rules.within_s,
            first_page=cluster.first_page,
            trigger=trigger.page_id,
            trigger_time=trigger.event_time,
            pages=len(window),
            sources=_sources(cluster.members[page_id] for _, page_id in window),
            first_time=window[0][0],
            last_time=window[-1][0],
        )

    # -- queries ------------------------------------------------------------------------------------
    def spread(self, cluster_id: str) -> Spread | None:
        """The cluster's current spread (None: not tracked): its live pages, its sources, its fired
        levels. Pages without event time count here; a source's first time is then None."""
        cluster = self._clusters.get(cluster_id)
        if cluster is None:
            return None
        return Spread(
            cluster_id=cluster_id,
            first_page=cluster.first_page,
            pages=len(cluster.members),
            sources=_sources(cluster.members.values()),
            levels_fired=tuple(sorted(cluster.fired)),
        )

    def _touch(self, cluster_id: str) -> None:
        self._touched[cluster_id] = None
        self._note(cluster_id)

    def _note(self, cluster_id: str) -> None:
        if self._changed is not None:
            self._changed.add(cluster_id)

    def track_changes(self) -> None:
        """From now on, account for every cluster whose stored form changes (:meth:`take_changed`):
        for a tracker kept as rows, one row per cluster."""
        self._changed = set()

    def take_changed(self) -> list[tuple[str, dict[str, Any] | None]]:
        """The stored form of every cluster changed since the last call (None: forgotten), in
        cluster order; see :meth:`track_changes`."""
        if self._changed is None:
            raise ValueError("call track_changes() first")
        changed, self._changed = sorted(self._changed), set()
        return [(cluster_id, self._stored(cluster_id)) for cluster_id in changed]

    def _stored(self, cluster_id: str) -> dict[str, Any] | None:
        cluster = self._clusters.get(cluster_id)
        if cluster is None:
            return None
        levels = () if self.rules is None else self.rules.levels
        return {
            "id": cluster_id,
            "first": cluster.first_page,
            "fired": [[levels[n - 1].pages, levels[n - 1].sources] for n in sorted(cluster.fired)],
            "latest": cluster.latest,
            "members": [[m.page_id, m.source, m.event_time] for m in cluster.members.values()],
        }

    def take_touched(self) -> list[str]:
        """The clusters whose members changed since the last call, in the order they first changed
        (the stream sends each one's new record, :meth:`record`)."""
        touched, self._touched = list(self._touched), {}
        return touched

    def record(self, cluster_id: str, recent: int = 20) -> dict[str, Any] | None:
        """The cluster as the output topic carries it: its first page, its live size, its ``recent``
        newest members and the newest event time it has had; None when it has no live member (a
        tombstone: compaction forgets it)."""
        cluster = self._clusters.get(cluster_id)
        if cluster is None or not cluster.members:
            return None
        members = list(cluster.members)
        return {
            "cluster_id": cluster_id,
            "first": cluster.first_page,
            "size": len(members),
            "members": members[-recent:],
            "updated_at": cluster.latest,
        }

    # -- durable form -------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The tracker as JSON-friendly data (for ``--state`` files). Fired levels are saved as the
        levels they were (pages, sources), so state loaded under other levels keeps those fired
        that are still asked for."""
        return {
            "format": STATE_FORMAT,
            "horizon": self.horizon,
            "clusters": [self._stored(cluster_id) for cluster_id in self._clusters],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Load state made by :meth:`state` into an empty tracker."""
        if self._homes or self._clusters:
            raise ValueError("spread state can only be loaded into an empty tracker")
        if state.get("format") != STATE_FORMAT:
            raise ValueError(
                f"unsupported spread state format {state.get('format')!r} (this version reads {STATE_FORMAT})"
            )
        levels = () if self.rules is None else self.rules.levels
        numbers = {(level.pages, level.sources): n for n, level in enumerate(levels, 1)}
        self.horizon = state["horizon"]
        for row in state["clusters"]:
            cluster = self._clusters[row["id"]] = _Cluster(row["first"])
            cluster.fired = {numbers[(p, s)] for p, s in row["fired"] if (p, s) in numbers}
            for page_id, source, event_time in row["members"]:
                cluster.add(Member(page_id, source, event_time))
                self._homes[page_id] = row["id"]
                if event_time is not None:
                    heapq.heappush(self._expiry, (event_time, page_id, row["id"]))
            cluster.latest = row["latest"]
            if not cluster.members:
                self._retire(row["id"], cluster)


def _count(counts: dict[str, int], source: str | None, step: int) -> None:
    if source is None:
        return
    left = counts.get(source, 0) + step
    if left:
        counts[source] = left
    else:
        del counts[source]


def _sources(members: Iterable[Member]) -> tuple[SourceSpread, ...]:
    """Each source's first member by (event time, id), sorted by first time then name; members
    without event time come after those with one."""
    first: dict[str, Member] = {}
    for member in members:
        if member.source is not None:
            known = first.get(member.source)
            if known is None or _order(member) < _order(known):
                first[member.source] = member
    spread = [SourceSpread(source, m.page_id, m.event_time) for source, m in first.items()]
    spread.sort(key=lambda s: (s.first_time is None, s.first_time or 0.0, s.source))
    return tuple(spread)


def _order(member: Member) -> tuple[bool, float, str]:
    return (member.event_time is None, member.event_time or 0.0, member.page_id)
