"""A certificate authority made for one test run: it signs a broker's certificate and clients'
certificates, and nothing outside the test trusts it.

The files are what operators are handed by their security team: PEM certificates, PKCS#8 keys
(Apache Kafka's PEM keystores read no other format), a client key optionally encrypted.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Issued", "ThrowawayCA"]

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    """One certificate's files."""

    certificate: Path  # the certificate, then the CA's
    key: Path  # PKCS#8, encrypted if a passphrase was given
    key_and_chain: Path  # key first, then the chain: Kafka's PEM keystore (unencrypted key)


class ThrowawayCA:
    def __init__(self, folder: Path, name: str = "stream-lsh test CA") -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.certificate = folder / "ca.pem"
        self.certificate.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        name: str,
        *,
        hosts: tuple[str, ...] = (),
        client: bool = False,
        passphrase: str | None = None,
    ) -> Issued:
        """A certificate for a server (``hosts``: DNS names and IP addresses) or a client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + _DAY)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]
                ),
                critical=False,
            )
        )
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        chain = cert.public_bytes(serialization.Encoding.PEM) + self.certificate.read_bytes()
        plain = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        stored = (
            plain
            if passphrase is None
            else key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(passphrase.encode()),
            )
        )
        files = Issued(
            self.folder / f"{name}.pem", self.folder / f"{name}.key", self.folder / f"{name}-keystore.pem"
        )
        files.certificate.write_bytes(chain)
        files.key.write_bytes(stored)
        files.key_and_chain.write_bytes(plain + chain)
        return files


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
