"""The one SMTP configuration (``CONNWATCH_SMTP_*``) and sending one e-mail with it.

Alert e-mails and the scheduled reports both go through here: implicit TLS (``tls``,
port 465), ``starttls`` (refused if the server does not offer it: connwatch never falls
back to plain text when TLS was asked for) or ``none``; AUTH when a username is set.
The password comes from ``CONNWATCH_SMTP_PASSWORD`` or ``CONNWATCH_SMTP_PASSWORD_FILE``
and never appears in messages or logs.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path

from app.config import Settings
from app.notify.outbox import Attachment, Outcome


@dataclass(frozen=True, slots=True)
class SmtpConfig:
    host: str | None
    port: int = 587
    security: str = "starttls"  # starttls | tls | none
    username: str | None = None
    password: str | None = None
    password_file: Path | None = None
    sender: str = "connwatch@localhost"
    ca_file: Path | None = None
    timeout_s: float = 30.0

    @classmethod
    def from_settings(cls, s: Settings) -> SmtpConfig:
        return cls(
            host=s.smtp_host,
            port=s.smtp_port,
            security=s.smtp_security,
            username=s.smtp_username,
            password=s.smtp_password.get_secret_value() if s.smtp_password else None,
            password_file=s.smtp_password_file,
            sender=s.smtp_from,
            ca_file=s.smtp_ca_file,
            timeout_s=s.smtp_timeout_s,
        )

    def describe(self) -> str:
        """Where mail goes, for pages and logs (no password)."""
        if not self.host:
            return "not configured (set CONNWATCH_SMTP_HOST)"
        auth = f", as {self.username}" if self.username else ""
        return f"{self.host}:{self.port} ({self.security}{auth}), from {self.sender}"

    def resolve_password(self) -> str | None:
        if self.password is not None:
            return self.password
        if self.password_file is not None:
            try:
                return self.password_file.read_text().rstrip("\r\n")
            except OSError as exc:
                raise SmtpConfigError(
                    f"CONNWATCH_SMTP_PASSWORD_FILE {self.password_file}: {exc.strerror}"
                ) from None
        return None

    def tls_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context()
        if self.ca_file is not None:
            try:
                ctx.load_verify_locations(cafile=str(self.ca_file))
            except (OSError, ssl.SSLError) as exc:
                raise SmtpConfigError(f"CONNWATCH_SMTP_CA_FILE {self.ca_file}: {exc}") from None
        return ctx


class SmtpConfigError(ValueError):
    """The SMTP configuration cannot be used (names the setting, never the password)."""


def build_message(
    cfg: SmtpConfig,
    *,
    to: Sequence[str],
    subject: str,
    text_body: str,
    html_body: str | None = None,
    attachments: Sequence[Attachment] = (),
    message_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> EmailMessage:
    """A MIME message: text (and HTML alternative), attachments, a stable Message-ID."""
    msg = EmailMessage()
    msg["From"] = cfg.sender
    msg["To"] = ", ".join(to)
    msg["Subject"] = " ".join(subject.split())  # no header injection through line breaks
    msg["Date"] = format_datetime(datetime.now(UTC))
    domain = cfg.sender.rpartition("@")[2] or "connwatch"
    msg["Message-ID"] = f"<{message_id}@{domain}>" if message_id else make_msgid(domain=domain)
    for name, value in (headers or {}).items():
        msg[name] = " ".join(value.split())
    msg.set_content(text_body)
    if html_body is not None:
        msg.add_alternative(html_body, subtype="html")
    for att in attachments:
        maintype, _, subtype = att.content_type.partition("/")
        msg.add_attachment(
            att.data,
            maintype=maintype or "application",
            subtype=subtype or "octet-stream",
            filename=att.filename,
        )
    return msg


def send(cfg: SmtpConfig, msg: EmailMessage) -> Outcome:
    """Deliver ``msg`` to the configured server; the outcome says what the server replied."""
    t0 = time.perf_counter_ns()

    def done(ok: bool, detail: str | None, error: str | None, permanent: bool = False) -> Outcome:
        ms = (time.perf_counter_ns() - t0) // 1_000_000
        return Outcome(ok, detail, error, permanent, int(ms))

    if not cfg.host:
        return done(False, None, "SMTP is not configured (set CONNWATCH_SMTP_HOST)")
    try:
        password = cfg.resolve_password()
        ctx = cfg.tls_context() if cfg.security != "none" else None
    except SmtpConfigError as exc:
        return done(False, None, str(exc))
    where = f"{cfg.host}:{cfg.port}"
    try:
        client: smtplib.SMTP
        if cfg.security == "tls":
            client = smtplib.SMTP_SSL(cfg.host, cfg.port, timeout=cfg.timeout_s, context=ctx)
        else:
            client = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout_s)
        with client:
            client.ehlo()
            if cfg.security == "starttls":
                if not client.has_extn("starttls"):
                    return done(False, None, f"{where} does not offer STARTTLS", permanent=False)
                client.starttls(context=ctx)
                client.ehlo()
            if cfg.username:
                client.login(cfg.username, password or "")
            refused = client.send_message(msg)
            reply = client.noop()
        if refused:
            bad = ", ".join(f"{a} ({c})" for a, (c, _) in refused.items())
            return done(True, f"accepted except {bad}", None)
        return done(True, f"{where} accepted ({reply[0]})", None)
    except smtplib.SMTPAuthenticationError as exc:
        return done(False, None, f"{where} refused the login: {exc.smtp_code}", permanent=True)
    except smtplib.SMTPRecipientsRefused as exc:
        codes = ", ".join(f"{a} ({c})" for a, (c, _) in exc.recipients.items())
        return done(False, None, f"{where} refused every recipient: {codes}", permanent=True)
    except smtplib.SMTPResponseException as exc:
        text = exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else ""
        line = " ".join(text.split())[:200]
        return done(False, None, f"{where} said {exc.smtp_code} {line}", exc.smtp_code >= 500)
    except ssl.SSLError as exc:
        return done(False, None, f"{where}: TLS failed: {exc.reason or exc}")
    except (OSError, smtplib.SMTPException) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, socket.timeout):
            reason = f"no answer within {cfg.timeout_s:g} s"
        return done(False, None, f"{where}: {reason or type(exc).__name__}")
