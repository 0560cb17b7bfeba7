"""Offline checks of the monitoring files: the Grafana dashboard, the Prometheus configurations and
alerts, the compose profile "monitoring", and the Prometheus Operator examples.

The point is that a dashboard panel or an alert cannot silently show nothing: every PromQL
expression may name only series a worker exports (:func:`stream_lsh.stream.metrics.exported_names`,
plus Prometheus' own ``up``), only labels those series carry, and, on the dashboard, must apply
the job and worker filters. The expressions are read by a small PromQL tokenizer here; where the
``promql-parser`` package is installed (a test dependency), a real parser checks their syntax and
that the tokenizer reads the same selectors. Where ``promtool`` is installed (Debian's
``prometheus`` package has it), it validates the configurations and replays every alert on made-up
series, firing and not firing.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from stream_lsh.pipeline.outbox import Outbox
from stream_lsh.pipeline.telemetry import DecisionTiming, Gauges, Tally
from stream_lsh.settings import ENV_PREFIX, Settings
from stream_lsh.stream.metrics import PartitionReading, WorkerMetrics, WorkerReading, exported_names

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
ALERTS = PROMETHEUS / "alerts.yml"
GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "stream-lsh.json"
K8S = DEPLOY / "kubernetes"
JOB = "stream-lsh"

#: series Prometheus itself makes for every target
PROMETHEUS_SERIES = {"up"}
#: labels the scrape configurations put on every series: job and instance always, namespace and
#: pod in Kubernetes (prometheus-kubernetes.yml, and the Prometheus Operator)
TARGET_LABELS = {"job", "instance", "namespace", "pod"}
#: Grafana's own variables, which a dashboard may use without defining them
GRAFANA_VARIABLES = {"__rate_interval", "__interval", "__range", "__range_s", "__interval_ms"}


# -- loading -----------------------------------------------------------------------------------------
def _yaml(path: Path) -> Any:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    return doc


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _rules(groups: dict[str, Any]) -> list[dict[str, Any]]:
    return [rule for group in groups["groups"] for rule in group["rules"]]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return _yaml(COMPOSE)


@pytest.fixture(scope="module")
def labels_of() -> dict[str, set[str]]:
    return _labels_of_every_series()


def _labels_of_every_series() -> dict[str, set[str]]:
    """Sample name -> its label names, from a worker that has sent one of everything and holds a
    partition of every stage: its /metrics as Prometheus would scrape it."""
    metrics = WorkerMetrics()
    tally = Tally(
        pages=1,
        flattened=1,
        retractions=1,
        queries=1,
        late_ids=["a"],
        verified=1,
        rejected=1,
        evicted=1,
        blocks_dropped=[1],
        decided=[DecisionTiming(1, 1.0)],
    )
    metrics.sent(
        Outbox(
            decisions=[
                ("a", {"status": "unique", "candidates": 1, "refused_by": "b", "roundup": True}),
                ("b", {"status": "duplicate", "candidates": 1, "match": "jaccard"}),
                ("c", {"status": "no_content", "candidates": 0, "notice": "not_found"}),
            ],
            dead_letters=[(None, {"reason": "invalid_json"})],
            answers=[("q", {"id": "q"})],
            unique_pages=[("a", b"{}")],
            tally=tally,
        )
    )
    metrics.snapshots.labels(stage="decide").observe(0.1)
    metrics.stuck_pages.inc()
    gauges = Gauges(
        window_pages=1, waiting=1, oldest_wait_s=1.0, boilerplate_blocks=1, alerts_frontier_ms=1.0
    )
    reading = WorkerReading(
        partitions=[PartitionReading(stage, 0, gauges, 1, 1) for stage in ("sites", "decide")],
        input_lag={0: 1},
        assigned={"pages": 1},
    )
    metrics.read_from(lambda: reading)
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    return found


def test_the_sample_worker_shows_every_exported_series(labels_of):
    """The label checks below know a series' labels from this sample: it must hold them all."""
    assert set(labels_of) == exported_names()


# -- PromQL, read by a tokenizer ----------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<variable>\$\{[A-Za-z_]\w*(?::\w+)?\}|\$[A-Za-z_]\w*)
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+(?![\w.]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][\w:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}\[\]@:])
    """,
    re.VERBOSE,
)
#: words of PromQL that are not series names (functions and aggregation operators are told by
#: what follows them: a parenthesis or a grouping clause)
_KEYWORDS = {"and", "or", "unless", "atan2", "bool", "offset", "inf", "nan"}
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
#: a Grafana variable: $name, ${name} or ${name:format}
_VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)")


@dataclass
class Selector:
    name: str
    matchers: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (op, value)


@dataclass
class Query:
    """What a PromQL expression names: its series selectors, grouping labels, Grafana variables."""

    selectors: list[Selector] = field(default_factory=list)
    grouping: list[str] = field(default_factory=list)  # labels of by/without/on/ignoring/group_*
    variables: set[str] = field(default_factory=set)

    @property
    def names(self) -> set[str]:
        return {s.name for s in self.selectors}


def _tokens(expr: str) -> Iterator[tuple[str, str]]:
    position = 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None:
            raise ValueError(f"cannot read {expr[position:]!r} in {expr!r}")
        position = match.end()
        kind = match.lastgroup
        assert kind is not None
        if kind not in ("space", "comment"):
            yield kind, match.group()


def _unquote(string: str) -> str:
    """A PromQL string's value (its escapes are Go's, which JSON shares for all but the rare ones)."""
    body = string[1:-1]
    if string[0] == "`":
        return body
    if string[0] == "'":
        body = body.replace("\\'", "'").replace('"', '\\"')
    return json.loads(f'"{body}"')


def _variables_in(text: str) -> set[str]:
    return {braced or bare for braced, bare in _VARIABLE.findall(text)}


def read_promql(expr: str) -> Query:
    """The selectors, grouping labels and variables of a PromQL expression (with Grafana's
    ``$variables``). Strings, durations, numbers, functions and keywords are told apart from series
    names by their tokens: a name followed by ``(`` is a function or an aggregation, words in a
    grouping clause are labels, words in braces are label matchers."""
    tokens = list(_tokens(expr))
    _check_balanced(expr, [text for kind, text in tokens if kind == "op"])
    query = Query()
    depth_brackets = 0
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind in ("variable", "string"):
            query.variables |= _variables_in(text)
        elif text == "[":
            depth_brackets += 1
        elif text == "]":
            depth_brackets -= 1
        elif text == "{":
            raise ValueError(f"a selector without a series name in {expr!r}: name the series")
        elif kind == "ident" and depth_brackets == 0:
            lower = text.lower()
            if lower in _GROUPING and following == "(":
                close = next(j for j in range(i + 2, len(tokens)) if tokens[j][1] == ")")
                query.grouping += [t for k, t in tokens[i + 2 : close] if k == "ident"]
                i = close
            elif following == "(" or following.lower() in ("by", "without") or lower in _KEYWORDS | _GROUPING:
                pass  # a function, an aggregation (`sum by (x) (...)` too), a keyword
            else:
                selector = Selector(text)
                if following == "{":
                    i += 2
                    while tokens[i][1] != "}":
                        if tokens[i][1] == ",":
                            i += 1
                            continue
                        matcher = tokens[i : i + 3]
                        if [k for k, _ in matcher] != ["ident", "op", "string"]:
                            raise ValueError(f"cannot read the label matcher {matcher} in {expr!r}")
                        (_, label), (_, op), (_, value) = matcher
                        selector.matchers[label] = (op, _unquote(value))
                        query.variables |= _variables_in(value)
                        i += 3
                if selector.name == "__name__" or "__name__" in selector.matchers:
                    raise ValueError(f"{expr!r}: name the series instead of matching __name__")
                query.selectors.append(selector)
        i += 1
    return query


def _check_balanced(expr: str, ops: list[str]) -> None:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for op in ops:
        if op in "([{":
            stack.append(op)
        elif op in pairs and (not stack or stack.pop() != pairs[op]):
            raise ValueError(f"an unmatched {op!r} in {expr!r}")
    if stack:
        raise ValueError(f"an unclosed {stack[-1]!r} in {expr!r}")


READINGS = [
    ("sum by (status) (rate(a_total{status='x y', job=~\"$job\"}[5m]))", {"a_total"}, ["status"]),
    (
        'histogram_quantile(0.99, sum by (le) (rate(b_bucket{x="not_a_metric{}"}[$__rate_interval])))',
        {"b_bucket"},
        ["le"],
    ),
    ("a / on (job) group_left (pod) b offset 1h30m", {"a", "b"}, ["job", "pod"]),
    ("sum(a) without (instance) > bool 2 and c @ 1609746000 atan2 d", {"a", "c", "d"}, ["instance"]),
    ('absent(up{job="x"} == 1) # what about `d`?', {"up"}, []),
    ("1 - a / (b > 0) or -c unless d", {"a", "b", "c", "d"}, []),
    ("deriv(max by (partition) (lag)[15m:1m]) > 0x1f", {"lag"}, ["partition"]),
    ('count_values("value", topk(5, e)) + quantile_over_time(0.9, f[1h]) * Inf', {"e", "f"}, []),
    ("label_replace(g, 'dst', '$1', 'src', '(.*)')", {"g"}, []),
]


@pytest.mark.parametrize(("expr", "names", "grouping"), READINGS)
def test_the_tokenizer_reads_series_names_and_only_them(expr, names, grouping):
    query = read_promql(expr)
    assert query.names == names
    assert query.grouping == grouping


def test_the_tokenizer_reads_matchers_and_variables():
    query = read_promql('rate(a{job=~"$job", instance!~"${instance}", x=""}[$__rate_interval])')
    (selector,) = query.selectors
    assert selector.matchers == {"job": ("=~", "$job"), "instance": ("!~", "${instance}"), "x": ("=", "")}
    assert query.variables == {"job", "instance", "__rate_interval"}
    with pytest.raises(ValueError, match="name the series"):
        read_promql('{__name__="a"}')
    with pytest.raises(ValueError, match="name the series"):
        read_promql('a{__name__=~"b|c"}')
    with pytest.raises(ValueError, match="unclosed"):
        read_promql("sum(rate((a[5m]))")
    with pytest.raises(ValueError, match="unmatched"):
        read_promql('a{b="("}]')
    with pytest.raises(ValueError, match="label matcher"):
        read_promql("a{b}")
    # $1 is label_replace's, not Grafana's; quotes inside strings
    assert read_promql("label_replace(g, 'd', '$1', 's', '(.*)')").variables == set()
    (selector,) = read_promql("""h{a='say "hi"', b="it's", c=`\\d`}""").selectors
    assert selector.matchers == {"a": ("=", 'say "hi"'), "b": ("=", "it's"), "c": ("=", "\\d")}


def _parser() -> Any:
    return pytest.importorskip("promql_parser", reason="promql-parser is not installed (a test dependency)")


def _as_plain_promql(expr: str) -> str:
    """Grafana's variables replaced by what PromQL takes there: durations, regular expressions."""
    expr = re.sub(r"\$\{?__(rate_interval|interval|range)\}?", "5m", expr)
    return re.sub(r"\$\{?\w+(?::\w+)?\}?", ".*", expr)


def _parsed_selectors(expr: str) -> list[tuple[str, dict[str, str]]]:
    promql_parser = _parser()
    found: list[tuple[str, dict[str, str]]] = []

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append((node.name, {m.name: m.value for m in node.matchers.matchers}))

    promql_parser.walk(promql_parser.parse(_as_plain_promql(expr)), visit)
    return found


@pytest.mark.parametrize("expr", [expr for expr, _, _ in READINGS])
def test_the_tokenizer_agrees_with_a_promql_parser(expr):
    assert _selectors_of(read_promql(_as_plain_promql(expr))) == sorted(
        (name, sorted(m.items())) for name, m in _parsed_selectors(expr)
    )


def _selectors_of(query: Query) -> list[tuple[str, list[tuple[str, str]]]]:
    return sorted((s.name, sorted((k, v) for k, (_, v) in s.matchers.items())) for s in query.selectors)


# -- what an expression may name -----------------------------------------------------------------------
def promql_problems(expr: str, labels_of: dict[str, set[str]], legend: str = "") -> list[str]:
    """Why an expression would show nothing or the wrong thing: series no worker exports, labels
    they do not carry (in matchers, grouping clauses, the legend)."""
    try:
        query = read_promql(expr)
    except ValueError as error:
        return [str(error)]
    if not query.selectors:
        return [f"{expr!r} names no series"]
    problems = []
    known = exported_names() | PROMETHEUS_SERIES
    for name in sorted(query.names - known):
        problems.append(f"{name} is not a series a worker exports (stream_lsh/stream/metrics.py)")
    labels = set(TARGET_LABELS)
    for selector in query.selectors:
        own = labels_of.get(selector.name, set()) | TARGET_LABELS
        labels |= own
        for label in sorted(selector.matchers.keys() - own):
            problems.append(f"{selector.name} has no label {label!r}")
    for label in sorted(set(query.grouping) - labels):
        problems.append(f"grouping by {label!r}, which none of {sorted(query.names)} has")
    for label in sorted(set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend)) - labels):
        problems.append(f"legend {legend!r}: none of {sorted(query.names)} has the label {label!r}")
    return [f"{expr!r}: {p}" for p in problems]


# -- the dashboard -------------------------------------------------------------------------------------
def _panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too, rows left out."""
    out = []
    for panel in dashboard["panels"]:
        out += [p for p in [panel, *panel.get("panels", [])] if p["type"] != "row"]
    return out


def _variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def _variable_query(variable: dict[str, Any]) -> str:
    query = variable["query"]
    return query["query"] if isinstance(query, dict) else query


def dashboard_problems(dashboard: dict[str, Any], labels_of: dict[str, set[str]]) -> list[str]:
    """Everything that would leave a panel of the dashboard empty or unfiltered."""
    problems = []
    variables = _variables(dashboard)
    for name, variable in variables.items():
        if variable["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", _variable_query(variable).strip())
        if match is None:
            problems.append(f"variable {name}: not a label_values(series, label) query")
            continue
        problems += promql_problems(match.group(1), labels_of, "{{" + match.group(2) + "}}")
    for panel in _panels(dashboard):
        where = f"panel {panel['title']!r}"
        if not panel.get("targets"):
            problems.append(f"{where} has no query")
        for target in panel.get("targets", []):
            expr = target.get("expr", "")
            problems += [
                f"{where}: {p}" for p in promql_problems(expr, labels_of, target.get("legendFormat", ""))
            ]
            try:
                query = read_promql(expr)
            except ValueError:
                continue
            for variable in sorted(query.variables - variables.keys() - GRAFANA_VARIABLES):
                problems.append(f"{where}: ${variable} is not a variable of the dashboard")
            for selector in query.selectors:
                for label in ("job", "instance"):
                    if selector.matchers.get(label) != ("=~", f"${label}"):
                        problems.append(f'{where}: {selector.name} is not filtered by {label}=~"${label}"')
    return problems


def test_the_dashboard_shows_only_what_workers_export(labels_of):
    assert dashboard_problems(_dashboard(), labels_of) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ("stream_lsh_decisions_total", "stream_lsh_decision_total"),
            "stream_lsh_decision_total is not a series",
        ),
        (("sum by (status)", "sum by (stauts)"), "grouping by 'stauts'"),
        (('instance=~"$instance"', 'instance=~"$instanse"'), "$instanse is not a variable"),
        (('stream_lsh_ready{job=~"$job", ', "stream_lsh_ready{"), 'not filtered by job=~"$job"'),
        (("{{status}}", "{{reason}}"), "has the label 'reason'"),
    ],
)
def test_a_broken_dashboard_query_is_caught(labels_of, change, problem):
    """The check above fails on the mistakes it is for: each made once in a copy of the dashboard."""
    broken = _dashboard()
    assert _replace_first(broken, *change), change
    problems = dashboard_problems(broken, labels_of)
    assert any(problem in p for p in problems), problems


def _replace_first(node: Any, old: str, new: str) -> bool:
    """Replace ``old`` in the first string of a JSON document that holds it (in place)."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        if isinstance(value, str) and old in value:
            node[key] = value.replace(old, new, 1)
            return True
        if _replace_first(value, old, new):
            return True
    return False


def test_the_dashboard_has_every_series_a_worker_exports():
    """A metric nobody looks at is not observability: each family has a panel (``_created``, the
    counters' start times, excepted)."""
    dashboard = _dashboard()
    shown = {
        name
        for panel in _panels(dashboard)
        for t in panel["targets"]
        for name in read_promql(t["expr"]).names
    }
    families = {
        re.sub(r"_(total|bucket|sum|count)$", "", name)
        for name in exported_names()
        if not name.endswith("_created")
    }
    shown_families = {re.sub(r"_(total|bucket|sum|count)$", "", name) for name in shown}
    assert families - shown_families == set()


def test_the_dashboard_is_a_grafana_dashboard():
    dashboard = _dashboard()
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 39
    assert dashboard.get("id") is None  # the Grafana that loads it assigns one
    variables = _variables(dashboard)
    datasource = variables["datasource"]
    assert datasource["type"] == "datasource" and datasource["query"] == "prometheus"
    for name in ("job", "instance"):
        assert variables[name]["type"] == "query"
        assert variables[name]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert variables[name]["includeAll"] and variables[name]["multi"], name
    assert "$job" in _variable_query(variables["instance"])  # the workers of the chosen jobs
    panels = _panels(dashboard)
    ids = [p["id"] for top in dashboard["panels"] for p in [top, *top.get("panels", [])]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels:
        assert panel["type"] in {"timeseries", "stat", "state-timeline", "bargauge", "table", "heatmap"}
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel.get("description"), f"{panel['title']}: say what it shows"
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"], panel["title"]


def test_the_dashboard_panels_do_not_overlap():
    cells: dict[tuple[int, int], str] = {}
    for panel in _dashboard()["panels"]:
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["w"] > 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def _dashboard_exprs() -> list[str]:
    dashboard = _dashboard()
    exprs = [t["expr"] for panel in _panels(dashboard) for t in panel["targets"]]
    for variable in _variables(dashboard).values():
        if variable["type"] == "query":
            exprs.append(
                re.fullmatch(r"label_values\((.+),\s*\w+\)", _variable_query(variable).strip()).group(1)
            )
    return exprs


def _alert_exprs() -> list[str]:
    return [rule["expr"] for rule in _rules(_yaml(ALERTS))]


@pytest.mark.parametrize("source", ["dashboard", "alerts"])
def test_every_expression_parses_and_reads_the_same_to_a_promql_parser(source):
    _parser()
    exprs = _dashboard_exprs() if source == "dashboard" else _alert_exprs()
    for expr in exprs:
        plain = _as_plain_promql(expr)
        try:
            parsed = _parsed_selectors(expr)
        except ValueError as error:
            pytest.fail(f"{plain!r}: {error}")
        assert _selectors_of(read_promql(plain)) == sorted((n, sorted(m.items())) for n, m in parsed), plain


# -- Grafana provisioning ------------------------------------------------------------------------------
def _mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Container path -> repository path of a compose service's bind mounts."""
    out = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume["type"] == "bind":
                out[volume["target"]] = (ROOT / volume["source"]).resolve()
        else:
            source, _, rest = volume.partition(":")
            if source.startswith((".", "/")):
                out[rest.split(":")[0]] = (ROOT / source).resolve()
    return out


def _in_repository(mounts: dict[str, Path], container_path: str) -> Path:
    """The repository file a container path is, through the bind mounts (the deepest one)."""
    path = PurePosixPath(container_path)
    for target in sorted(mounts, key=len, reverse=True):
        if path == PurePosixPath(target) or PurePosixPath(target) in path.parents:
            return mounts[target] / path.relative_to(target)
    raise AssertionError(f"{container_path} is not in any bind mount: {sorted(mounts)}")


def test_grafana_is_provisioned_with_the_prometheus_and_the_dashboard(compose):
    grafana, prometheus = compose["services"]["grafana"], compose["services"]["prometheus"]
    mounts = _mounts(grafana)
    provisioning = {
        kind: _in_repository(mounts, f"/etc/grafana/provisioning/{kind}")
        for kind in ("datasources", "dashboards")
    }
    (datasources,) = [_yaml(p) for p in sorted(provisioning["datasources"].glob("*.y*ml"))]
    (datasource,) = datasources["datasources"]
    assert datasource["type"] == "prometheus" and datasource["isDefault"]
    # the compose service, on the port it listens on
    host, port = re.fullmatch(r"http://([\w-]+):(\d+)/?", datasource["url"]).groups()
    assert host in compose["services"] and compose["services"][host] is prometheus
    assert any(p.endswith(f":{port}") for p in prometheus["ports"])
    scrape_interval = _yaml(PROMETHEUS / "prometheus.yml")["global"]["scrape_interval"]
    assert datasource["jsonData"]["timeInterval"] == scrape_interval  # for $__rate_interval
    (providers,) = [_yaml(p) for p in sorted(provisioning["dashboards"].glob("*.y*ml"))]
    (provider,) = providers["providers"]
    assert provider["type"] == "file"
    folder = _in_repository(mounts, provider["options"]["path"])
    assert folder == DASHBOARD.parent and DASHBOARD.exists()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert _in_repository(mounts, home) == DASHBOARD


def test_grafana_is_not_open_to_edits(compose):
    env = compose["services"]["grafana"]["environment"]
    if str(env.get("GF_AUTH_ANONYMOUS_ENABLED", "false")).lower() == "true":
        assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"
    assert "${GRAFANA_ADMIN_PASSWORD" in env["GF_SECURITY_ADMIN_PASSWORD"]


# -- Prometheus ---------------------------------------------------------------------------------------
def test_compose_prometheus_scrapes_every_worker_replica(compose):
    config = _yaml(PROMETHEUS / "prometheus.yml")
    (job,) = config["scrape_configs"]
    assert job["job_name"] == JOB and job.get("metrics_path", "/metrics") == "/metrics"
    (sd,) = job["dns_sd_configs"]
    worker = compose["services"]["worker"]
    # the service name: Docker's DNS answers it with one address per replica, whatever --scale says
    assert sd["names"] == ["worker"] and sd["type"] == "A"
    assert "container_name" not in worker
    assert str(sd["port"]) == str(worker["environment"]["STREAM_LSH_WEB_PORT"])
    assert worker["environment"]["STREAM_LSH_WEB_BIND"] == "0.0.0.0"


def test_compose_prometheus_reads_the_repository_files(compose):
    prometheus = compose["services"]["prometheus"]
    mounts = _mounts(prometheus)
    assert all(path.exists() for path in mounts.values()), mounts
    flags = dict(arg.removeprefix("--").partition("=")[::2] for arg in prometheus["command"])
    config_in_container = flags["config.file"]
    assert _in_repository(mounts, config_in_container) == PROMETHEUS / "prometheus.yml"
    for rule_file in _yaml(PROMETHEUS / "prometheus.yml")["rule_files"]:
        in_container = PurePosixPath(config_in_container).parent / rule_file
        assert _in_repository(mounts, str(in_container)) == (PROMETHEUS / rule_file).resolve()


def test_the_monitoring_profile_is_not_started_by_default(compose):
    services = compose["services"]
    monitoring = {"prometheus", "grafana"}
    for name in monitoring:
        assert services[name]["profiles"] == ["monitoring"], name
        assert all(p.startswith("127.0.0.1:") for p in services[name]["ports"]), "published on localhost only"
    default = {name for name, svc in services.items() if not svc.get("profiles")}
    assert default >= {"kafka", "topics", "worker"}
    for name in default:
        depends = services[name].get("depends_on", {})
        assert not monitoring & set(depends), f"{name} would start {monitoring & set(depends)}"


def test_the_kubernetes_scrape_config_keeps_the_worker_pods():
    """prometheus-kubernetes.yml keeps the pods by the label and annotations the StatefulSet
    sets, at the annotated port and path, and names them as the dashboard expects."""
    statefulset = _yaml(K8S / "statefulset.yaml")
    template = statefulset["spec"]["template"]["metadata"]
    (job,) = _yaml(PROMETHEUS / "prometheus-kubernetes.yml")["scrape_configs"]
    assert job["job_name"] == JOB and job["kubernetes_sd_configs"] == [{"role": "pod"}]
    relabel = job["relabel_configs"]

    def meta(name: str) -> str:
        return "__meta_kubernetes_pod_" + re.sub(r"[^\w]", "_", name)

    values = {meta("label_" + k): v for k, v in template["labels"].items()}
    values |= {meta("annotation_" + k): v for k, v in template["annotations"].items()}
    for rule in relabel:
        if rule.get("action") == "keep":
            (source,) = rule["source_labels"]
            assert re.fullmatch(rule["regex"], values[source]), rule
    sources = {rule["target_label"]: rule["source_labels"] for rule in relabel if "target_label" in rule}
    assert sources["__metrics_path__"] == [meta("annotation_prometheus.io/path")]
    assert meta("annotation_prometheus.io/port") in sources["__address__"]
    assert sources["instance"] == ["__meta_kubernetes_pod_name"]
    assert {"namespace", "pod"} <= sources.keys()


def _promtool() -> str:
    exe = shutil.which("promtool")
    if exe is None:
        pytest.skip("promtool is not installed (Debian/Ubuntu: apt-get install prometheus)")
    return exe


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("config", ["prometheus.yml", "prometheus-kubernetes.yml"])
def test_promtool_accepts_the_prometheus_configurations(config):
    result = _run([_promtool(), "check", "config", config], cwd=PROMETHEUS)
    if "field kubernetes_sd_configs not found" in result.stdout + result.stderr:
        pytest.skip("this promtool is built without Kubernetes discovery (Debian's is)")
    assert result.returncode == 0, result.stdout + result.stderr


# -- alerts -------------------------------------------------------------------------------------------
_DURATION = re.compile(r"(\d+(ms|[smhdwy]))+")


def test_the_alerts_have_the_prometheus_rule_structure():
    groups = _yaml(ALERTS)
    assert set(groups) == {"groups"}
    names = []
    for group in groups["groups"]:
        assert group["name"] and group["rules"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations", "keep_firing_for"}, rule
            names.append(rule["alert"])
            assert re.fullmatch(r"StreamLsh[A-Z]\w+", rule["alert"])
            assert _DURATION.fullmatch(rule["for"]), rule["alert"]
            assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
            assert rule["annotations"]["summary"] and len(rule["annotations"]["description"]) > 80, (
                f"{rule['alert']}: the description says what the threshold stands for"
            )
    assert len(names) == len(set(names))


def alert_problems(groups: dict[str, Any], labels_of: dict[str, set[str]]) -> list[str]:
    problems = []
    for rule in _rules(groups):
        name = rule["alert"]
        problems += [f"{name}: {p}" for p in promql_problems(rule["expr"], labels_of)]
        query = read_promql(rule["expr"])
        if query.variables:
            problems.append(f"{name}: ${sorted(query.variables)[0]} in an alert")
        # an aggregation keeps only its grouping labels: the annotations may name no other
        kept = set(query.grouping) - {"le"} if query.grouping else None
        if kept is not None and "absent(" not in rule["expr"]:
            text = " ".join(rule["annotations"].values())
            for label in sorted(set(re.findall(r"\$labels\.(\w+)", text)) - kept):
                problems.append(f"{name}: the annotations name {label!r}, which {sorted(kept)} leaves out")
    jobs = {
        m[1]
        for rule in _rules(groups)
        for s in read_promql(rule["expr"]).selectors
        if (m := s.matchers.get("job"))
    }
    if jobs != {JOB}:
        problems.append(f"the alerts select the jobs {jobs}, the scrape configurations make {JOB!r}")
    return problems


def test_the_alerts_name_only_what_workers_export(labels_of):
    assert alert_problems(_yaml(ALERTS), labels_of) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("stream_lsh_pending_oldest_seconds", "stream_lsh_pending_oldest_second"), "is not a series"),
        (("by (job, partition)", "by (job, partiton)"), "grouping by 'partiton'"),
        (('up{job="stream-lsh"} == 0', 'up{job="stream_lsh"} == 0'), "the alerts select the jobs"),
        (
            ("Over 1% of the input", "{{ $labels.instance }}: over 1% of the input"),
            "the annotations name 'instance'",
        ),
    ],
)
def test_a_broken_alert_is_caught(labels_of, change, problem):
    old, new = change
    text = ALERTS.read_text(encoding="utf-8")
    assert old in text
    problems = alert_problems(yaml.safe_load(text.replace(old, new, 1)), labels_of)
    assert any(problem in p for p in problems), problems


def test_the_prometheus_rule_example_carries_the_alerts():
    rule = _yaml(K8S / "prometheusrule.example.yaml")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1" and rule["kind"] == "PrometheusRule"
    assert rule["spec"]["groups"] == _yaml(ALERTS)["groups"], (
        "prometheusrule.example.yaml differs from deploy/prometheus/alerts.yml: copy the groups "
        "(see the comment at the top of prometheusrule.example.yaml)"
    )


def test_promtool_accepts_the_alerts():
    result = _run([_promtool(), "check", "rules", ALERTS.name], cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr


def _series(name: str, values: str, **labels: str) -> dict[str, str]:
    labels = {"job": JOB, **labels}
    selector = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{selector}}}", "values": values}


def _alerts(*instances: dict[str, str], severity: str = "warning") -> list[dict[str, Any]]:
    return [{"exp_labels": {"severity": severity, "job": JOB, **labels}} for labels in instances]


W1, W2, W3 = {"instance": "w1"}, {"instance": "w2"}, {"instance": "w3"}
QUIET: list[tuple[str, list[dict[str, Any]]]] = [("30m", [])]

Scenario = tuple[list[dict[str, str]], list[tuple[str, list[dict[str, Any]]]]]

#: for each alert, scenarios of made-up series (one sample a minute), and at which times it must
#: have fired for which labels: a worker in trouble crosses the threshold and stays there for the
#: alert's `for` (not firing before); the other series are the cases it must not fire for
ALERT_CASES: dict[str, list[Scenario]] = {
    "StreamLshNoWorkerUp": [
        ([_series("up", "0x20", **W1)], [("4m", []), ("6m", _alerts({}, severity="critical"))]),
        (
            [_series("stream_lsh_ready", "1x20", **W1)],
            [("6m", _alerts({}, severity="critical"))],
        ),  # none found
        ([_series("up", "1x20", **W1), _series("up", "0x20", **W2)], QUIET),
    ],
    "StreamLshTargetDown": [
        (
            [_series("up", "1 1 0x20", **W1), _series("up", "1x22", **W2)],
            [("6m", []), ("8m", _alerts(W1))],
        ),
    ],
    "StreamLshWorkerNotLive": [
        (
            [_series("stream_lsh_live", "1 0x10", **W1), _series("stream_lsh_live", "1 0 1x10", **W2)],
            [("2m", []), ("4m", _alerts(W1, severity="critical"))],
        ),
    ],
    "StreamLshWorkerNotReady": [
        (
            [
                _series("stream_lsh_ready", "0x30", **W1),
                _series("stream_lsh_recovering", "0x30", **W1),
                _series("stream_lsh_ready", "0x30", **W2),  # restoring state: the recovery alerts' business
                _series("stream_lsh_recovering", "1x30", **W2),
                _series("stream_lsh_ready", "0x3 1x26", **W3),  # a rebalance
                _series("stream_lsh_recovering", "0x30", **W3),
            ],
            [("9m", []), ("12m", _alerts(W1))],
        ),
    ],
    "StreamLshRecoveryTakingLong": [
        (
            [
                _series("stream_lsh_recovering", "1x40", **W1),
                _series("stream_lsh_recovery_remaining_records", "100000-1000x40", **W1),
                _series("stream_lsh_recovering", "1x10 0x30", **W2),
                _series("stream_lsh_recovery_remaining_records", "50000-5000x10 0x30", **W2),
            ],
            [("29m", []), ("31m", _alerts(W1))],
        ),
    ],
    "StreamLshRecoveryStalled": [
        (
            [
                _series("stream_lsh_recovering", "0 0 1x40", **W1),
                _series("stream_lsh_recovery_remaining_records", "0 0 5000x40", **W1),
                _series("stream_lsh_recovering", "0 0 1x40", **W2),  # slow, but moving
                _series("stream_lsh_recovery_remaining_records", "0 0 5000-100x40", **W2),
            ],
            [("20m", []), ("25m", _alerts(W1))],
        ),
    ],
    "StreamLshInputLagGrowing": [
        (
            [
                _series("stream_lsh_input_lag_records", "0+100x60", partition="0", **W1),
                _series("stream_lsh_input_lag_records", "5000x60", partition="1", **W1),  # high, steady
                _series("stream_lsh_input_lag_records", "0+10x60", partition="2", **W1),  # growing, small
            ],
            [("24m", []), ("28m", _alerts({"partition": "0"}))],
        ),
    ],
    "StreamLshPendingPageOld": [
        (
            [
                _series("stream_lsh_pending_oldest_seconds", "0+60x20", partition="0", **W1),
                _series("stream_lsh_pending_oldest_seconds", "2x20", partition="1", **W1),
                _series("stream_lsh_pending_oldest_seconds", "30x20", partition="0", **W2),
            ],
            [("10m", []), ("12m", _alerts(W1))],
        ),
    ],
    "StreamLshStuckPages": [
        (
            [
                _series("stream_lsh_stuck_pages_total", "0+1x40", **W1),
                _series("stream_lsh_stuck_pages_total", "0 1x40", **W2),  # one report, during a rebalance
            ],
            [("14m", []), ("18m", _alerts(W1))],
        ),
    ],
    "StreamLshDeadLetters": [
        (
            [
                _series("stream_lsh_inputs_total", "0+1000x40", kind="page", **W1),
                _series("stream_lsh_dead_letters_total", "0+20x40", reason="invalid_json", **W1),  # 2%
            ],
            [("12m", []), ("20m", _alerts({}))],
        ),
        (
            [
                _series("stream_lsh_inputs_total", "0+1000x40", kind="page", **W1),
                _series("stream_lsh_dead_letters_total", "0+5x40", reason="invalid_json", **W1),  # 0.5%
            ],
            QUIET,
        ),
    ],
    "StreamLshDecisionLatencyHigh": [
        (
            [
                # half the decisions within 10 s, the other half between 30 s and 60 s: p99 ~ 59 s
                _series("stream_lsh_decision_latency_seconds_bucket", "0+50x40", le="10", **W1),
                _series("stream_lsh_decision_latency_seconds_bucket", "0+50x40", le="30", **W1),
                _series("stream_lsh_decision_latency_seconds_bucket", "0+100x40", le="60", **W1),
                _series("stream_lsh_decision_latency_seconds_bucket", "0+100x40", le="+Inf", **W1),
            ],
            [("14m", []), ("18m", _alerts({}))],
        ),
        (
            [  # 99% within 0.1 s, the rest within a minute
                _series("stream_lsh_decision_latency_seconds_bucket", "0+99x40", le="0.1", **W1),
                _series("stream_lsh_decision_latency_seconds_bucket", "0+100x40", le="60", **W1),
                _series("stream_lsh_decision_latency_seconds_bucket", "0+100x40", le="+Inf", **W1),
            ],
            QUIET,
        ),
    ],
    "StreamLshEventLoopLagging": [
        (
            [
                _series("stream_lsh_event_loop_lag_seconds", "2x30", **W1),
                _series("stream_lsh_event_loop_lag_seconds", "0.5x30", **W2),
                _series("stream_lsh_event_loop_lag_seconds", "0 0 0 30 0x30", **W3),  # one long batch
            ],
            [("9m", []), ("11m", _alerts(W1)), ("25m", _alerts(W1))],
        ),
    ],
}


def test_every_alert_is_replayed():
    assert set(ALERT_CASES) == {rule["alert"] for rule in _rules(_yaml(ALERTS))}


@pytest.mark.parametrize("alert", sorted(ALERT_CASES))
def test_promtool_replays_the_alert(alert, tmp_path):
    """The alert fires for the worker in trouble once its `for` has passed, not before, and not
    for the others. The annotations are left out (promtool would compare their text)."""
    promtool = _promtool()
    groups = _yaml(ALERTS)
    for rule in _rules(groups):
        rule.pop("annotations")
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(groups), encoding="utf-8")
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": at, "alertname": alert, "exp_alerts": copy.deepcopy(alerts)}
                for at, alerts in expected
            ],
        }
        for series, expected in ALERT_CASES[alert]
    ]
    unit = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(unit), encoding="utf-8")
    result = _run([promtool, "test", "rules", "test.yml"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# -- Kubernetes: the Prometheus Operator -------------------------------------------------------------
def test_the_service_monitor_scrapes_the_workers_metrics_port():
    monitor = _yaml(K8S / "servicemonitor.example.yaml")
    service = _yaml(K8S / "service.yaml")
    statefulset = _yaml(K8S / "statefulset.yaml")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["kind"] == "ServiceMonitor"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    # without jobLabel the operator names the job after the Service: the job the alerts expect
    assert "jobLabel" not in monitor["spec"] and service["metadata"]["name"] == JOB
    (endpoint,) = monitor["spec"]["endpoints"]
    ports = {p["name"]: p for p in service["spec"]["ports"]}
    assert ports[endpoint["port"]]["targetPort"] == "metrics"
    annotations = statefulset["spec"]["template"]["metadata"]["annotations"]
    assert endpoint["path"] == annotations["prometheus.io/path"]
    instance = [r for r in endpoint["relabelings"] if r["targetLabel"] == "instance"]
    assert instance == [{"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "instance"}]
    # scraped also while not ready: a worker restoring state is not, and its recovery is the news
    assert service["spec"]["publishNotReadyAddresses"] is True


def test_the_operator_examples_are_not_applied_with_the_manifests():
    """They need the operator's CustomResourceDefinitions, which `kubectl apply -k` cannot assume."""
    kustomization = _yaml(K8S / "kustomization.yaml")
    for name in ("servicemonitor.example.yaml", "prometheusrule.example.yaml"):
        assert (K8S / name).exists() and name not in kustomization["resources"]


def test_every_setting_the_monitoring_files_name_is_a_setting():
    """Alert descriptions and panel descriptions send the reader to settings: real ones."""
    settings = {ENV_PREFIX + name.upper() for name in Settings.names()}
    files = [*PROMETHEUS.glob("*.yml"), DASHBOARD, *K8S.glob("*.example.yaml")]
    for path in files:
        for name in re.findall(rf"\b{ENV_PREFIX}[A-Z0-9_]+\b", path.read_text(encoding="utf-8")):
            assert name in settings, f"{path.name}: {name} is not a setting (stream_lsh/settings/)"


def test_the_monitoring_files_parse():
    files = [*PROMETHEUS.glob("*.yml"), *GRAFANA.rglob("*.yml"), *K8S.glob("*.example.yaml")]
    assert len(files) >= 7
    for path in files:
        assert isinstance(_yaml(path), dict), path
