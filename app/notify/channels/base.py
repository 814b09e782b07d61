"""The channel interface: a message, where it goes, and the outcome of one attempt."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx2

from app.notify.outbox import Attachment, Claimed, Outcome
from app.notify.smtp import SmtpConfig

# HTTP statuses worth retrying; any other 4xx means the request itself is wrong.
RETRYABLE_HTTP = {408, 425, 429}
USER_AGENT = "connwatch-notify/1"


@dataclass(slots=True)
class Destination:
    """A contact point as a channel needs it: its settings and its secret, resolved."""

    name: str
    settings: dict[str, Any]
    secret: str | None = None


@dataclass(slots=True)
class SendContext:
    http: httpx2.Client
    smtp: SmtpConfig
    public_url: str
    attachments: Callable[[], list[Attachment]] = field(default=list)


class Channel(Protocol):
    name: str

    def send(self, msg: Claimed, dest: Destination, ctx: SendContext) -> Outcome: ...


def http_outcome(t0: int, response: httpx2.Response) -> Outcome:
    ms = int((time.perf_counter_ns() - t0) // 1_000_000)
    code = response.status_code
    if 200 <= code < 300:
        return Outcome(True, f"HTTP {code}", None, False, ms)
    body = " ".join(response.text.split())[:200]
    error = f"HTTP {code}" + (f": {body}" if body else "")
    permanent = 400 <= code < 500 and code not in RETRYABLE_HTTP
    return Outcome(False, f"HTTP {code}", error, permanent, ms)


def http_failure(t0: int, exc: Exception, where: str) -> Outcome:
    ms = int((time.perf_counter_ns() - t0) // 1_000_000)
    if isinstance(exc, httpx2.TimeoutException):
        reason = "no answer in time"
    elif isinstance(exc, httpx2.ConnectError):
        reason = f"cannot connect ({' '.join(str(exc).split())[:120] or 'refused'})"
    else:
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
    return Outcome(False, None, f"{where}: {reason}", False, ms)


def post_json(
    ctx: SendContext, url: str, body: bytes, headers: dict[str, str], where: str
) -> Outcome:
    t0 = time.perf_counter_ns()
    try:
        response = ctx.http.post(
            url,
            content=body,
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers},
        )
    except httpx2.HTTPError as exc:
        return http_failure(t0, exc, where)
    return http_outcome(t0, response)


def host_of(url: str) -> str:
    """The scheme and host of a URL, for messages (never the path: it may hold a token)."""
    try:
        u = httpx2.URL(url)
    except Exception:
        return "<bad URL>"
    return f"{u.scheme}://{u.host}" + (f":{u.port}" if u.port else "")
