"""Where the Apache Kafka broker's jars come from: Maven Central, into a cache outside the repo.

Apache Kafka publishes its broker as ``org.apache.kafka:kafka_2.13``. The pom beside this module
names it and the one log binding it lacks; ``mvn dependency:copy-dependencies`` copies the runtime
jars into ``<cache>/kafka-<version>/libs``. Nothing is fetched from anywhere but the Maven
registry the machine is configured for, and nothing of Kafka lives in the repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .process import BrokerProcessError

__all__ = [
    "KAFKA_VERSION",
    "KafkaDistribution",
    "fetch_kafka",
    "fetch_tools",
    "find_kafka",
    "find_tools",
    "java_binary",
]

_HERE = Path(__file__).resolve().parent
POM = _HERE / "kafka-pom.xml"
LOG_CONFIG = _HERE / "kafka-log4j2.properties"
_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


def _pom_version() -> str:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = ET.parse(POM).getroot().find("m:properties/m:kafka.version", ns)
    assert version is not None and version.text, f"{POM} names no kafka.version"
    return version.text.strip()


KAFKA_VERSION = _pom_version()


def cache_root() -> Path:
    """``$STREAM_LSH_KAFKA_CACHE``, else ``$XDG_CACHE_HOME/stream-lsh`` (``~/.cache/stream-lsh``)."""
    explicit = os.environ.get("STREAM_LSH_KAFKA_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "stream-lsh"


@dataclass(frozen=True)
class KafkaDistribution:
    """The fetched jars of one Kafka version."""

    version: str
    libs: Path

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")


def _libs_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}" / "libs"


def _tools_dir(version: str = KAFKA_VERSION) -> Path:
    return cache_root() / f"kafka-{version}" / "tools"


def java_binary() -> str:
    """The ``java`` to run the broker with: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is not None and candidate.exists():
        return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise BrokerProcessError(
            "the embedded Apache Kafka needs a Java runtime (17 or newer): none on PATH "
            "and JAVA_HOME is not set"
        )
    return found


def find_kafka() -> KafkaDistribution | None:
    """The fetched distribution, or None if ``stream-lsh fetch-kafka`` has not run."""
    libs = _libs_dir()
    if (libs / f"kafka_2.13-{KAFKA_VERSION}.jar").exists():
        return KafkaDistribution(KAFKA_VERSION, libs)
    return None


def find_tools() -> KafkaDistribution | None:
    """Kafka's command-line tools with their jars, or None if ``fetch-kafka --tools`` has not run.
    Run one with ``java -cp "<libs>/*" org.apache.kafka.tools.ConsoleProducer ...``."""
    tools = _tools_dir()
    if (tools / f"kafka-tools-{KAFKA_VERSION}.jar").exists():
        return KafkaDistribution(KAFKA_VERSION, tools)
    return None


def fetch_kafka(*, quiet: bool = True) -> KafkaDistribution:
    """Copy Kafka's runtime jars from Maven Central into the cache (once; then it is a lookup)."""
    return find_kafka() or _copy_jars(_libs_dir(), quiet=quiet)


def fetch_tools(*, quiet: bool = True) -> KafkaDistribution:
    """Copy Kafka's command-line tools and their jars into the cache (once), beside the broker's."""
    return find_tools() or _copy_jars(_tools_dir(), quiet=quiet, profile="tools")


def _copy_jars(libs: Path, *, quiet: bool, profile: str | None = None) -> KafkaDistribution:
    """The pom's runtime jars (with a profile's) copied by Maven into ``libs``.

    The jars go to a temporary directory first and are renamed into place, so an interrupted
    fetch never leaves a half-filled cache that looks complete.
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BrokerProcessError(
            "fetching Apache Kafka needs Maven (mvn) on PATH; on Debian: apt-get install maven"
        )
    libs.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fetch-kafka-", dir=libs.parent) as work:
        pom = Path(work) / "pom.xml"
        shutil.copyfile(POM, pom)  # mvn writes next to its pom: never into the package
        staged = Path(work) / "libs"
        command = [
            mvn,
            "-B",
            *(["-q"] if quiet else []),
            "-f",
            str(pom),
            *([f"-P{profile}"] if profile else []),
            f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staged}",
        ]
        done = subprocess.run(command, capture_output=quiet, text=True)
        if done.returncode != 0:
            output = ((done.stdout or "") + (done.stderr or "")).strip().splitlines()[-20:]
            raise BrokerProcessError(
                f"mvn could not fetch Apache Kafka {KAFKA_VERSION} "
                f"(exit {done.returncode}):\n" + "\n".join(output)
            )
        if libs.exists():  # another fetch won the race
            return KafkaDistribution(KAFKA_VERSION, libs)
        staged.rename(libs)
    return KafkaDistribution(KAFKA_VERSION, libs)
