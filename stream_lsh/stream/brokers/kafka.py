"""Apache Kafka itself, single-node KRaft (controller and broker in one JVM), on loopback ports.

Production runs on Apache Kafka, so the guarantees are proven on it: its rebalance protocol,
transactions, compaction and exact offsets, none of which the embedded Tansu has. It needs a
Java runtime and the jars ``stream-lsh fetch-kafka`` puts in the cache (see ``kafka_dist``).

Unlike Tansu it keeps its log on disk: stopped and started again, it has every topic and offset
it had, on the same port. A listener with TLS and/or SASL/SCRAM can be switched on beside the
plaintext one (:class:`SecureListener`), for testing clients of a secured cluster.
"""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .kafka_dist import LOG_CONFIG, KafkaDistribution, fetch_kafka, find_kafka, java_binary
from .process import BrokerProcessError, EmbeddedBroker, free_port

#: The JAAS login modules of the SASL listeners, and the validator of unsigned OAUTHBEARER tokens.
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
_OAUTH_LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
_OAUTH_UNSECURED = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredValidatorCallbackHandler"
)

__all__ = ["KafkaBroker", "ListenerCertificate", "SecureListener"]

# Settings for a test broker on one machine: one replica of everything, no rebalance delay, small
# internal topics (fast to create), short group sessions allowed, and the log cleaner checking
# often, so that compaction can be seen within a test.
_TEST_SETTINGS = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "8",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "8",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "log.cleaner.backoff.ms": "1000",
    "log.retention.check.interval.ms": "5000",
    "log.initial.task.delay.ms": "0",  # retention and cleaning from the start, not after 30 s
}
_JVM = ["-Xms256m", "-Xmx1g", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
_STORE_PASSWORD = "stream-lsh-test"


@dataclass(frozen=True)
class ListenerCertificate:
    """PEM files of a listener's TLS, as a CA issued them: ``key_and_chain`` holds the broker's
    private key (PKCS#8, unencrypted: Kafka reads no other PEM key) followed by its certificate
    chain; ``trusted`` the CA certificates that client certificates must chain to."""

    key_and_chain: Path
    trusted: Path


@dataclass(frozen=True)
class SecureListener:
    """A client listener beside the plaintext one: TLS, SASL, or both.

    - TLS with a certificate of the caller's CA (``certificate``), or else a self-signed one made at
      start-up (trusted through :attr:`KafkaBroker.ca_file`); ``client_auth`` requires a client
      certificate signed by ``certificate.trusted`` (mutual TLS).
    - SASL/SCRAM (SHA-256 and SHA-512) for ``scram_users``, created when the storage is formatted;
      ``oauth`` adds OAUTHBEARER with Kafka's unsecured-token validator (an unsigned JWT with
      ``sub`` and ``exp``), which is for tests only.

    The plaintext listener stays: the broker talks to itself over it, and tests that do not care
    about security use it.
    """

    name: str = "secure"
    tls: bool = True
    scram_users: dict[str, str] = field(default_factory=dict)
    oauth: bool = False
    certificate: ListenerCertificate | None = None
    client_auth: bool = False

    def __post_init__(self) -> None:
        if not self.tls and not self.sasl:
            raise ValueError("a secure listener needs TLS, SCRAM users, or both")
        if self.client_auth and (not self.tls or self.certificate is None):
            raise ValueError("client_auth needs TLS with a certificate (its trusted CAs check the clients')")
        if not self.name.isalpha() or self.name.lower() in ("plaintext", "controller"):
            raise ValueError(f"listener name must be letters, and not a built-in one: {self.name!r}")

    @property
    def sasl(self) -> bool:
        return bool(self.scram_users) or self.oauth

    @property
    def protocol(self) -> str:
        if self.tls and self.sasl:
            return "SASL_SSL"
        return "SSL" if self.tls else "SASL_PLAINTEXT"

    def settings(self, self_signed: Path) -> dict[str, str]:
        """This listener's broker settings (``listener.name.<name>.*``); ``self_signed``: the
        PKCS#12 keystore made at start-up, for a listener without a certificate of its own."""
        prefix = f"listener.name.{self.name.lower()}."
        settings: dict[str, str] = {}
        if self.tls and self.certificate is not None:
            settings |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self.certificate.key_and_chain),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.certificate.trusted),
                "ssl.client.auth": "required" if self.client_auth else "none",
            }
        elif self.tls:
            settings |= {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(self_signed),
                "ssl.keystore.password": _STORE_PASSWORD,
                "ssl.key.password": _STORE_PASSWORD,
            }
        mechanisms = (["SCRAM-SHA-256", "SCRAM-SHA-512"] if self.scram_users else []) + (
            ["OAUTHBEARER"] if self.oauth else []
        )
        if mechanisms:
            settings["sasl.enabled.mechanisms"] = ",".join(mechanisms)
        if self.scram_users:
            settings["scram-sha-256.sasl.jaas.config"] = _SCRAM_LOGIN
            settings["scram-sha-512.sasl.jaas.config"] = _SCRAM_LOGIN
        if self.oauth:
            settings["oauthbearer.sasl.jaas.config"] = _OAUTH_LOGIN
            settings["oauthbearer.sasl.server.callback.handler.class"] = _OAUTH_UNSECURED
        return {prefix + key: value for key, value in settings.items()}


class KafkaBroker(EmbeddedBroker):
    """A single-node KRaft Apache Kafka broker process; use as a context manager.

    Args:
        data_dir: where its log and metadata live; by default a temporary directory removed on exit.
        secure: more listeners, with TLS and/or SASL (see :meth:`secure_bootstrap`).
        settings: broker settings added to (or overriding) the test defaults.
        fetch: fetch the jars with Maven if they are not in the cache yet.
    """

    kind = "kafka"

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        data_dir: str | Path | None = None,
        secure: SecureListener | Sequence[SecureListener] = (),
        settings: dict[str, str] | None = None,
        startup_timeout: float = 60.0,
        fetch: bool = True,
    ) -> None:
        super().__init__(host=host, port=port, startup_timeout=startup_timeout)
        self._own_dir = data_dir is None
        self.home = (
            Path(data_dir).resolve()  # the broker runs in it: a relative path would be read from there
            if data_dir is not None
            else Path(tempfile.mkdtemp(prefix="stream-lsh-kafka-"))
        )
        self.secure = (secure,) if isinstance(secure, SecureListener) else tuple(secure)
        names = [listener.name.lower() for listener in self.secure]
        if len(set(names)) != len(names):
            raise ValueError(f"listener names must differ: {names}")
        self.settings = dict(settings or {})
        self._fetch = fetch
        self.controller_port: int | None = None
        self.secure_ports: dict[str, int] = {}

    def secure_bootstrap(self, name: str | None = None) -> str:
        """``host:port`` of a secure listener (by default, the first)."""
        listener = self._listener(name)
        port = self.secure_ports.get(listener.name.lower())
        if port is None or self.port is None:
            raise BrokerProcessError("the broker is not running")
        return f"{self.host}:{port}"

    def _listener(self, name: str | None) -> SecureListener:
        for listener in self.secure:
            if name is None or listener.name.lower() == name.lower():
                return listener
        raise BrokerProcessError(f"the broker has no secure listener {name or ''}".rstrip())

    @property
    def ca_file(self) -> Path:
        """The PEM certificate that clients of a self-signed TLS listener trust (made at start-up)."""
        return self.home / "tls" / "broker.pem"

    def client_ssl_context(self) -> ssl.SSLContext:
        """An SSL context that trusts this broker's certificate, for aiokafka's ``ssl_context``."""
        return ssl.create_default_context(cafile=str(self.ca_file))

    def _distribution(self) -> KafkaDistribution:
        found = find_kafka()
        if found is not None:
            return found
        if not self._fetch:
            raise BrokerProcessError(
                "Apache Kafka's jars are not in the cache: run `stream-lsh fetch-kafka` first"
            )
        return fetch_kafka()

    def _spawn(self, port: int, log: int) -> subprocess.Popen[bytes]:
        distribution, java = self._distribution(), java_binary()
        if self._last_port is None:  # until it has run once, a retry after a port was taken takes new ones
            self.controller_port = free_port(self.host)
            self.secure_ports = {listener.name.lower(): free_port(self.host) for listener in self.secure}
        self_signed = any(listener.tls and listener.certificate is None for listener in self.secure)
        if self_signed and not self.ca_file.exists():
            self._make_certificate(java)
        config = self._write_config(port)
        if not (self.home / "data" / "meta.properties").exists():
            self._run(self._format_command(java, distribution, config), "kafka-storage format")
        return subprocess.Popen(
            _java_command(java, distribution, "kafka.Kafka", str(config)),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.home,
        )

    def _write_config(self, port: int) -> Path:
        listeners = {"PLAINTEXT": port, "CONTROLLER": self.controller_port}
        protocols = {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.home / "data"),
            **_TEST_SETTINGS,
        }
        for listener in self.secure:
            name = listener.name.upper()
            listeners[name] = self.secure_ports[listener.name.lower()]
            protocols[name] = listener.protocol
            settings.update(listener.settings(self.home / "tls" / "broker.p12"))
        settings["listeners"] = ",".join(f"{name}://{self.host}:{p}" for name, p in listeners.items())
        settings["advertised.listeners"] = ",".join(
            f"{name}://{self.host}:{p}" for name, p in listeners.items() if name != "CONTROLLER"
        )
        settings["listener.security.protocol.map"] = ",".join(f"{n}:{p}" for n, p in protocols.items())
        settings.update(self.settings)
        self.home.mkdir(parents=True, exist_ok=True)
        config = self.home / "server.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        return config

    def _make_certificate(self, java: str) -> None:
        """A self-signed certificate for 127.0.0.1 and localhost, with Java's own keytool."""
        keytool = str(Path(java).resolve().parent / "keytool")
        tls = self.home / "tls"
        tls.mkdir(parents=True, exist_ok=True)
        store = ["-keystore", str(tls / "broker.p12"), "-storetype", "PKCS12", "-storepass", _STORE_PASSWORD]
        self._run(
            [
                keytool,
                "-genkeypair",
                "-alias",
                "broker",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-validity",
                "30",
                "-dname",
                "CN=localhost",
                "-ext",
                f"SAN=ip:{self.host},dns:localhost",
                "-keypass",
                _STORE_PASSWORD,
                *store,
            ],
            "keytool -genkeypair",
        )
        self._run(
            [keytool, "-exportcert", "-rfc", "-alias", "broker", "-file", str(self.ca_file), *store],
            "keytool -exportcert",
        )

    def _format_command(self, java: str, distribution: KafkaDistribution, config: Path) -> list[str]:
        """Formats the KRaft storage, once: a cluster id, and the SCRAM users if any."""
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        scram = [
            f"--add-scram={mechanism}=[name={name},password={password}]"
            for listener in self.secure
            for name, password in listener.scram_users.items()
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        ]
        return _java_command(
            java,
            distribution,
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={cluster_id}",  # an id may start with '-'
            "--config",
            str(config),
            *scram,
        )

    def _run(self, command: list[str], what: str) -> None:
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.home)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).strip()[-2000:]
            raise BrokerProcessError(f"{what} failed (exit {done.returncode}):\n{output}")

    def cleanup(self) -> None:
        super().cleanup()
        if self._own_dir:
            shutil.rmtree(self.home, ignore_errors=True)


def _java_command(java: str, distribution: KafkaDistribution, main_class: str, *args: str) -> list[str]:
    """A Kafka main class run on the fetched jars, with the test JVM settings and our log settings."""
    return [
        java,
        *_JVM,
        f"-Dlog4j2.configurationFile={LOG_CONFIG}",
        "-cp",
        distribution.classpath,
        main_class,
        *args,
    ]
