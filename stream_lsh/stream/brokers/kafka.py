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
from dataclasses import dataclass, field
from pathlib import Path

from .kafka_dist import LOG_CONFIG, KafkaDistribution, fetch_kafka, find_kafka, java_binary
from .process import BrokerProcessError, EmbeddedBroker, free_port

#: The JAAS login module of the SCRAM listeners.
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"

__all__ = ["KafkaBroker", "SecureListener"]

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
class SecureListener:
    """A second client listener: TLS (a self-signed certificate made at start-up), SASL/SCRAM
    users (SCRAM-SHA-256 and -512, created when the storage is formatted), or both.

    The plaintext listener stays: the broker talks to itself over it, and tests that do not care
    about security use it.
    """

    tls: bool = True
    scram_users: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.tls and not self.scram_users:
            raise ValueError("a secure listener needs TLS, SCRAM users, or both")

    @property
    def protocol(self) -> str:
        if self.tls and self.scram_users:
            return "SASL_SSL"
        return "SSL" if self.tls else "SASL_PLAINTEXT"


class KafkaBroker(EmbeddedBroker):
    """A single-node KRaft Apache Kafka broker process; use as a context manager.

    Args:
        data_dir: where its log and metadata live; by default a temporary directory removed on exit.
        secure: a second listener with TLS and/or SASL/SCRAM (see :attr:`secure_bootstrap`).
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
        secure: SecureListener | None = None,
        settings: dict[str, str] | None = None,
        startup_timeout: float = 60.0,
        fetch: bool = True,
    ) -> None:
        super().__init__(host=host, port=port, startup_timeout=startup_timeout)
        self._own_dir = data_dir is None
        self.home = (
            Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="stream-lsh-kafka-"))
        )
        self.secure = secure
        self.settings = dict(settings or {})
        self._fetch = fetch
        self.controller_port: int | None = None
        self.secure_port: int | None = None

    @property
    def secure_bootstrap(self) -> str:
        """``host:port`` of the secure listener."""
        if self.secure is None or self.secure_port is None or self.port is None:
            raise BrokerProcessError("the broker has no secure listener running")
        return f"{self.host}:{self.secure_port}"

    @property
    def ca_file(self) -> Path:
        """The PEM certificate clients of the TLS listener trust (self-signed, made at start-up)."""
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
            self.secure_port = free_port(self.host) if self.secure is not None else None
        if self.secure is not None and self.secure.tls and not self.ca_file.exists():
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
        if self.secure is not None:
            listeners["SECURE"] = self.secure_port
            protocols["SECURE"] = self.secure.protocol
            settings.update(self._secure_settings())
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

    def _secure_settings(self) -> dict[str, str]:
        assert self.secure is not None
        settings: dict[str, str] = {}
        if self.secure.tls:
            settings |= {
                "listener.name.secure.ssl.keystore.type": "PKCS12",
                "listener.name.secure.ssl.keystore.location": str(self.home / "tls" / "broker.p12"),
                "listener.name.secure.ssl.keystore.password": _STORE_PASSWORD,
                "listener.name.secure.ssl.key.password": _STORE_PASSWORD,
            }
        if self.secure.scram_users:
            settings |= {
                "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
                "listener.name.secure.scram-sha-256.sasl.jaas.config": _SCRAM_LOGIN,
                "listener.name.secure.scram-sha-512.sasl.jaas.config": _SCRAM_LOGIN,
            }
        return settings

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
            for name, password in (self.secure.scram_users if self.secure else {}).items()
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
