"""How every Kafka client of the app connects: security, record size, compression, waits."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import SettingsError
from .declare import CLIENTS, STREAM, TOPICS, setting
from .values import (
    ENV_PREFIX,
    Compression,
    SaslMechanism,
    SecurityProtocol,
    as_choices,
    choice,
    parse_bool,
    parse_optional_float,
    where,
)

#: The largest record batch the app writes by default: 1 MiB, the limit of Apache Kafka, Amazon MSK,
#: Redpanda, Aiven and Azure Event Hubs out of the box (Confluent Cloud allows 2 MB by default, 8 MB at
#: most), so that topics can be created and written anywhere without asking for a larger limit.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20
MIN_MESSAGE_BYTES = 1 << 16  # a snapshot chunk or a batch of a few pages must fit


class Secret:
    """A password or key passphrase: compared and passed on, never shown. Its ``repr`` and ``str``
    are masked, so a settings object can be logged or printed in a traceback without leaking it."""

    __slots__ = ("_value",)

    def __init__(self, value: str = "") -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return "Secret('********')" if self._value else "Secret('')"

    __str__ = __repr__


def _secret_from(value: Secret, file: str, names: tuple[str, str]) -> str | None:
    """A secret given inline (environment) or in a file (a mounted Kubernetes Secret), read now:
    a file is read at every connection, so a rotated secret is picked up by the next one."""
    if value and file:
        raise SettingsError(f"give {names[0]} or {names[1]}, not both ({where(names[1])})")
    if file:
        try:
            return Path(file).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as error:
            raise SettingsError(
                f"{names[1]}: cannot read {file!r}: {error.strerror} ({where(names[1])})"
            ) from None
    return value.reveal() if value else None


@dataclass(frozen=True)
class KafkaSettings:
    """How every Kafka client of the app connects (worker, topics, produce, tail): TLS and SASL;
    how long a worker waits for a broker that is not there yet, and for one that went away."""

    security_protocol: SecurityProtocol = setting(
        SecurityProtocol.PLAINTEXT,
        choice(SecurityProtocol, "security protocol"),
        "PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL (SASL over TLS), as Kafka's security.protocol",
        CLIENTS,
    )
    ssl_cafile: str = setting(
        "",
        str,
        "PEM file of the CA certificates that sign the brokers'; empty: the system's trust store",
        CLIENTS,
    )
    ssl_certfile: str = setting(
        "", str, "PEM file of this client's certificate chain, for mutual TLS", CLIENTS
    )
    ssl_keyfile: str = setting(
        "",
        str,
        "PEM file of this client's private key, for mutual TLS; empty: it is in the certificate file",
        CLIENTS,
    )
    ssl_key_password: Secret = setting(
        Secret(), Secret, "passphrase of an encrypted client key (environment only)", CLIENTS, flag=False
    )
    ssl_key_password_file: str = setting("", str, "file holding the passphrase of the client key", CLIENTS)
    ssl_check_hostname: bool = setting(
        True,
        parse_bool,
        "check that a broker's certificate names the host connected to",
        CLIENTS,
        switch="no-ssl-check-hostname",
    )
    sasl_mechanism: SaslMechanism = setting(
        SaslMechanism.PLAIN,
        choice(SaslMechanism, "SASL mechanism"),
        "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
        CLIENTS,
    )
    sasl_username: str = setting("", str, "SASL user name (PLAIN, SCRAM)", CLIENTS)
    sasl_password: Secret = setting(Secret(), Secret, "SASL password (environment only)", CLIENTS, flag=False)
    sasl_password_file: str = setting("", str, "file holding the SASL password", CLIENTS)
    sasl_oauth_token_file: str = setting(
        "",
        str,
        "OAUTHBEARER: file holding the access token, read again at every login (rotate it there)",
        CLIENTS,
    )
    compression: Compression = setting(
        Compression.ZSTD,  # the fewest bytes for the least CPU (benchmarks/bench_compression.py)
        choice(Compression, "compression"),
        "codec of the app's output and internal topics: none, gzip, lz4, snappy or zstd",
        (*STREAM, "produce"),
    )
    max_message_bytes: int = setting(
        DEFAULT_MAX_MESSAGE_BYTES,
        int,
        "largest record the app writes, as the broker counts it (max.message.bytes of the topics it makes)",
        (*TOPICS, "produce"),
    )
    broker_wait_s: float | None = setting(
        None,
        parse_optional_float,
        "how long a worker waits for an unreachable broker at start-up, retrying, seconds; none = forever",
        STREAM,
        shown="forever",
    )
    send_timeout_s: float = setting(
        300.0,
        float,
        "how long a worker's sends wait for the brokers, retrying, before it exits with code 70 "
        "(its input is redelivered): broker outages shorter than this are ridden out, seconds",
        STREAM,
    )

    def __post_init__(self) -> None:
        as_choices(
            self, security_protocol=SecurityProtocol, sasl_mechanism=SaslMechanism, compression=Compression
        )
        if self.max_message_bytes < MIN_MESSAGE_BYTES:
            raise SettingsError(
                f"max_message_bytes must be at least {MIN_MESSAGE_BYTES} (64 KiB), got "
                f"{self.max_message_bytes} ({where('max_message_bytes')})"
            )
        if self.broker_wait_s is not None and self.broker_wait_s < 0:
            raise SettingsError(
                f"broker_wait_s must be >= 0 or none, got {self.broker_wait_s} ({where('broker_wait_s')})"
            )
        if not self.send_timeout_s > 0:
            raise SettingsError(
                f"send_timeout_s must be positive, got {self.send_timeout_s} ({where('send_timeout_s')})"
            )
        for name in ("ssl_key_password", "sasl_password"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, Secret(getattr(self, name)))
        protocol = self.security_protocol
        given = [f.name for f in fields(self) if f.name.startswith(("ssl_", "sasl_")) and _is_set(self, f)]
        for name in given:
            tls = name.startswith("ssl_")
            if (tls and not protocol.tls) or (not tls and not protocol.sasl):
                wanted = "SSL or SASL_SSL" if tls else "SASL_PLAINTEXT or SASL_SSL"
                raise SettingsError(
                    f"{name} is set but security_protocol is {protocol.value}: set it to {wanted} "
                    f"({where('security_protocol')})"
                )
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "sasl_oauth_token_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise SettingsError(f"{name}: no such file {path!r} ({where(name)})")
        if (
            self.ssl_keyfile or self.ssl_key_password or self.ssl_key_password_file
        ) and not self.ssl_certfile:
            raise SettingsError(
                f"a client key needs its certificate: set ssl_certfile ({where('ssl_certfile')})"
            )
        self.key_password()
        if protocol.sasl:
            self._check_sasl()

    def _check_sasl(self) -> None:
        if self.sasl_mechanism is SaslMechanism.OAUTHBEARER:
            if not self.sasl_oauth_token_file:
                raise SettingsError(
                    "sasl_mechanism OAUTHBEARER needs a token: "
                    f"set sasl_oauth_token_file ({where('sasl_oauth_token_file')})"
                )
            return
        if self.sasl_oauth_token_file:
            raise SettingsError(
                f"sasl_oauth_token_file is for sasl_mechanism OAUTHBEARER, not {self.sasl_mechanism.value}"
            )
        if not self.sasl_username or self.password() is None:
            raise SettingsError(
                f"SASL {self.sasl_mechanism.value} needs sasl_username and sasl_password or "
                f"sasl_password_file ({where('sasl_username')}, {ENV_PREFIX}SASL_PASSWORD)"
            )

    def password(self) -> str | None:
        """The SASL password, from the environment or its file."""
        return _secret_from(
            self.sasl_password, self.sasl_password_file, ("sasl_password", "sasl_password_file")
        )

    def key_password(self) -> str | None:
        """The client key's passphrase, from the environment or its file."""
        return _secret_from(
            self.ssl_key_password, self.ssl_key_password_file, ("ssl_key_password", "ssl_key_password_file")
        )

    def describe(self) -> str:
        """How clients connect, for logs and messages: never a secret."""
        parts = [self.security_protocol.value]
        if self.security_protocol.sasl:
            who = f" as {self.sasl_username!r}" if self.sasl_username else ""
            parts.append(f"{self.sasl_mechanism.value}{who}")
        if self.ssl_certfile:
            parts.append("client certificate")
        return ", ".join(parts)


def _is_set(settings: KafkaSettings, spec: Any) -> bool:
    """Whether a setting differs from its default (ssl_check_hostname's default is on)."""
    return bool(getattr(settings, spec.name) != spec.default)
