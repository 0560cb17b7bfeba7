"""Refusals a user can act on, as the CLI gives them: no broker at the address, or state built
with other parameters (the scheme guard). One line and exit code 2, never a traceback."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import orjson
import pytest
from stream_helpers import stream_settings

from stream_lsh.core.prepare import Preparer
from stream_lsh.core.scheme import Scheme
from stream_lsh.pipeline.journal import StateMismatchError
from stream_lsh.stream.app import state_guard
from stream_lsh.stream.brokers import free_port
from stream_lsh.stream.runner import run_stream
from stream_lsh.stream.worker import prepare


def worker(settings, *flags: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, **settings.to_environ()}
    return subprocess.run(
        [sys.executable, "-m", "stream_lsh", "worker", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_worker_without_a_broker_says_so_once_its_wait_is_over(tmp_path):
    """It tries again for STREAM_LSH_BROKER_WAIT_S (tests/test_broker_outages.py: a broker that
    comes within it), then gives up with one line."""
    settings = stream_settings(  # nobody there
        SimpleNamespace(bootstrap=f"127.0.0.1:{free_port()}"), tmp_path, broker_wait_s=3
    )
    started = time.monotonic()
    result = worker(settings)
    assert result.returncode == 2, result.stderr
    assert "cannot reach a Kafka broker at" in result.stderr and "Traceback" not in result.stderr
    assert "gave up after" in result.stderr and "STREAM_LSH_BROKER_WAIT_S=3" in result.stderr
    assert time.monotonic() - started < 20


async def test_state_built_with_another_scheme_is_refused_before_the_worker_starts(broker, tmp_path):
    settings = stream_settings(broker, tmp_path)
    page = {"id": "a", "text": " ".join(["The council said that the plan would go ahead in spring."] * 6)}
    await run_stream(settings, workers=1, feed=[orjson.dumps(page)], until_idle=True, timeout=90)

    other = settings.replace(seed=7)
    with pytest.raises(StateMismatchError, match=r"scheme_params\.seed: stored 1, running 7"):
        await prepare(other, broker.bootstrap, state_guard(Preparer(other.dedup_config()), other))
    result = worker(settings, "--num-perm", "64")
    assert result.returncode == 2, result.stderr[-2000:]
    assert "num_perm: stored 128, running 64" in result.stderr and "Traceback" not in result.stderr
    relaid = settings.replace(site_partitions=5)
    with pytest.raises(Exception, match="partitions"):  # the topics' shape says so first
        await prepare(relaid, broker.bootstrap, state_guard(Preparer(relaid.dedup_config()), relaid))


async def test_a_stream_upgraded_to_the_wording_of_names_takes_the_state_before_it(broker, tmp_path):
    """The version before wrote the same guard but for its scheme's names rule, which lacked the
    "+wording" part (docs/operating.md, "Upgrading"): this version's worker reads it and decides;
    the version before would refuse this one's."""
    settings = stream_settings(broker, tmp_path)
    guard = state_guard(Preparer(settings.dedup_config()), settings)
    scheme = Scheme.from_dict(guard["scheme_params"])
    older = dataclasses.replace(scheme, names_rule=scheme.names_rule.split("+")[0])
    before = {**guard, "scheme": older.fingerprint, "scheme_params": older.to_dict()}
    await prepare(settings, broker.bootstrap, before)  # as the version before claimed the app

    page = {"id": "a", "text": " ".join(["The council said that the plan would go ahead in spring."] * 6)}
    decided = await run_stream(settings, workers=1, feed=[orjson.dumps(page)], until_idle=True, timeout=90)
    assert list(decided.decisions) == ["a"]
    newer = settings.replace(app_id=f"{settings.stream.app_id}n")
    await prepare(newer, broker.bootstrap, guard)
    with pytest.raises(StateMismatchError, match=r"scheme_params\.names_rule"):
        await prepare(newer, broker.bootstrap, before)


def test_the_topics_command_creates_every_topic_once_and_refuses_another_shape(broker, tmp_path):
    settings = stream_settings(broker, tmp_path)
    env = {**os.environ, **settings.to_environ()}

    def topics(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "stream_lsh", "topics", *flags],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    planned = [orjson.loads(line) for line in topics("--dry-run").stdout.splitlines()]
    assert {t["name"] for t in planned} >= {
        settings.stream.input_topic,
        f"{settings.stream.app_id}-decide-state-changelog",
        f"{settings.stream.app_id}-__assignor-__leader",
        f"{settings.stream.app_id}-guard",
    }
    first = topics()
    assert first.returncode == 0 and f"{len(planned)} of {len(planned)} topics created" in first.stderr, (
        first.stderr
    )
    assert "0 of" in topics().stderr
    other = subprocess.run(
        [sys.executable, "-m", "stream_lsh", "topics"],
        capture_output=True,
        text=True,
        env={**env, "STREAM_LSH_SITE_PARTITIONS": "5"},
        timeout=60,
    )
    assert other.returncode == 2 and "has 3 partitions, the settings say 5" in other.stderr, other.stderr
