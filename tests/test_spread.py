"""Story spread (stream_lsh.core.spread): alert levels, the window of event time, once per level,
retractions and expiry, state; and, as properties, a brute-force model of the rule."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.spread import Alert, AlertRules, Member, SourceSpread, SpreadLevel, SpreadTracker

H = 3600.0


def tracker(levels: str = "3,10,30", within_hours: float = 6) -> SpreadTracker:
    return SpreadTracker(AlertRules.parse(levels, within_hours))


def fired(alerts: list[Alert]) -> list[tuple[str, int, str]]:
    return [(a.cluster_id, a.level, a.trigger) for a in alerts]


# -- rules ------------------------------------------------------------------------------------------


def test_levels_parse_as_n_or_pages_sources_and_number_from_one():
    rules = AlertRules.parse("3,10,30", 6)
    assert rules.levels == (SpreadLevel(3, 3), SpreadLevel(10, 10), SpreadLevel(30, 30))
    assert rules.within_s == 6 * H and rules.describe() == "3,10,30 within 6 h"
    mixed = AlertRules.parse(" 5:3, 12:10 ,20", 1.5)
    assert mixed.levels == (SpreadLevel(5, 3), SpreadLevel(12, 10), SpreadLevel(20, 20))
    assert mixed.within_s == 5400 and mixed.describe() == "5:3,12:10,20 within 1.5 h"


@pytest.mark.parametrize(
    "levels, hours, message",
    [
        ("", 6, "write them as N or PAGES:SOURCES"),
        ("3,,10", 6, "write them as N or PAGES:SOURCES"),
        ("three", 6, "'three' is not N or PAGES:SOURCES"),
        ("3:x", 6, "'3:x' is not N or PAGES:SOURCES"),
        ("0", 6, "pages must be an integer >= 1"),
        ("3:0", 6, "sources must be an integer >= 1"),
        ("5:6", 6, "more sources than pages"),
        ("3,3", 6, r"level 2 \(3\) must ask for more than level 1 \(3\)"),
        ("10,3", 6, r"level 2 \(3\) must ask for more than level 1 \(10\)"),
        ("5:3,6:2", 6, r"level 2 \(6:2\) must ask for more than level 1 \(5:3\)"),
        ("3", 0, "within_s must be positive"),
        ("3", -1, "within_s must be positive"),
        ("3", float("nan"), "within_s must be positive"),
        ("3", float("inf"), "within_s must be positive"),
    ],
)
def test_bad_rules_are_refused_saying_why(levels, hours, message):
    with pytest.raises(ValueError, match=message):
        AlertRules.parse(levels, hours)


def test_a_level_may_raise_pages_or_sources_alone():
    assert AlertRules.parse("3:2,5:2,5:5", 6).levels[2] == SpreadLevel(5, 5)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Member("", "x", 0.0), "page_id must be a non-empty string"),
        (lambda: Member("a", "x", float("nan")), "event_time must be finite"),
        (lambda: Member("a", 3, 0.0), "source must be a string or None"),
        (lambda: AlertRules((), 60.0), "at least one level"),
        (lambda: SpreadLevel(True, 1), "pages must be an integer"),
        (lambda: SpreadTracker("3,10"), "rules must be AlertRules"),
    ],
)
def test_bad_values_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_an_unknown_source_is_none():
    assert Member("a", "", 1).source is None and Member("a", "", 1).event_time == 1.0


# -- the rule ---------------------------------------------------------------------------------------


def test_a_level_fires_at_the_page_that_meets_it():
    spread = tracker()
    assert spread.join("c", Member("a", "x.com", 0)) == []
    assert spread.join("c", Member("b", "y.com", H)) == []
    (alert,) = spread.join("c", Member("c", "z.com", 2 * H))
    assert (alert.cluster_id, alert.level, alert.rule, alert.trigger, alert.trigger_time) == (
        "c",
        1,
        SpreadLevel(3, 3),
        "c",
        2 * H,
    )
    assert (alert.pages, alert.first_time, alert.last_time, alert.span_s) == (3, 0.0, 2 * H, 2 * H)
    assert alert.sources == (
        SourceSpread("x.com", "a", 0.0),
        SourceSpread("y.com", "b", H),
        SourceSpread("z.com", "c", 2 * H),
    )
    assert alert.first_page == "a" and alert.key == "c@1"


def test_sources_must_be_distinct():
    spread = tracker("3")
    for n in range(5):
        assert spread.join("c", Member(f"p{n}", "x.com" if n % 2 else "y.com", n * 60.0)) == []
    assert fired(spread.join("c", Member("p5", "z.com", 300.0))) == [("c", 1, "p5")]
    relaxed = tracker("3:2")
    relaxed.join("c", Member("p0", "x.com", 0))
    relaxed.join("c", Member("p1", "x.com", 60))
    assert fired(relaxed.join("c", Member("p2", "y.com", 120))) == [("c", 1, "p2")]


def test_pages_without_a_source_count_as_pages_not_as_sources():
    spread = tracker("3")
    spread.join("c", Member("a", "x.com", 0))
    spread.join("c", Member("b", None, 60))
    assert spread.join("c", Member("c", "y.com", 120)) == []  # 3 pages, 2 sources
    (alert,) = spread.join("c", Member("d", "z.com", 180))
    assert alert.pages == 4 and [s.source for s in alert.sources] == ["x.com", "y.com", "z.com"]
    two_sources = tracker("3:2")
    two_sources.join("c", Member("a", "x.com", 0))
    two_sources.join("c", Member("b", None, 60))
    assert fired(two_sources.join("c", Member("c", "y.com", 120))) == [("c", 1, "c")]


def test_pages_without_event_time_never_count_toward_an_alert():
    spread = tracker("3")
    for name, source in zip("abc", ("x", "y", "z")):
        assert spread.join("c", Member(name, source, None)) == []
    assert spread.join("c", Member("d", "w", 0)) == []  # one timed page: no window of 3
    now = spread.spread("c")
    assert now is not None and now.pages == 4 and len(now.sources) == 4
    assert now.sources[0] == SourceSpread("w", "d", 0.0) and now.sources[1].first_time is None


def test_the_pages_must_fall_within_the_span_of_event_time():
    spread = tracker("3")
    spread.join("c", Member("a", "x", 0))
    spread.join("c", Member("b", "y", 4 * H))
    assert spread.join("c", Member("c", "z", 7 * H)) == []  # a to c: 7 h
    (alert,) = spread.join("c", Member("d", "w", 8 * H))
    assert (alert.first_time, alert.last_time, alert.pages) == (4 * H, 8 * H, 3)
    assert [s.first_page for s in alert.sources] == ["b", "c", "d"]


def test_the_span_is_closed_exactly_within_s_apart_counts():
    exact = tracker("3")
    exact.join("c", Member("a", "x", 0))
    exact.join("c", Member("b", "y", 3 * H))
    assert fired(exact.join("c", Member("c", "z", 6 * H))) == [("c", 1, "c")]
    beyond = tracker("3")
    beyond.join("c", Member("a", "x", 0))
    beyond.join("c", Member("b", "y", 3 * H))
    assert beyond.join("c", Member("c", "z", 6 * H + 0.001)) == []


def test_out_of_order_event_times_fire_at_the_join_that_completes_the_window():
    spread = tracker("3")
    spread.join("c", Member("late", "x", 5 * H))
    spread.join("c", Member("first", "y", 0))
    (alert,) = spread.join("c", Member("middle", "z", 2 * H))
    assert (alert.trigger, alert.trigger_time) == ("middle", 2 * H)
    assert (alert.first_time, alert.last_time, alert.span_s) == (0.0, 5 * H, 5 * H)
    assert [s.first_page for s in alert.sources] == ["first", "middle", "late"]


def test_the_earliest_window_holding_the_trigger_is_reported():
    spread = tracker("3")
    spread.join("c", Member("a", "x", 0))
    spread.join("c", Member("b", "y", 5 * H))
    spread.join("c", Member("c", "z", 10 * H))
    # 5.5 h is in [0, 6 h] (a, b, d) and in [5 h, 11 h] (b, d, c): both meet the level
    (alert,) = spread.join("c", Member("d", "w", 5.5 * H))
    assert (alert.first_time, alert.last_time, alert.pages) == (0.0, 5.5 * H, 3)
    assert [s.first_page for s in alert.sources] == ["a", "b", "d"]


def test_each_source_is_listed_once_with_its_first_page():
    spread = tracker("3:2")
    spread.join("c", Member("x2", "x", 2 * H))
    spread.join("c", Member("x1", "x", H))
    (alert,) = spread.join("c", Member("y1", "y", 3 * H))
    assert alert.sources == (SourceSpread("x", "x1", H), SourceSpread("y", "y1", 3 * H))
    assert alert.pages == 3


def test_each_level_fires_once_and_in_order():
    spread = tracker()
    alerts = []
    for n in range(35):
        alerts += spread.join("c", Member(f"p{n:02d}", f"site{n}", n * 60.0))
    assert fired(alerts) == [("c", 1, "p02"), ("c", 2, "p09"), ("c", 3, "p29")]
    assert [a.pages for a in alerts] == [3, 10, 30]
    now = spread.spread("c")
    assert now is not None and now.pages == 35 and now.levels_fired == (1, 2, 3)


def test_a_join_can_fire_several_levels_at_once():
    spread = tracker("2:2,3:2")
    spread.join("c", Member("a", "x", 0))
    spread.join("c", Member("b", "x", 60))
    assert fired(spread.join("c", Member("c", "y", 120))) == [("c", 1, "c"), ("c", 2, "c")]


def test_clusters_are_counted_apart():
    spread = tracker("2")
    spread.join("one", Member("a", "x", 0))
    assert spread.join("two", Member("b", "y", 0)) == []
    assert fired(spread.join("one", Member("c", "z", 0))) == [("one", 1, "c")]


# -- joins again, leaves, expiry -----------------------------------------------------------------


def test_the_same_join_again_changes_nothing():
    spread = tracker("3")
    spread.join("c", Member("a", "x", 0))
    spread.join("c", Member("b", "y", 60))
    before = spread.spread("c")
    assert spread.join("c", Member("b", "y", 60)) == [] and spread.spread("c") == before
    assert len(spread) == 2


def test_a_new_version_replaces_the_page_in_its_cluster_or_moves_it():
    spread = tracker("3")
    spread.join("c", Member("a", "x", 0))
    spread.join("c", Member("b", "y", 60))
    spread.join("c", Member("b", "y", 7 * H))  # b's new version: later, out of a's window
    assert spread.join("c", Member("d", "z", 120)) == []
    assert spread.spread("c").pages == 3
    spread.join("other", Member("b", "y", 60))  # decided anew into another cluster
    assert spread.cluster_of("b") == "other" and spread.spread("c").pages == 2


def test_a_retraction_lowers_the_count_but_never_fires_a_level_again():
    spread = tracker("3,4")
    for name, source in zip("abc", "xyz"):
        spread.join("c", Member(name, source, 0))
    assert spread.leave("c", "c") and not spread.leave("c", "c") and not spread.leave("other", "a")
    assert spread.spread("c").pages == 2
    assert spread.join("c", Member("d", "w", 0)) == []  # 3 again: level 1 has fired
    for name in "abd":
        spread.leave("c", name)
    tombstone = spread.spread("c")
    assert tombstone is not None and tombstone.pages == 0 and tombstone.levels_fired == (1,)
    for name, source in zip("abc", "xyz"):  # the same pages sent again, the same cluster
        assert spread.join("c", Member(name, source, 0)) == []
    assert fired(spread.join("c", Member("d", "w", 0))) == [("c", 2, "d")]
    assert spread.spread("c").first_page == "a"


def test_a_cluster_without_fired_levels_is_forgotten_when_its_last_page_leaves():
    spread = tracker("3")
    spread.join("c", Member("a", "x", 0), first_page="founder")
    assert spread.spread("c").first_page == "founder"
    spread.leave("c", "a")
    assert spread.spread("c") is None and len(spread) == 0


def test_expiry_drops_members_before_the_horizon_and_only_moves_forward():
    spread = tracker("3")
    spread.join("c", Member("a", "x", 0))
    spread.join("c", Member("b", "y", 100))
    spread.join("c", Member("t", "z", None))  # no time: never expires
    assert spread.expire(100) == 1 and spread.cluster_of("a") is None
    assert spread.expire(100) == 0 and spread.expire(50) == 0 and spread.horizon == 100
    assert spread.spread("c").pages == 2
    assert spread.expire(101) == 1 and spread.spread("c").pages == 1


def test_an_expired_cluster_is_forgotten_and_its_name_fires_afresh():
    spread = tracker("3")
    for name, source in zip("abc", "xyz"):
        spread.join("c", Member(name, source, 0))
    assert spread.expire(1) == 3 and spread.spread("c") is None and len(spread) == 0
    alerts = [a for name, s in zip("def", "xyz") for a in spread.join("c", Member(name, s, 10))]
    assert fired(alerts) == [("c", 1, "f")]


def test_a_retracted_cluster_is_forgotten_once_the_horizon_passes_its_newest_time():
    spread = tracker("3")
    for name, source, moment in zip("abc", "xyz", (0, 10, 20)):
        spread.join("c", Member(name, source, moment))
    spread.leave("c", "c")  # newest, retracted
    assert spread.expire(15) == 2 and spread.spread("c") is not None  # kept: c's time is ahead
    assert spread.expire(20) == 0 and spread.spread("c") is not None
    spread.expire(21)
    assert spread.spread("c") is None


# -- state ------------------------------------------------------------------------------------------


def _busy() -> SpreadTracker:
    spread = tracker("2,3")
    spread.join("c", Member("a", "x", 0), first_page="zero")
    spread.join("c", Member("b", "y", 60))  # level 1
    spread.join("d", Member("e", None, None))
    spread.join("g", Member("h", "x", 500))
    spread.join("g", Member("i", "y", 600))  # level 1 of g ...
    spread.leave("g", "h")
    spread.leave("g", "i")  # ... a retracted cluster, kept
    spread.expire(-5)
    return spread


def test_state_round_trips_through_json_and_goes_on_alike():
    original = _busy()
    copy = tracker("2,3")
    copy.load_state(orjson.loads(orjson.dumps(original.state())))
    assert copy.state() == original.state()
    for spread in (original, copy):
        assert spread.spread("g").levels_fired == (1,)
    steps = [
        ("join", "c", Member("f", "z", 120)),
        ("join", "g", Member("h", "x", 500)),
        ("join", "g", Member("j", "z", 510)),
        ("join", "g", Member("k", "w", 520)),
        ("expire", 515.0, None),
        ("join", "g", Member("m", "v", 530)),
    ]
    for spread in (original, copy):
        got = []
        for kind, target, member in steps:
            if kind == "join":
                got += spread.join(target, member)
            else:
                spread.expire(target)
        assert fired(got) == [("c", 2, "f"), ("g", 2, "k")]
    assert copy.state() == original.state()


def test_state_loaded_under_other_levels_keeps_those_still_asked_for():
    saved = _busy().state()
    other = tracker("3,5")
    other.load_state(saved)
    assert other.spread("c").levels_fired == ()
    assert other.spread("g") is None  # no members and no level fired that is still asked for
    same_first = tracker("2,5")
    same_first.load_state(saved)
    assert same_first.spread("c").levels_fired == (1,)


def test_state_loads_only_into_an_empty_tracker_of_a_known_format():
    with pytest.raises(ValueError, match="empty tracker"):
        _busy().load_state(_busy().state())
    with pytest.raises(ValueError, match="unsupported spread state format 9"):
        tracker().load_state({"format": 9})


def test_the_alert_record():
    spread = tracker("2", within_hours=1.5)
    spread.join("p1#2", Member("p1", "x.com", 1_772_366_400.0))  # 2026-03-01T12:00:00Z
    (alert,) = spread.join("p1#2", Member("p2", "y.com", 1_772_366_400.25))
    assert orjson.loads(orjson.dumps(alert.to_dict())) == {
        "key": "p1#2@1",
        "cluster_id": "p1#2",
        "level": 1,
        "rule": {"pages": 2, "sources": 2, "within_hours": 1.5},
        "first_page": "p1",
        "trigger": "p2",
        "trigger_time": "2026-03-01T12:00:00.250+00:00",
        "pages": 2,
        "sources": [
            {"source": "x.com", "first_page": "p1", "first_time": "2026-03-01T12:00:00.000+00:00"},
            {"source": "y.com", "first_page": "p2", "first_time": "2026-03-01T12:00:00.250+00:00"},
        ],
        "first_time": "2026-03-01T12:00:00.000+00:00",
        "last_time": "2026-03-01T12:00:00.250+00:00",
        "span_s": 0.25,
    }


# -- properties: a brute-force model ---------------------------------------------------------------


@dataclass
class Model:
    """The rule as stated, by brute force: every window start, every member, every time."""

    rules: AlertRules
    live: dict[str, dict[str, Member]] = field(default_factory=dict)  # cluster -> page -> member
    fired: dict[str, set[int]] = field(default_factory=dict)

    def join(self, cluster: str, member: Member) -> list[tuple]:
        for members in self.live.values():
            members.pop(member.page_id, None)
        self.live.setdefault(cluster, {})[member.page_id] = member
        if member.event_time is None:
            return []
        moment, within = member.event_time, self.rules.within_s
        timed = [m for m in self.live[cluster].values() if m.event_time is not None]
        found = []
        for number, level in enumerate(self.rules.levels, 1):
            if number in self.fired.setdefault(cluster, set()):
                continue
            starts = sorted({m.event_time for m in timed if 0 <= moment - m.event_time <= within})
            for start in starts:
                inside = [m for m in timed if 0 <= m.event_time - start <= within]
                sources = {m.source for m in inside if m.source is not None}
                if len(inside) >= level.pages and len(sources) >= level.sources:
                    times = [m.event_time for m in inside]
                    window = (len(inside), min(times), max(times), len(sources))
                    found.append((cluster, number, member.page_id, *window))
                    self.fired[cluster].add(number)
                    break
            else:
                break
        return found

    def leave(self, cluster: str, page_id: str) -> None:
        self.live.get(cluster, {}).pop(page_id, None)


def _as_model(alerts: list[Alert]) -> list[tuple]:
    return [
        (a.cluster_id, a.level, a.trigger, a.pages, a.first_time, a.last_time, len(a.sources)) for a in alerts
    ]


_steps = st.lists(
    st.tuples(
        st.sampled_from(["join", "join", "join", "leave"]),
        st.sampled_from(["c1", "c2"]),
        st.integers(0, 11),  # page
        st.sampled_from(["s0", "s1", "s2", "s3", None]),
        st.one_of(st.none(), st.integers(0, 20).map(lambda n: n * 900.0)),  # quarter hours over 5 h
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps=_steps, levels=st.sampled_from(["2,3,4", "3:2,4:3", "2:1,5:2,6:4"]))
def test_the_tracker_fires_exactly_what_the_rule_says(steps, levels):
    rules = AlertRules.parse(levels, 1.0)
    spread, model = SpreadTracker(rules), Model(rules)
    seen: set[tuple[str, int]] = set()
    for kind, cluster, page, source, moment in steps:
        page_id = f"p{page}"
        if kind == "leave":
            home = spread.cluster_of(page_id)
            spread.leave(cluster, page_id)
            if home == cluster:
                model.leave(cluster, page_id)
            continue
        alerts = spread.join(cluster, Member(page_id, source, moment))
        assert _as_model(alerts) == model.join(cluster, Member(page_id, source, moment))
        for alert in alerts:
            assert (alert.cluster_id, alert.level) not in seen  # never twice, whatever left meanwhile
            seen.add((alert.cluster_id, alert.level))


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["join", "join", "join", "leave", "expire"]),
            st.sampled_from(["c1", "c2"]),
            st.integers(0, 9),
            st.sampled_from(["s0", "s1", "s2", None]),
            st.integers(0, 40).map(lambda n: n * 600.0),
        ),
        max_size=60,
    )
)
def test_every_alert_holds_on_the_pages_live_when_it_fires(steps):
    rules = AlertRules.parse("2,3:2,4:3", 1.0)
    spread = SpreadTracker(rules)
    live: dict[str, dict[str, Member]] = {}
    emptied: dict[tuple[str, int], bool] = {}  # fired (cluster, level) -> its cluster was forgotten since
    horizon = float("-inf")
    for kind, cluster, page, source, moment in steps:
        page_id = f"p{page}"
        if kind == "expire":
            spread.expire(moment / 2)
            if moment / 2 <= horizon:
                continue  # the horizon only moves forward
            horizon = moment / 2
            for members in live.values():
                for gone in [p for p, m in members.items() if m.event_time < horizon]:
                    del members[gone]
        elif kind == "leave":
            if spread.leave(cluster, page_id):
                del live[cluster][page_id]
        else:
            for members in live.values():
                members.pop(page_id, None)
            live.setdefault(cluster, {})[page_id] = Member(page_id, source, moment)
            for alert in spread.join(cluster, Member(page_id, source, moment)):
                level = rules.levels[alert.level - 1]
                inside = [
                    m for m in live[cluster].values() if alert.first_time <= m.event_time <= alert.last_time
                ]
                sources = {m.source for m in inside if m.source}
                assert alert.pages == len(inside) >= level.pages
                assert len(alert.sources) == len(sources) >= level.sources
                assert {s.source for s in alert.sources} == sources
                assert alert.span_s <= rules.within_s
                assert alert.first_time <= alert.trigger_time <= alert.last_time and alert.trigger == page_id
                assert emptied.get((cluster, alert.level), True), "fired twice in one life of a cluster"
                emptied[(cluster, alert.level)] = False
        for key in emptied:
            if spread.spread(key[0]) is None:
                emptied[key] = True
        assert sum(len(m) for m in live.values()) == len(spread)
