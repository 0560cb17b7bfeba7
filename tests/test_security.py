"""A secured cluster, end to end: Apache Kafka with listeners that take mutual TLS, SASL/SCRAM, both,
and OAUTHBEARER, behind a certificate authority made for the test. Everything a user runs goes
through them: `stream-lsh run` against the cluster (topic creation, the guard, worker processes with
their Faust consumers, producers and recovery, the feed and the readers), `produce`, `tail`.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from conftest import TEST_BROKERS
from stream_helpers import stream_settings
from throwaway_ca import ThrowawayCA

from stream_lsh.settings import Settings
from stream_lsh.stream.brokers import KafkaBroker, ListenerCertificate, SecureListener
from stream_lsh.synthetic import generate_corpus

pytestmark = pytest.mark.skipif("kafka" not in TEST_BROKERS, reason="needs Apache Kafka")

PASSWORD = "correct horse battery staple"  # the SCRAM password: must never reach a log
KEY_PASSPHRASE = "client key passphrase"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One broker, four ways in; the CA and the clients' files in ``cluster.files``."""
    files = tmp_path_factory.mktemp("tls")
    ca = ThrowawayCA(files)
    server = ca.issue("broker", hosts=("127.0.0.1", "localhost"))
    client = ca.issue("client", client=True, passphrase=KEY_PASSPHRASE)
    certificate = ListenerCertificate(server.key_and_chain, ca.certificate)
    users = {"alice": PASSWORD}
    listeners = [
        SecureListener("mtls", tls=True, certificate=certificate, client_auth=True),
        SecureListener("scram", tls=False, scram_users=users, oauth=True),
        SecureListener("both", tls=True, certificate=certificate, scram_users=users),
    ]
    (files / "password").write_text(PASSWORD + "\n")
    (files / "token").write_text(_unsigned_token("alice"))
    with KafkaBroker(secure=listeners) as broker:
        broker.files = files
        broker.security = {
            "tls": (
                "mtls",
                {
                    "STREAM_LSH_SECURITY_PROTOCOL": "SSL",
                    "STREAM_LSH_SSL_CAFILE": str(ca.certificate),
                    "STREAM_LSH_SSL_CERTFILE": str(client.certificate),
                    "STREAM_LSH_SSL_KEYFILE": str(client.key),
                    "STREAM_LSH_SSL_KEY_PASSWORD": KEY_PASSPHRASE,
                },
            ),
            "scram": (
                "scram",
                {
                    "STREAM_LSH_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                    "STREAM_LSH_SASL_MECHANISM": "SCRAM-SHA-256",
                    "STREAM_LSH_SASL_USERNAME": "alice",
                    "STREAM_LSH_SASL_PASSWORD_FILE": str(files / "password"),
                },
            ),
            "tls+scram": (
                "both",
                {
                    "STREAM_LSH_SECURITY_PROTOCOL": "SASL_SSL",
                    "STREAM_LSH_SSL_CAFILE": str(ca.certificate),
                    "STREAM_LSH_SASL_MECHANISM": "SCRAM-SHA-512",
                    "STREAM_LSH_SASL_USERNAME": "alice",
                    "STREAM_LSH_SASL_PASSWORD": PASSWORD,
                },
            ),
            "oauth": (
                "scram",
                {
                    "STREAM_LSH_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                    "STREAM_LSH_SASL_MECHANISM": "OAUTHBEARER",
                    "STREAM_LSH_SASL_OAUTH_TOKEN_FILE": str(files / "token"),
                },
            ),
        }
        yield broker


def _unsigned_token(subject: str) -> str:
    """A JWT that Kafka's unsecured validator accepts: alg none, a subject, an expiry."""

    def part(claims: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + 3600})}."


def _environment(cluster, mode: str, tmp_path: Path) -> dict[str, str]:
    """The variables a user sets for one of the cluster's ways in (a test app of its own)."""
    listener, security = cluster.security[mode]
    settings = stream_settings(
        SimpleNamespace(bootstrap=cluster.secure_bootstrap(listener)),
        tmp_path,
        input_partitions=2,
        site_partitions=2,
        log_level="info",  # the most a worker logs: the secrets must be in none of it
    )
    return {**os.environ, **settings.to_environ(), **security}


def _stream_lsh(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stream_lsh", *args], env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("mode", ["tls", "scram", "tls+scram"])
def test_the_stream_runs_on_a_secured_cluster_and_decides_as_batch(cluster, mode, tmp_path):
    corpus = generate_corpus(60, seed=5)
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"".join(orjson.dumps(page) + b"\n" for page in corpus.pages))
    env = _environment(cluster, mode, tmp_path)
    streamed = _stream_lsh(
        "run", "--feed", str(pages), "--until-idle", "--quiet", "-o", str(tmp_path / "s.jsonl"), env=env
    )
    assert streamed.returncode == 0, streamed.stderr[-3000:]
    batch = _stream_lsh("dedup", str(pages), "-o", str(tmp_path / "b.jsonl"), env={**os.environ})
    assert batch.returncode == 0, batch.stderr

    def decisions(path: Path) -> dict[str, tuple]:
        rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        return {row["id"]: (row["status"], row["cluster_id"]) for row in rows}

    assert decisions(tmp_path / "s.jsonl") == decisions(tmp_path / "b.jsonl")
    assert len(decisions(tmp_path / "s.jsonl")) == 60
    logs = "".join(p.read_text(errors="replace") for p in (tmp_path / "data").glob("worker-*.log"))
    assert "Starting" in logs or "ready" in logs.lower(), "the worker logs are not what this test reads"
    for text in (logs, streamed.stdout, streamed.stderr):
        assert PASSWORD not in text and KEY_PASSPHRASE not in text


def test_produce_and_tail_log_in_with_an_oauth_token(cluster, tmp_path):
    env = _environment(cluster, "oauth", tmp_path)
    pages = tmp_path / "pages.jsonl"
    pages.write_bytes(b"".join(orjson.dumps(p) + b"\n" for p in generate_corpus(5, seed=2).pages))
    topics = _stream_lsh("topics", env=env)
    assert topics.returncode == 0, topics.stderr
    sent = _stream_lsh("produce", str(pages), env=env)
    assert sent.returncode == 0 and "sent 5 records" in sent.stderr, sent.stderr
    tailed = _stream_lsh("tail", env["STREAM_LSH_INPUT_TOPIC"], "--no-follow", env=env)
    assert tailed.returncode == 0, tailed.stderr
    assert len(tailed.stdout.splitlines()) == 5


@pytest.mark.parametrize(
    ("mode", "change", "expected"),
    [
        (
            "tls+scram",
            {"STREAM_LSH_SASL_PASSWORD": "wrong " + PASSWORD},
            "refused the credentials: SASL SCRAM-SHA-512 as user 'alice'",
        ),
        (
            "tls",
            {"STREAM_LSH_SSL_CERTFILE": "", "STREAM_LSH_SSL_KEYFILE": "", "STREAM_LSH_SSL_KEY_PASSWORD": ""},
            "cannot reach a Kafka broker",
        ),
    ],
)
@pytest.mark.parametrize("command", ["topics", "worker"])
def test_refused_credentials_are_one_clear_line_that_shows_no_secret(
    cluster, tmp_path, mode, change, expected, command
):
    """Said once, with the cause: a refused password is not an unreachable broker, and a worker
    does not wait for the broker to change its mind (it exits at once, with the usage code)."""
    env = {**_environment(cluster, mode, tmp_path), **change, "STREAM_LSH_BROKER_WAIT_S": "20"}
    started = time.monotonic()
    refused = _stream_lsh(command, env=env, timeout=90)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert expected in refused.stderr and "Traceback" not in refused.stderr
    assert PASSWORD not in refused.stderr and KEY_PASSPHRASE not in refused.stderr
    if mode == "tls+scram":
        assert (
            len(lines) == 1 and "SaslAuthenticationFailed" in lines[0]
        ) or "Authentication failed" in lines[0], lines
        assert time.monotonic() - started < 15  # not retried
    else:
        assert "security settings" in refused.stderr
    assert time.monotonic() - started < 60


def test_settings_refuse_what_cannot_connect(tmp_path):
    ca = ThrowawayCA(tmp_path)
    client = ca.issue("client", client=True, passphrase=KEY_PASSPHRASE)
    cases = [
        (
            {"STREAM_LSH_SSL_CAFILE": str(ca.certificate)},
            "ssl_cafile is set but security_protocol is PLAINTEXT",
        ),
        ({"STREAM_LSH_SECURITY_PROTOCOL": "SASL_SSL"}, "needs sasl_username and sasl_password"),
        (
            {"STREAM_LSH_SECURITY_PROTOCOL": "ssl", "STREAM_LSH_SSL_CAFILE": "/nope.pem"},
            "no such file '/nope.pem'",
        ),
        ({"STREAM_LSH_SECURITY_PROTOCOL": "TLS"}, "choose one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        (
            {
                "STREAM_LSH_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
                "STREAM_LSH_SASL_USERNAME": "a",
                "STREAM_LSH_SASL_PASSWORD": "b",
                "STREAM_LSH_SASL_PASSWORD_FILE": str(tmp_path / "pw"),
            },
            "give sasl_password or sasl_password_file, not both",
        ),
        (
            {"STREAM_LSH_SECURITY_PROTOCOL": "SASL_SSL", "STREAM_LSH_SASL_MECHANISM": "OAUTHBEARER"},
            "OAUTHBEARER needs a token",
        ),
        (
            {"STREAM_LSH_SECURITY_PROTOCOL": "SSL", "STREAM_LSH_SSL_KEYFILE": str(client.key)},
            "a client key needs its certificate",
        ),
    ]
    for environ, message in cases:
        with pytest.raises(Exception, match=message.replace("(", r"\(")):
            Settings.load(environ=environ)
    from stream_lsh.errors import SettingsError
    from stream_lsh.stream.connection import KafkaConnection

    wrong = Settings.load(
        environ={
            "STREAM_LSH_SECURITY_PROTOCOL": "SSL",
            "STREAM_LSH_SSL_CERTFILE": str(client.certificate),
            "STREAM_LSH_SSL_KEYFILE": str(client.key),
            "STREAM_LSH_SSL_KEY_PASSWORD": "not it",
        }
    )
    with pytest.raises(SettingsError, match="or a wrong key passphrase"):
        KafkaConnection.from_settings(wrong, "127.0.0.1:9").client_options()


def test_secrets_are_masked_wherever_settings_are_shown(tmp_path):
    (tmp_path / "pw").write_text(PASSWORD)
    settings = Settings.load(
        environ={
            "STREAM_LSH_SECURITY_PROTOCOL": "SASL_SSL",
            "STREAM_LSH_SASL_MECHANISM": "SCRAM-SHA-512",
            "STREAM_LSH_SASL_USERNAME": "alice",
            "STREAM_LSH_SASL_PASSWORD": PASSWORD,
        }
    )
    from stream_lsh.stream.connection import KafkaConnection

    kafka = KafkaConnection.from_settings(settings, "broker:9093")
    for shown in (
        repr(settings),
        str(settings),
        kafka.describe(),
        repr(kafka),
        repr(kafka.faust_credentials()),
    ):
        assert PASSWORD not in shown
    assert kafka.client_options()["sasl_plain_password"] == PASSWORD
    assert settings.to_environ()["STREAM_LSH_SASL_PASSWORD"] == PASSWORD  # how `run` hands it to its workers
    from_file = Settings.load(
        environ={
            "STREAM_LSH_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
            "STREAM_LSH_SASL_USERNAME": "alice",
            "STREAM_LSH_SASL_PASSWORD_FILE": str(tmp_path / "pw"),
        }
    )
    assert KafkaConnection.from_settings(from_file, "b:1").client_options()["sasl_plain_password"] == PASSWORD


def test_run_without_a_broker_refuses_security_settings(tmp_path):
    """The embedded broker speaks plaintext only: a secured `run` must name a cluster."""
    env = {**os.environ, "STREAM_LSH_SECURITY_PROTOCOL": "SASL_SSL"}
    env.update(STREAM_LSH_SASL_USERNAME="alice", STREAM_LSH_SASL_PASSWORD=PASSWORD)
    refused = _stream_lsh("run", "--workers", "1", env=env, timeout=60)
    assert refused.returncode == 2 and "the embedded broker is plaintext" in refused.stderr
