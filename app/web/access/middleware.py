"""Checks every request passes before routing, and headers every response carries.

Before routing (plain ASGI, cheap, no store access):

- ``Host`` must be in the allow list (``CONNWATCH_ALLOWED_HOSTS``): a DNS-rebinding page
  that resolves its own name to 127.0.0.1 reaches nothing. 400 otherwise.
- A NUL byte in the path or query string is refused with 400 (PostgreSQL cannot store
  one, and it is never meant).
- A state change (POST, PUT, PATCH, DELETE) from a browser must come from this origin:
  ``Sec-Fetch-Site`` must be ``same-origin`` or ``none`` when sent, and ``Origin`` (when
  sent) must name this host. 403 otherwise. Requests without either (scripts, curl)
  pass here and still need a token or the anti-forgery token (app.web.access.guards).

On every response: the security headers of :data:`SECURITY_HEADERS` and the Content
Security Policy :data:`CSP` (docs/web.md says what it allows and why); HSTS when the
client used https; ``Cache-Control: no-store`` on anything not static; and the session
cookie when a guard created one (auth proxy logins).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders

from app.auth.network import resolve_client
from app.web.access.config import AccessConfig
from app.web.access.cookies import session_cookie_header

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

# Plotly draws with inline style attributes and injects one <style> element, so styles
# need 'unsafe-inline'; scripts never do (no inline script, no eval): only our files.
CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
}


class AccessMiddleware:
    def __init__(self, app: ASGIApp, config: AccessConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not self.config.host_allowed(host):
            await _refuse(
                send,
                400,
                f"Host {host[:100]!r} is not one this server answers to: add it to "
                "CONNWATCH_ALLOWED_HOSTS",
            )
            return
        raw_query: bytes = scope.get("query_string", b"")
        if "\x00" in scope.get("path", "") or b"%00" in raw_query or b"\x00" in raw_query:
            await _refuse(send, 400, "NUL bytes are not allowed in a URL")
            return
        peer = scope.get("client")
        client = resolve_client(
            peer[0] if peer else None,
            scope.get("scheme", "http"),
            headers.get("x-forwarded-for"),
            headers.get("x-forwarded-proto"),
            self.config.trusted_proxies,
        )
        state = scope.setdefault("state", {})
        state["client"] = client
        if scope["method"] in UNSAFE_METHODS:
            problem = _cross_origin(headers, host, client.via_trusted_proxy)
            if problem:
                await _refuse(send, 403, problem)
                return
        https = client.scheme == "https"
        static = scope.get("path", "").startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                h = MutableHeaders(scope=message)
                for k, v in SECURITY_HEADERS.items():
                    h.setdefault(k, v)
                if https:
                    h.setdefault("strict-transport-security", "max-age=31536000")
                if not static:
                    h.setdefault("cache-control", "no-store")
                token = state.get("set_session")
                if token:
                    h.append("set-cookie", session_cookie_header(token, https=https))
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _cross_origin(headers: Headers, host: str, behind_proxy: bool) -> str | None:
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"cross-site request refused (Sec-Fetch-Site: {site[:20]})"
    origin = headers.get("origin")
    if origin is None:
        return None
    expected = {host.lower()}
    if behind_proxy and headers.get("x-forwarded-host"):
        expected.add(headers["x-forwarded-host"].split(",")[0].strip().lower())
    netloc = urlsplit(origin).netloc.lower() if origin != "null" else ""
    if netloc not in expected:
        return f"cross-origin request refused (Origin {origin[:100]!r})"
    return None


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
