"""The simulator's TLS (tcps) listener side, and throw-away certificates for it.

A real Oracle listener with a ``(PROTOCOL=tcps)`` endpoint starts TLS as soon as the TCP
connection is up: the client sends its ClientHello first, and CONNECT travels inside the
TLS session. python-oracledb thin does exactly that (``loop.start_tls`` right after the TCP
connect), checks the certificate chain against the CA it was given (a PEM file via
``ssl_context``/``wallet_location``, or the system store), then, with
``ssl_server_dn_match`` (the default), checks the server certificate's subject against
``ssl_server_cert_dn`` or, without one, the host name against the certificate's DNS names
and common name. So the simulator only has to present a certificate and speak Oracle Net
inside the TLS session: :func:`server_context` builds that context.

:func:`make_pki` writes a fresh CA and a server certificate signed by it (``cryptography``;
nothing is ever committed or downloaded): the tests call it in a temporary directory, the
demo in its data directory. The CA is also written as ``ewallet.pem`` in a wallet
directory, the file name python-oracledb thin reads from ``wallet_location``.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
WALLET_PEM = "ewallet.pem"  # python-oracledb thin's PEM_WALLET_FILE_NAME
HANDSHAKE_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Pki:
    """Where :func:`make_pki` wrote its files, and the server certificate's subject DN."""

    ca_cert: Path  # the CA certificate (PEM): what a client must trust
    server_cert: Path  # the server certificate chain (PEM)
    server_key: Path  # its private key (PEM, unencrypted, mode 0600)
    wallet_dir: Path  # a directory holding the CA as ewallet.pem (wallet_location)
    server_dn: str  # RFC 4514 subject of the server certificate


def _name(common_name: str, org: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
        ]
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def make_pki(
    directory: Path,
    *,
    host: str = "localhost",
    common_name: str = "oraclesim",
    org: str = "connwatch test",
    days: int = 30,
) -> Pki:
    """A new CA and a server certificate for ``host`` (DNS name and, for an address, IP
    SAN; subject CN ``common_name``), written into ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"{common_name} test CA", org)
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
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
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    subject = _name(common_name, org)
    names: list[x509.GeneralName] = [x509.DNSName(host)]
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    pki = Pki(
        ca_cert=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        wallet_dir=directory / "wallet",
        server_dn=subject.rfc4514_string(),
    )
    pki.ca_cert.write_bytes(ca_pem)
    pki.server_cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + ca_pem)
    _write_key(pki.server_key, key)
    pki.wallet_dir.mkdir(exist_ok=True)
    (pki.wallet_dir / WALLET_PEM).write_bytes(ca_pem)
    return pki


# The raw (TCP) transport of the connection whose handshake runs now: asyncio calls
# wrap_bio from a callback scheduled by start_tls, which runs in the caller's context.
_RAW: contextvars.ContextVar[asyncio.BaseTransport | None] = contextvars.ContextVar(
    "oraclesim_tls_raw", default=None
)


class _AlertingSSLObject(ssl.SSLObject):
    """Sends the TLS alert of a failed handshake before the connection closes.

    asyncio drops the connection on a failed server-side handshake without writing what
    OpenSSL queued (the alert, e.g. protocol_version), so the client would only see an
    unexpected EOF; a real listener sends the alert and the client reports its reason."""

    _cw_outgoing: ssl.MemoryBIO
    _cw_raw: asyncio.BaseTransport | None

    @classmethod
    def _create(
        cls, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, *args: Any, **kwargs: Any
    ) -> _AlertingSSLObject:
        obj: _AlertingSSLObject = super()._create(  # type: ignore[misc]
            incoming, outgoing, *args, **kwargs
        )
        obj._cw_outgoing, obj._cw_raw = outgoing, _RAW.get()
        return obj

    def do_handshake(self) -> None:
        try:
            super().do_handshake()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, ssl.SSLSyscallError):
            raise
        except ssl.SSLError:
            alert = self._cw_outgoing.read()
            raw = self._cw_raw
            if alert and isinstance(raw, asyncio.WriteTransport) and not raw.is_closing():
                raw.write(alert)
            raise


async def start_server_tls(writer: asyncio.StreamWriter, ctx: ssl.SSLContext) -> None:
    """Upgrade an accepted connection to TLS (server side), alerts included."""
    token = _RAW.set(writer.transport)
    try:
        await writer.start_tls(ctx, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S)
    finally:
        _RAW.reset(token)


def server_context(
    cert: Path, key: Path, min_version: str = "1.2", max_version: str = "1.3"
) -> ssl.SSLContext:
    """The listener's TLS context: this certificate, TLS ``min_version``..``max_version``
    ("1.2" or "1.3"), no client certificate asked for (one-way TLS)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.sslobject_class = _AlertingSSLObject
    ctx.minimum_version = TLS_VERSIONS[min_version]
    ctx.maximum_version = TLS_VERSIONS[max_version]
    ctx.load_cert_chain(str(cert), str(key))
    return ctx
