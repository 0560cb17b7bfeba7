"""How settings are written and read: the prefix, value parsers, fixed choices, secrets."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any, TypeVar

from ..errors import SettingsError

__all__ = [
    "ENV_PREFIX",
    "Compression",
    "LogFormat",
    "LogLevel",
    "LowerCaseChoice",
    "Order",
    "SaslMechanism",
    "SecurityProtocol",
    "as_choices",
    "choice",
    "parse_bool",
    "parse_languages",
    "parse_optional_float",
    "parse_optional_int",
    "where",
]

ENV_PREFIX = "STREAM_LSH_"


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true/false, got {text!r}")


def parse_languages(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_optional_int(text: str) -> int | None:
    return None if text.strip().lower() in ("", "none", "auto") else int(text)


def parse_optional_float(text: str) -> float | None:
    return None if text.strip().lower() in ("", "none", "forever") else float(text)


class Order(str, Enum):
    """Which copy of a story is first."""

    CLOCK = "clock"  # the earliest (clock, id), whatever the interleaving of input partitions
    ARRIVAL = "arrival"  # the first to reach the index

    @classmethod
    def parse(cls, text: str) -> Order:
        text = text.strip().lower()
        return cls.CLOCK if text == "event-time" else cls(text)  # its name until clocks replaced dates


_Lower = TypeVar("_Lower", bound="LowerCaseChoice")


class LowerCaseChoice(str, Enum):
    """A setting of fixed lower-case values, read whatever the case the user wrote."""

    @classmethod
    def parse(cls: type[_Lower], text: str) -> _Lower:
        return cls(text.strip().lower())


class LogFormat(LowerCaseChoice):
    TEXT = "text"  # for people: time, level, logger, message
    JSON = "json"  # one JSON object per line, for a log pipeline (stream_lsh.stream.logs)


class LogLevel(LowerCaseChoice):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


def choice(kind: type[Enum], what: str) -> Callable[[str], Any]:
    """A parser for a fixed set of values whose error names them."""
    parse = getattr(kind, "parse", kind)

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError:
            choices = ", ".join(str(member.value) for member in kind)
            raise ValueError(f"unknown {what} {text!r}; choose one of {choices}") from None

    return parsed


def as_choices(settings: Any, **kinds: type[Enum]) -> None:
    """Settings of a fixed set of values given as text (from Python, not the environment) become
    their enum members, or a SettingsError that lists the choices."""
    for name, kind in kinds.items():
        value = getattr(settings, name)
        if not isinstance(value, kind):
            try:
                object.__setattr__(settings, name, choice(kind, name.replace("_", " "))(str(value)))
            except ValueError as error:
                raise SettingsError(f"{name}: {error} ({where(name)})") from None


class SecurityProtocol(str, Enum):
    """How clients reach the brokers: Kafka's own ``security.protocol`` names."""

    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"  # TLS; with a client certificate, mutual TLS
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"  # SASL over TLS: Confluent Cloud, MSK with SCRAM, Redpanda Cloud, Aiven

    @classmethod
    def parse(cls, text: str) -> SecurityProtocol:
        return cls(text.strip().upper())

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


class SaslMechanism(str, Enum):
    PLAIN = "PLAIN"
    SCRAM_SHA_256 = "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512"
    OAUTHBEARER = "OAUTHBEARER"

    @classmethod
    def parse(cls, text: str) -> SaslMechanism:
        return cls(text.strip().upper().replace("_", "-"))


class Compression(LowerCaseChoice):
    """Codec of the record batches the app writes (Kafka's ``compression.type`` names)."""

    NONE = "none"
    GZIP = "gzip"
    LZ4 = "lz4"
    SNAPPY = "snappy"
    ZSTD = "zstd"

    @property
    def codec(self) -> str | None:
        """The name Kafka clients take (``None``: uncompressed)."""
        return None if self is Compression.NONE else self.value


def where(name: str) -> str:
    return f"--{name.replace('_', '-')} or {ENV_PREFIX}{name.upper()}"
