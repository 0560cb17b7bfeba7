"""Story-spread alerts in batch: run_batch follows the decisions (joins, redeliveries, new versions,
retractions, the window), `stream-lsh dedup --alerts`, --state across runs, the settings; and on
generated stories that spread, the alerts the truth says are due."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from stream_lsh import DedupConfig, Deduplicator, load_state, save_state
from stream_lsh.batch import DecisionRecords, RejectSink, SpreadAlerts, run_batch
from stream_lsh.cli import cli
from stream_lsh.core.spread import AlertRules, SpreadTracker
from stream_lsh.synthetic import SPREAD_HOURS, generate_corpus_with_truth

BASE = datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
STORY = (
    "Storm Amy reached the coast on Friday night, and the wind cut power to thousands of homes "
    "along the shore while the rain kept falling for most of the weekend."
)
OTHER = (
    "The city council approved the budget for new schools after a debate that lasted until "
    "midnight, and the mayor said the work would start in the spring."
)


def page(page_id: str, source: str | None, minutes: float = 0, text: str = STORY) -> bytes:
    record = {"id": page_id, "text": text, "published_at": (BASE + timedelta(minutes=minutes)).isoformat()}
    if source is not None:
        record["source"] = source
    return orjson.dumps(record)


def delete(page_id: str) -> bytes:
    return orjson.dumps({"id": page_id, "op": "delete"})


def fillers(minutes: float = 0) -> list[bytes]:
    """Five unrelated dated pages of two sites: the file's clock starts with them."""
    words = ["alpha", "bravo", "charlie", "delta", "echo"]
    return [
        page(
            f"filler-{word}",
            f"filler{n % 2}.example",
            minutes,
            f"The {word} report of the {word} office was read in the hall of the {word} museum by the "
            f"{word} staff and the {word} guests.",
        )
        for n, word in enumerate(words)
    ]


def run(lines: list[bytes], levels: str = "3,10,30", tracker: SpreadTracker | None = None, **config):
    spread = tracker or SpreadTracker(AlertRules.parse(levels, 6))
    alerts, decisions = DecisionRecords(), DecisionRecords()

    def no_rejects():
        raise AssertionError("nothing here should be rejected")

    summary = run_batch(
        lines,
        Deduplicator(DedupConfig(**config)),
        out=decisions,
        rejects=RejectSink(no_rejects),
        alerts=SpreadAlerts(spread, alerts),
    )
    return alerts.records, decisions.records, spread, summary


def fired(alerts: list[dict]) -> list[tuple[str, int, str, int]]:
    return [(a["cluster_id"], a["level"], a["trigger"], a["pages"]) for a in alerts]


# -- run_batch follows the decisions ----------------------------------------------------------------


def test_copies_at_three_sources_fire_the_first_level():
    alerts, decisions, _, summary = run(
        [page("a", "x.example"), page("b", "y.example", 30), page("c", "z.example", 90)]
    )
    assert [d["cluster_id"] for d in decisions] == ["a", "a", "a"]
    assert fired(alerts) == [("a", 1, "c", 3)] and summary.alerts == 1
    (alert,) = alerts
    assert alert["key"] == "a@1" and alert["first_page"] == "a"
    assert alert["trigger_time"] == "2026-03-01T13:30:00.000+00:00" and alert["span_s"] == 5400
    assert [s["source"] for s in alert["sources"]] == ["x.example", "y.example", "z.example"]
    assert "| alerts 1 |" in summary.format()


def test_pages_without_a_site_count_as_pages_but_not_as_sources():
    lines = [page("a", "x.example"), page("b", None, 10), page("c", "y.example", 20)]
    assert run(lines)[0] == []
    assert fired(run(lines, levels="3:2")[0]) == [("a", 1, "c", 3)]


def test_a_redelivered_page_counts_once_as_first_decided():
    """A redelivery (the same id and body) gets its decision again and changes nothing, also when
    it comes with another date or site: b stays at 12:05 from y, so a, b and c fall in 6 hours."""
    alerts, _, spread, _ = run([page("a", "x.example"), page("b", "y.example", 5), page("b", "y.example", 5)])
    assert alerts == [] and spread.spread("a").pages == 2
    alerts, decisions, _, _ = run(
        [
            page("a", "x.example"),
            page("b", "y.example", 5),
            page("b", "w.example", 7 * 60),
            page("c", "z.example", 9),
        ]
    )
    assert decisions[1] == decisions[2]
    assert fired(alerts) == [("a", 1, "c", 3)]
    assert [s["source"] for s in alerts[0]["sources"]] == ["x.example", "y.example", "z.example"]


def test_a_retraction_lowers_the_count_and_a_level_never_fires_again():
    before = [page("a", "x.example"), page("b", "y.example", 5), delete("b"), page("c", "z.example", 9)]
    alerts, _, spread, summary = run(before)
    assert alerts == [] and spread.spread("a").pages == 2 and summary.deleted == 1
    alerts, _, _, _ = run([*before, page("d", "w.example", 12)])
    assert fired(alerts) == [("a", 1, "d", 3)]
    again = [*before, page("d", "w.example", 12), delete("d"), delete("c"), page("d", "w.example", 12)]
    alerts, _, spread, _ = run([*again, page("e", "v.example", 15)])
    assert fired(alerts) == [("a", 1, "d", 3)] and spread.spread("a").pages == 3  # a, d, e: fired before


def test_a_new_version_leaves_the_cluster_of_its_old_one():
    alerts, decisions, spread, _ = run(
        [
            page("a", "x.example"),
            page("b", "y.example", 5),
            page("b", "y.example", 6, OTHER),  # b now tells another story: its own cluster
            page("c", "z.example", 9),
        ]
    )
    assert [d["cluster_id"] for d in decisions] == ["a", "a", "b", "a"]
    assert alerts == [] and spread.spread("a").pages == 2 and spread.cluster_of("b") == "b"
    _, decisions, spread, _ = run(
        [page("a", "x.example"), page("b", "y.example", 5), page("b", "y.example", 6, "Photos")]
    )
    assert decisions[-1]["status"] == "no_content" and spread.cluster_of("b") is None
    assert spread.spread("a").pages == 1


def test_pages_leave_with_the_window():
    """The file's clock moves the window: with a window of 1 hour, a page 1 h 40 min older than
    the newest has left the index and the cluster's spread, which then holds 2 pages, not 3."""
    lines = [*fillers(), page("a", "x.example"), page("b", "y.example", 50), page("c", "z.example", 100)]
    alerts, decisions, spread, _ = run(lines, ttl=3600.0)
    assert [d["cluster_id"] for d in decisions[-3:]] == ["a", "a", "a"]  # c found b, still indexed
    assert alerts == [] and spread.cluster_of("a") is None and spread.spread("a").pages == 2
    assert fired(run(lines)[0]) == [("a", 1, "c", 3)]  # the default window keeps a


def test_state_carries_the_spread_to_the_next_run(tmp_path):
    lines = [
        page("a", "x.example"),
        page("b", "y.example", 5),
        page("c", "z.example", 9),
        page("d", "w.example", 10),
    ]
    rules = AlertRules.parse("3,4", 6)
    dedup, tracker, alerts = Deduplicator(), SpreadTracker(rules), DecisionRecords()
    run_batch(
        lines[:3],
        dedup,
        out=DecisionRecords(),
        rejects=RejectSink(list),
        alerts=SpreadAlerts(tracker, alerts),
    )
    save_state(dedup, tmp_path / "state.npz", spread=tracker)
    later, again, more = Deduplicator(), SpreadTracker(rules), DecisionRecords()
    assert load_state(later, tmp_path / "state.npz", spread=again)
    run_batch(
        lines[3:], later, out=DecisionRecords(), rejects=RejectSink(list), alerts=SpreadAlerts(again, more)
    )
    assert fired(alerts.records + more.records) == fired(run(lines, levels="3,4")[0])
    assert fired(more.records) == [("a", 2, "d", 4)]
    empty = SpreadTracker(rules)
    save_state(Deduplicator(), tmp_path / "bare.npz")
    assert not load_state(Deduplicator(), tmp_path / "bare.npz", spread=empty) and len(empty) == 0


# -- the command -------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def spreading(tmp_path_factory):
    """2,000 generated pages with six spreading stories (two of each size), and their truth."""
    folder = tmp_path_factory.mktemp("spreading")
    arguments = ["--pages", "2000", "--seed", "7", "--spreading", "6"]
    result = CliRunner().invoke(
        cli,
        ["generate", *arguments, "-o", str(folder / "pages.jsonl"), "--labels", str(folder / "labels.json")],
    )
    assert result.exit_code == 0, result.output
    _, truth = generate_corpus_with_truth(2000, 7, spreading=6)
    return folder, truth


def dedup(folder: Path, *args: str, env: dict | None = None):
    return CliRunner(env=env).invoke(
        cli, ["dedup", str(folder / "pages.jsonl"), "-o", str(folder / "decisions.jsonl"), *args]
    )


def due_alerts(members: list[tuple[str, str, float]], rules: AlertRules) -> list[tuple]:
    """The alerts a cluster is due, by brute force over its pages in decision order (id, source,
    event time): at each page, every level not fired yet, in every window of ``within_s`` that
    holds the page, earliest first."""
    due, fired_levels, seen = [], set(), []
    for page_id, source, moment in members:
        seen.append((page_id, source, moment))
        for number, level in enumerate(rules.levels, 1):
            if number in fired_levels:
                continue
            for start in sorted({t for _, _, t in seen if 0 <= moment - t <= rules.within_s}):
                inside = [(p, s, t) for p, s, t in seen if 0 <= t - start <= rules.within_s]
                sources = sorted({s for _, s, _ in inside})
                if len(inside) >= level.pages and len(sources) >= level.sources:
                    due.append((number, page_id, len(inside), tuple(sources)))
                    fired_levels.add(number)
                    break
            else:
                break
    return due


def test_dedup_alerts_on_spreading_stories_are_the_ones_the_truth_says_are_due(spreading, tmp_path):
    """Each cluster fires the alerts the rule gives for its pages in file order (sources and
    event times from the truth: each page's outlet and publication time; nothing leaves the
    index, the corpus spans 48 h of a 72 h window). Where the engine clustered a story exactly,
    those are the alerts the story is due; a story it split or merged with another page (measured:
    21 of 862 stories) may differ, counted below. Every spreading story is clustered exactly and
    fires level k at its 3rd, 10th and 30th copy."""
    folder, truth = spreading
    alerts_path = tmp_path / "alerts.jsonl"
    result = dedup(folder, "--alerts", str(alerts_path))
    assert result.exit_code == 0, result.output
    alerts, decisions = read_jsonl(alerts_path), read_jsonl(folder / "decisions.jsonl")
    assert f"| alerts {len(alerts):,} |" in result.stderr
    position = {d["id"]: n for n, d in enumerate(decisions)}
    assert [position[a["trigger"]] for a in alerts] == sorted(position[a["trigger"]] for a in alerts)
    assert len({a["key"] for a in alerts}) == len(alerts)
    got = defaultdict(list)
    for a in alerts:
        sources = tuple(sorted(s["source"] for s in a["sources"]))
        got[a["cluster_id"]].append((a["level"], a["trigger"], a["pages"], sources))

    def due(pages: list[str]) -> list[tuple]:
        members = [(p, truth[p].outlet, truth[p].published.timestamp()) for p in pages]
        return due_alerts(members, AlertRules.parse("3,10,30", 6))

    by_label, by_cluster = defaultdict(list), defaultdict(list)
    for d in decisions:
        by_label[truth[d["id"]].label].append(d["id"])
        if d["cluster_id"] is not None:
            by_cluster[d["cluster_id"]].append(d["id"])
    assert set(got) <= set(by_cluster)
    for cluster, pages in by_cluster.items():
        assert got[cluster] == due(pages), cluster

    exact = {}  # story (label) -> its cluster, where the cluster is the story, all of it and nothing else
    for label, pages in by_label.items():
        cluster = decisions[position[pages[0]]]["cluster_id"]
        if cluster is not None and by_cluster[cluster] == pages:
            exact[label] = cluster
    assert len(by_label) - len(exact) <= 30  # measured: 21 of 862
    differ = [
        label
        for label, pages in by_label.items()
        if label not in exact and due(pages) != got.get(decisions[position[pages[0]]]["cluster_id"], [])
    ]
    assert len(differ) <= 6, differ  # measured: 4, each split in two clusters by missed copies

    stories = {label: by_label[label] for label in by_label if label.startswith("w")}
    assert len(stories) == 6 and set(stories) <= set(exact)
    levels_seen = set()
    for label, copies in stories.items():
        times = [truth[p].published for p in copies]
        assert max(times) - min(times) < timedelta(hours=SPREAD_HOURS)
        due_now = [(n, copies[size - 1]) for n, size in enumerate((3, 10, 30), 1) if len(copies) >= size]
        assert [(n, trigger) for n, trigger, _, _ in got[exact[label]]] == due_now, label
        levels_seen |= {n for n, _ in due_now}
    assert levels_seen == {1, 2, 3}


def test_state_halves_write_the_alerts_of_one_run(spreading, tmp_path):
    folder, _ = spreading
    lines = (folder / "pages.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_bytes(b"".join(lines[:1100]))
    (tmp_path / "b.jsonl").write_bytes(b"".join(lines[1100:]))
    state = tmp_path / "state.npz"
    for part in "ab":
        result = CliRunner().invoke(
            cli,
            [
                "dedup",
                str(tmp_path / f"{part}.jsonl"),
                "-o",
                str(tmp_path / f"{part}.out"),
                "--state",
                str(state),
                "--alerts",
                str(tmp_path / f"{part}.alerts"),
            ],
        )
        assert result.exit_code == 0, result.output
    whole = dedup(folder, "--alerts", str(tmp_path / "whole.alerts"))
    assert whole.exit_code == 0
    halves = read_jsonl(tmp_path / "a.alerts") + read_jsonl(tmp_path / "b.alerts")
    assert halves == read_jsonl(tmp_path / "whole.alerts")
    assert read_jsonl(tmp_path / "a.alerts") and read_jsonl(tmp_path / "b.alerts")  # both halves fire


def test_alert_settings_from_flags_and_environment(spreading, tmp_path):
    folder, _ = spreading
    out = tmp_path / "alerts.jsonl"

    def alerts(*args, env=None):
        result = dedup(folder, "--alerts", str(out), *args, env=env)
        assert result.exit_code == 0, result.output
        return read_jsonl(out)

    default = alerts()
    looser = alerts("--alert-levels", "2,10", "--alert-within-hours", "12")
    assert len(looser) > len(default)
    assert {a["rule"]["pages"] for a in looser} == {2, 10} and {
        a["rule"]["within_hours"] for a in looser
    } == {12}
    assert alerts(env={"STREAM_LSH_ALERT_LEVELS": "2,10", "STREAM_LSH_ALERT_WITHIN_HOURS": "12"}) == looser
    assert alerts("--alert-levels", "3,10,30", env={"STREAM_LSH_ALERT_LEVELS": "2"}) == default  # flag wins
    refused = dedup(folder, "--alerts", str(out), "--alert-levels", "10,3")
    assert (
        refused.exit_code == 2 and "alert level 2 (3) must ask for more than level 1 (10)" in refused.output
    )
    refused = dedup(folder, "--alerts", str(out), "--alert-within-hours", "0")
    assert refused.exit_code == 2 and "alert_within_hours must be positive hours" in refused.output


def test_alerts_and_decisions_cannot_share_stdout(spreading):
    folder, _ = spreading
    result = CliRunner().invoke(cli, ["dedup", str(folder / "pages.jsonl"), "--alerts", "-"])
    assert result.exit_code == 2 and "cannot both go to stdout" in result.output


def test_without_alerts_the_summary_has_no_alert_count(spreading):
    result = dedup(spreading[0])
    assert result.exit_code == 0 and "alerts" not in result.stderr
