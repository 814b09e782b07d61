"""Turn any exception a probe raises into a classified, sanitised error.

Codes (see :class:`app.samples.ErrorClass`):

- ``ORA-nnnnn``: the database said so (python-oracledb passes the server's error).
- ``TNS-nnnnn``: the listener refused the connection. python-oracledb thin reports
  a REFUSE as ``DPY-6005`` wrapping ``DPY-6000``/``DPY-6001``/``DPY-6003`` whose
  text says "(Similar to ORA-125xx)"; the ORA-125xx number is dug out of that text.
- ``DPY-nnnn``: a python-oracledb client error. For ``DPY-6005`` ("cannot connect")
  the most specific wrapped code is kept (e.g. ``DPY-4011`` for a connection the
  server closed before ACCEPT).
- ``TLS-...``: a tcps logon's TLS handshake failed: ``TLS-UNTRUSTED`` (the server's
  certificate chain does not lead to a CA the client trusts: self-signed, unknown
  issuer), ``TLS-EXPIRED`` (a certificate of the chain is expired or not yet valid),
  ``TLS-DN-MISMATCH`` (DPY-6002: the certificate's subject is not
  ``ssl_server_cert_dn``), ``TLS-NAME-MISMATCH`` (DPY-6006: the host name is not in the
  certificate), ``TLS-VERSION`` (no TLS version both sides accept), ``TLS-HANDSHAKE``
  (anything else in the handshake, e.g. the port does not speak TLS). Checked before
  ``NET-``: ssl errors are OSErrors too.
- ``NET-<ERRNO>``: the operating system refused or lost the connection
  (``NET-ECONNREFUSED``, ``NET-ENOENT`` for a missing unix socket, ...), whether it
  reached us bare or wrapped in a driver error.
- ``PG-<SQLSTATE>``: PostgreSQL's SQLSTATE (``PG-28P01`` bad password,
  ``PG-3D000`` unknown database, ...). libpq reports a FATAL during connection
  start-up without its SQLSTATE, so the common ones are recognised by the
  server's (English) message; an unrecognised rejection is ``PG-08004``, another
  connection failure without SQLSTATE ``PG-08006``.
- ``PROBE-<what>``: a **probe-side error** (class :attr:`~app.samples.ErrorClass.PROBE`):
  the measurement failed on connwatch's side, so the sample says nothing about the
  target. Any exception that is neither a driver's error (``oracledb.Error``,
  ``psycopg.Error``) nor an operating-system error is one: an ``IndexError`` from
  inside python-oracledb (its DRCP statement-cache defect, docs/probes.md), a bug of
  connwatch's own, a probe that cannot run as configured (``PROBE-CONFIG``). Coded
  ``PROBE-`` + the exception's class name. Availability, the overview, alerts, the
  weekly report and ``/metrics`` leave these out (see :class:`app.samples.ErrorClass`).
- ``OTHER``: a driver error that carries no code, coded by the exception's class name.

Messages are one line (newlines and tabs collapse to " | " and spaces), have every
known secret and any ``password=...`` / ``user/password@`` fragment replaced by
``***``, and are cut to :data:`MAX_MESSAGE` characters.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import ssl
from dataclasses import dataclass

import oracledb
import psycopg

from app.probes.base import ProbeConfigError
from app.samples import PROBE_CODE_PREFIX, ErrorClass

MAX_MESSAGE = 500

_SIMILAR_ORA = re.compile(r"\(Similar to ORA-(\d{5})\)")
_ORA_125 = re.compile(r"\bORA-(12[0-9]{3})\b")
_DPY = re.compile(r"\bDPY-(\d{4})\b")
_ERRNO = re.compile(r"\[Errno (-?\d+)\]")
_PW_KV = re.compile(r"(?i)(password|passwd|pwd)\s*=\s*('[^']*'|\"[^\"]*\"|[^\s;)]+)")
_USER_PW_AT = re.compile(r"(\b[\w$#.]+)/[^\s@/]+@")
# libpq gives no SQLSTATE for a server's FATAL during connection start-up, only the
# (English) text; these are the server messages and the SQLSTATEs they carry.
_PG_STARTUP_FATAL = (
    (re.compile(r"database \".*\" does not exist"), "3D000"),
    (re.compile(r"password authentication failed"), "28P01"),
    (re.compile(r"no password supplied"), "28P01"),  # libpq: the server asked, none was set
    (re.compile(r"role \".*\" does not exist|no pg_hba\.conf entry"), "28000"),
    (re.compile(r"too many clients|too many connections|no more connections"), "53300"),
    (re.compile(r"the database system is (starting up|shutting down|in recovery)"), "57P03"),
    (re.compile(r"terminating connection due to administrator command"), "57P01"),
)
_STRERROR = {os.strerror(n): name for n, name in errno.errorcode.items()}
# libpq messages carry strerror() text ("Connection refused"), not errno numbers.
_STRERROR_RE = re.compile(
    "|".join(re.escape(s) for s in sorted(_STRERROR, key=len, reverse=True) if len(s) > 8)
)


@dataclass(frozen=True, slots=True)
class ClassifiedError:
    error_class: ErrorClass
    code: str
    message: str


def probe_side(code: str, message: str) -> ClassifiedError:
    """A probe-side error (class PROBE, code ``PROBE-<code>``): not the target's failure."""
    return ClassifiedError(ErrorClass.PROBE, PROBE_CODE_PREFIX + code, message)


class ClassifiedException(Exception):
    """An exception that already knows its classification (e.g. a sweep's summary)."""

    def __init__(self, classified: ClassifiedError) -> None:
        super().__init__(classified.message)
        self.classified = classified


def sanitise(message: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """One line, no secrets, at most :data:`MAX_MESSAGE` characters."""
    text = message
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _PW_KV.sub(lambda m: f"{m.group(1)}=***", text)
    text = _USER_PW_AT.sub(lambda m: f"{m.group(1)}/***@", text)
    text = " | ".join(part.strip() for part in text.splitlines() if part.strip())
    text = re.sub(r"\s+", " ", text)
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 3] + "..."
    return text


# getaddrinfo's errors are negative numbers that errno does not name (socket.gaierror)
_EAI = {
    getattr(socket, n): n
    for n in ("EAI_NONAME", "EAI_AGAIN", "EAI_FAIL", "EAI_NODATA", "EAI_SERVICE", "EAI_FAMILY")
    if hasattr(socket, n)
}


def _errno_name(n: int) -> str:
    """``ECONNREFUSED``, ``EAI_NONAME`` (-2: the host name does not resolve), or the number."""
    return errno.errorcode.get(n) or _EAI.get(n) or str(n)


def _os_code(exc: BaseException | None) -> str | None:
    """NET-<ERRNO> for an OSError anywhere in the cause chain."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, TimeoutError) and exc.errno is None:
            return "NET-ETIMEDOUT"
        if isinstance(exc, OSError) and exc.errno is not None:
            return "NET-" + _errno_name(exc.errno)
        if isinstance(exc, OSError) and isinstance(exc, ConnectionError):
            return "NET-" + type(exc).__name__
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


# verify codes of OpenSSL (X509_V_ERR_*): expired / not yet valid
_CERT_TIME = {9, 10}
_TLS_DPY = {"DPY-6002": "TLS-DN-MISMATCH", "DPY-6006": "TLS-NAME-MISMATCH"}


def _tls_code(exc: BaseException, text: str) -> str | None:
    """The TLS- code of a failed handshake anywhere in the cause chain, else None."""
    for dpy, code in _TLS_DPY.items():
        if dpy in text:
            return code
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 10:
        if isinstance(cur, ssl.SSLCertVerificationError):
            return "TLS-EXPIRED" if cur.verify_code in _CERT_TIME else "TLS-UNTRUSTED"
        if isinstance(cur, ssl.SSLError):
            reason = f"{getattr(cur, 'reason', '') or ''} {cur}".upper()
            if "VERSION" in reason and "WRONG_VERSION_NUMBER" not in reason:
                return "TLS-VERSION"
            return "TLS-HANDSHAKE"
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def _classify_oracle(exc: oracledb.Error, text: str) -> tuple[ErrorClass, str]:
    err = exc.args[0] if exc.args else None
    full_code = getattr(err, "full_code", None) or ""
    tls = _tls_code(exc, text) if full_code.startswith("DPY-6") else None
    if tls is not None:
        return ErrorClass.TLS, tls
    if full_code.startswith("ORA-"):
        num = int(full_code[4:])
        if 12500 <= num < 12600:  # listener errors surfaced as ORA- by thick mode
            return ErrorClass.TNS, f"TNS-{num:05d}"
        return ErrorClass.ORA, full_code
    similar = _SIMILAR_ORA.search(text) or (
        _ORA_125.search(text) if full_code.startswith("DPY-6") else None
    )
    if similar:
        return ErrorClass.TNS, f"TNS-{int(similar.group(1)):05d}"
    os_code = _os_code(exc.__cause__)
    if os_code is None and full_code == "DPY-6005":
        m = _ERRNO.search(text)
        if m:
            os_code = "NET-" + _errno_name(int(m.group(1)))
    if os_code:
        return ErrorClass.NET, os_code
    if full_code == "DPY-6005":
        inner = [c for c in _DPY.findall(text) if c != "6005"]
        if inner:
            return ErrorClass.DPY, f"DPY-{inner[0]}"
    if full_code.startswith("DPY-"):
        return ErrorClass.DPY, full_code
    return ErrorClass.OTHER, full_code or type(exc).__name__


def _classify_pg(exc: psycopg.Error, text: str) -> tuple[ErrorClass, str]:
    if exc.sqlstate:
        return ErrorClass.PG, f"PG-{exc.sqlstate}"
    os_code = _os_code(exc.__cause__)
    if os_code:
        return ErrorClass.NET, os_code
    m = _STRERROR_RE.search(text)
    if m:
        return ErrorClass.NET, "NET-" + _STRERROR[m.group(0)]
    if "timeout expired" in text:
        return ErrorClass.NET, "NET-ETIMEDOUT"
    if "could not translate host name" in text:  # libpq's getaddrinfo failure
        return ErrorClass.NET, "NET-EAI_AGAIN" if "temporary" in text.lower() else "NET-EAI_NONAME"
    for pattern, state in _PG_STARTUP_FATAL:
        if pattern.search(text):
            return ErrorClass.PG, f"PG-{state}"
    if "FATAL" in text:  # the server rejected the connection, reason not recognised
        return ErrorClass.PG, "PG-08004"
    return ErrorClass.PG, "PG-08006"  # connection failure libpq reported without a SQLSTATE


def classify(
    exc: BaseException, secrets: list[str] | tuple[str, ...] = (), phase: str | None = None
) -> ClassifiedError:
    """Classify one exception raised by a probe (not the runner's own timeout); ``phase``
    is where it happened (a connection lost during the TLS handshake is TLS-HANDSHAKE)."""
    text = str(exc) or type(exc).__name__
    cls: ErrorClass
    if isinstance(exc, ClassifiedException):
        c = exc.classified
        return ClassifiedError(c.error_class, c.code, sanitise(c.message, secrets))
    if isinstance(exc, oracledb.Error):
        cls, code = _classify_oracle(exc, text)
    elif isinstance(exc, psycopg.Error):
        cls, code = _classify_pg(exc, text)
    elif isinstance(exc, ssl.SSLError):
        cls, code = ErrorClass.TLS, _tls_code(exc, text) or "TLS-HANDSHAKE"
    elif isinstance(exc, OSError):
        cls, code = ErrorClass.NET, _os_code(exc) or "NET-" + type(exc).__name__
    else:
        # Not the database's answer nor the network's: the driver's or connwatch's own
        # code failed (python-oracledb's IndexError from its statement cache, a bug, a
        # probe that cannot run as configured). Probe-side, never the target's failure.
        what = "CONFIG" if isinstance(exc, ProbeConfigError) else type(exc).__name__
        return probe_side(what, sanitise(text, secrets))
    if cls is ErrorClass.NET and phase == "logon:tls_handshake":
        cls, code = ErrorClass.TLS, "TLS-HANDSHAKE"  # e.g. a tcp listener closing on us
    return ClassifiedError(cls, code, sanitise(text, secrets))
