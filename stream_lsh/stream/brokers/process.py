"""What every embedded broker shares: a child process on loopback ports, a readiness probe, a log.

Tests and ``stream-lsh run`` start a broker of their own; it must start on free ports, say why
when it cannot, and never outlive its owner.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path
from types import TracebackType

from ...errors import BrokerProcessError

__all__ = ["BrokerProcessError", "EmbeddedBroker", "answers_metadata", "free_port"]

_CLIENT_ID = b"stream-lsh"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (a broker retries if someone takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _request(conn: socket.socket, api_key: int, version: int, body: bytes) -> bytes:
    """One request with header v1 (correlation id 1); the response body after the correlation id."""
    header = struct.pack(">hhih", api_key, version, 1, len(_CLIENT_ID)) + _CLIENT_ID
    message = header + body
    conn.sendall(struct.pack(">i", len(message)) + message)
    size = struct.unpack(">i", _read_exactly(conn, 4))[0]
    response = _read_exactly(conn, size)
    if struct.unpack(">i", response[:4])[0] != 1:
        raise OSError("unexpected correlation id")
    return response[4:]


def answers_metadata(host: str, port: int, timeout: float) -> bool:
    """True if the port answers a Metadata request (v4, which every broker since Kafka 1.0 and
    Kafka 4 both serve) with at least one broker: the broker is up and registered, not only
    listening."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            # topics: null (all), allow_auto_topic_creation: false
            body = _request(conn, 3, 4, struct.pack(">ib", -1, 0))
            _throttle, brokers = struct.unpack(">ii", body[:8])
            return bool(brokers > 0)
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


class EmbeddedBroker(ABC):
    """A broker child process on a loopback port; use as a context manager.

    Subclasses say how to launch it (:meth:`_spawn`); this class picks the port, waits until the
    broker answers metadata, retries on a port taken meanwhile, and stops or kills it.

    Args:
        port: the client port; by default a free one is picked (and re-picked if taken).
        startup_timeout: seconds to wait for the broker to answer.
    """

    kind: str = ""

    def __init__(
        self, *, host: str = "127.0.0.1", port: int | None = None, startup_timeout: float = 15.0
    ) -> None:
        self.host = host
        self._requested_port = port
        self.port: int | None = None
        self.startup_timeout = startup_timeout
        self.startup_s: float | None = None
        self._last_port: int | None = None  # started again, a broker keeps its port (clients know it)
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None  # made at the first start: a broker never started leaves nothing

    @property
    def bootstrap(self) -> str:
        """``host:port``, as Kafka clients take it."""
        if self.port is None:
            raise BrokerProcessError("the broker is not running")
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """``kafka://host:port``, as Faust takes it."""
        return f"kafka://{self.bootstrap}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> EmbeddedBroker:
        began = time.monotonic()
        fixed = self._requested_port or self._last_port
        for _ in range(1 if fixed else 3):
            port = fixed or free_port(self.host)
            if self._launch(port):
                self.port = self._last_port = port
                self.startup_s = time.monotonic() - began
                return self
        tail = self.log_tail()
        self.cleanup()  # what the log says is in the error
        raise BrokerProcessError(f"the embedded {self.kind} broker did not start; its log ends with:\n{tail}")

    @abstractmethod
    def _spawn(self, port: int, log: int) -> subprocess.Popen[bytes]:
        """Start the broker process for client port ``port``, its output to ``log``."""

    def _launch(self, port: int) -> bool:
        if self._log is None:
            self._log = Path(
                tempfile.mkstemp(prefix=f"stream-lsh-{self.kind or 'broker'}-", suffix=".log")[1]
            )
        with self._log.open("ab") as log:
            self._process = self._spawn(port, log.fileno())
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:  # exited: e.g. the port was taken meanwhile
                self._process = None
                return False
            if answers_metadata(self.host, port, timeout=0.5):
                return True
            time.sleep(0.02)
        self._terminate(timeout=2.0)
        return False

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if the broker has not exited within ``timeout`` seconds."""
        self._terminate(timeout)
        self.port = None

    def kill(self) -> None:
        """Kill -9, as a crash would."""
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
        if self._log is None:
            return "(no log)"
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def cleanup(self) -> None:
        """Remove what the broker left on disk (its log); subclasses add their data."""
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
        self.cleanup()

    def __del__(self) -> None:  # a broker must never outlive its owner
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGKILL)
