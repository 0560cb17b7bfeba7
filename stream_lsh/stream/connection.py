"""How every Kafka client of the app connects: the bootstrap servers and the security settings,
turned into the options of aiokafka's clients and into Faust's broker credentials.

One object for all of them, so that a worker's consumer and producer (Faust), the admin client that
creates topics, the guard check, ``produce`` and ``tail`` can never disagree about how to reach a
secured cluster: a client built without it is a client that only works on a plaintext broker.

Secrets are read when a client is built (files again at each build, so a rotated secret is used by
the next connection) and appear in no ``repr``, log line or error message made here.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faust
from aiokafka.abc import AbstractTokenProvider
from aiokafka.errors import KafkaError, SaslAuthenticationFailed

from ..errors import BrokerAuthenticationError, BrokerUnreachableError, SettingsError
from ..settings import KafkaSettings, SaslMechanism, SecurityProtocol, Settings

__all__ = ["KafkaConnection", "TokenFile", "start_client"]


@dataclass(frozen=True)
class KafkaConnection:
    """Where the brokers are and how to talk to them. A plain string, where a connection is
    accepted, is a plaintext bootstrap address (``host:port[,host:port]``)."""

    bootstrap: str
    security: KafkaSettings = field(default_factory=KafkaSettings)

    @classmethod
    def of(cls, target: KafkaConnection | str) -> KafkaConnection:
        return target if isinstance(target, KafkaConnection) else cls(target)

    @classmethod
    def from_settings(cls, settings: Settings, bootstrap: str | None = None) -> KafkaConnection:
        """The settings' broker (or ``bootstrap``, e.g. an embedded broker's) with their security."""
        return cls(bootstrap if bootstrap is not None else settings.stream.broker, settings.kafka)

    @property
    def protocol(self) -> SecurityProtocol:
        return self.security.security_protocol

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of aiokafka's producer, consumer and admin client."""
        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap,
            "security_protocol": self.protocol.value,
        }
        if self.protocol.tls:
            options["ssl_context"] = self.ssl_context()
        if self.protocol.sasl:
            mechanism = self.security.sasl_mechanism
            options["sasl_mechanism"] = mechanism.value
            if mechanism is SaslMechanism.OAUTHBEARER:
                options["sasl_oauth_token_provider"] = TokenFile(self.security.sasl_oauth_token_file)
            else:
                options["sasl_plain_username"] = self.security.sasl_username
                options["sasl_plain_password"] = self.security.password()
        return options

    def producer_options(self) -> dict[str, Any]:
        """Keyword arguments of aiokafka's producer: :meth:`client_options` and the codec."""
        return {**self.client_options(), "compression_type": self.security.compression.codec}

    def faust_credentials(self) -> Any:
        """Faust's ``broker_credentials`` for the same connection (None: plaintext). Faust turns
        them into the same aiokafka options for every client it builds."""
        context = self.ssl_context() if self.protocol.tls else None
        if not self.protocol.sasl:
            return context
        mechanism = self.security.sasl_mechanism
        if mechanism is SaslMechanism.OAUTHBEARER:
            return faust.OAuthCredentials(
                oauth_cb=TokenFile(self.security.sasl_oauth_token_file), ssl_context=context
            )
        return faust.SASLCredentials(
            username=self.security.sasl_username,
            password=self.security.password(),
            mechanism=mechanism.value,
            ssl_context=context,
        )

    def ssl_context(self) -> ssl.SSLContext:
        s = self.security
        return _ssl_context(
            s.ssl_cafile, s.ssl_certfile, s.ssl_keyfile, s.key_password(), s.ssl_check_hostname
        )

    def describe(self) -> str:
        """``host:port over SASL_SSL, SCRAM-SHA-512 as 'user'``: for logs and error messages."""
        return f"{self.bootstrap} over {self.security.describe()}"

    def refused(self, error: BaseException) -> BrokerAuthenticationError:
        """The error of a client whose credentials the broker refused (never a secret)."""
        s = self.security
        if s.security_protocol.sasl:
            who = f"SASL {s.sasl_mechanism.value}" + (
                f" as user {s.sasl_username!r}" if s.sasl_username else ""
            )
            fix = "check STREAM_LSH_SASL_USERNAME and the password (STREAM_LSH_SASL_PASSWORD or _FILE)"
        else:
            who, fix = "the client's certificate", "check STREAM_LSH_SSL_CERTFILE and STREAM_LSH_SSL_KEYFILE"
        return BrokerAuthenticationError(
            f"the broker at {self.bootstrap} refused the credentials: {who} ({error}); {fix}"
        )

    def unreachable(self, error: BaseException) -> BrokerUnreachableError:
        """The error of a client that could not connect, saying what to check (never a secret)."""
        hint = "check --broker or STREAM_LSH_BROKER and that the broker is up"
        if self.protocol is not SecurityProtocol.PLAINTEXT:
            hint += ", and the security settings (STREAM_LSH_SECURITY_PROTOCOL, _SSL_*, _SASL_*)"
        return BrokerUnreachableError(f"cannot reach a Kafka broker at {self.describe()} ({error}); {hint}")


async def start_client(client: Any, kafka: KafkaConnection) -> None:
    """Start an aiokafka client; a broker that cannot be reached is a
    :class:`BrokerUnreachableError`, one that refuses the credentials a
    :class:`BrokerAuthenticationError`, each saying what to check, and the client is closed.

    aiokafka only logs why each bootstrap address failed and then raises "unable to bootstrap":
    those lines are held back here and their cause goes into the one error raised instead."""
    with _bootstrap_failures() as failures:
        try:
            await client.start()
        except (KafkaError, OSError) as error:
            with contextlib.suppress(KafkaError, OSError):
                await (client.close() if hasattr(client, "close") else client.stop())
            refusal = next((f for f in failures if isinstance(f, SaslAuthenticationFailed)), None)
            if refusal is not None:
                raise kafka.refused(refusal) from None
            raise kafka.unreachable(failures[-1] if failures else error) from None


#: Where aiokafka's client logs its bootstrap failures (its module's logger is named "aiokafka").
_CLIENT_LOGGERS = ("aiokafka", "aiokafka.client")


@contextlib.contextmanager
def _bootstrap_failures() -> Iterator[list[BaseException]]:
    """The errors aiokafka's client logs while it bootstraps, kept instead of logged."""
    failures: list[BaseException] = []

    def keep(record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        found = [arg for arg in args if isinstance(arg, BaseException)]
        failures.extend(found)
        return not found

    loggers = [logging.getLogger(name) for name in _CLIENT_LOGGERS]
    for logger in loggers:
        logger.addFilter(keep)
    try:
        yield failures
    finally:
        for logger in loggers:
            logger.removeFilter(keep)


@functools.lru_cache(maxsize=16)
def _ssl_context(
    cafile: str, certfile: str, keyfile: str, key_password: str | None, check_hostname: bool
) -> ssl.SSLContext:
    """A client TLS context: the given CA (else the system's trust store, which managed services'
    certificates chain to), the client certificate for mutual TLS, hostname checking on unless
    switched off. The chain is always verified."""
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile or None)
    except (OSError, ssl.SSLError) as error:
        raise SettingsError(f"ssl_cafile {cafile!r} holds no usable CA certificate: {error}") from None
    if certfile:
        try:
            context.load_cert_chain(certfile, keyfile or None, password=key_password)
        except (OSError, ssl.SSLError) as error:
            raise SettingsError(
                f"cannot use the client certificate {certfile!r}"
                f"{f' with key {keyfile!r}' if keyfile else ''}: {_ssl_reason(error)}"
            ) from None
    context.check_hostname = check_hostname
    return context


def _ssl_reason(error: BaseException) -> str:
    """OpenSSL's reason, said so that an operator knows what to fix: it reports a wrong passphrase
    and an unreadable file alike (``PEM lib``)."""
    reason = str(getattr(error, "reason", None) or getattr(error, "strerror", None) or error)
    if any(known in reason.upper() for known in ("PEM LIB", "BAD_DECRYPT", "BAD DECRYPT")):
        return "not a PEM certificate and key, or a wrong key passphrase (ssl_key_password)"
    return reason


class TokenFile(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka ships no type hints
    """OAUTHBEARER token provider reading the token from a file at every login: whatever renews
    tokens (a sidecar, a Kubernetes projected volume) writes the file, the client picks it up."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    async def token(self) -> str:
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except OSError as error:
            raise SettingsError(
                f"sasl_oauth_token_file: cannot read {str(self.path)!r}: {error.strerror}"
            ) from None
        if not token:
            raise SettingsError(f"sasl_oauth_token_file {str(self.path)!r} is empty")
        return token

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r})"
