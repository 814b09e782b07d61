"""Requests no route can serve are refused before any route runs (a 4xx, never a 500).

PostgreSQL's text and jsonb cannot hold a NUL character, and a NUL in a path, a query
parameter or a form field used to reach the store and come back as a 500 with a
traceback. :class:`InputGuard` is an ASGI middleware that answers, before routing:

- **400** when the path, the query string (after percent-decoding), or an
  ``application/x-www-form-urlencoded`` or JSON body contains a NUL (``%00``, a raw
  0 byte, or JSON's ``\\u0000``), or when the query string is not UTF-8;
- **413** when a body is larger than :data:`MAX_BODY_BYTES` (declared or streamed).

Bodies of other types (none of the app's routes takes one) pass through unread.
The body it buffers is handed on unchanged, so routes read it as before.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
ErrorRenderer = Callable[[Request, int, str], Response]

MAX_BODY_BYTES = 1_048_576  # the largest form (64 KB) and JSON write are far below
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000", re.I)
_FORM = "application/x-www-form-urlencoded"


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _plain(request: Request, status: int, message: str) -> Response:
    return JSONResponse({"detail": message}, status_code=status)


def _check_target(scope: Scope) -> None:
    if "\x00" in scope.get("path", ""):
        raise _Refused(400, "the path contains a NUL character")
    query: bytes = scope.get("query_string", b"")
    decoded = unquote_to_bytes(query.replace(b"+", b" "))
    if b"\x00" in decoded:
        raise _Refused(400, "a query parameter contains a NUL character")
    try:
        decoded.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused(400, "the query string is not UTF-8") from None


def _check_body(ctype: str, body: bytes) -> None:
    if ctype.startswith(_FORM):
        if b"\x00" in body or b"\x00" in unquote_to_bytes(body.replace(b"+", b" ")):
            raise _Refused(400, "a form field contains a NUL character")
    elif "json" in ctype and (b"\x00" in body or _JSON_NUL.search(body)):
        raise _Refused(400, "the JSON body contains a NUL character")


class InputGuard:
    """ASGI middleware; ``render(request, status, message)`` builds the error response."""

    def __init__(self, app: ASGIApp, render: ErrorRenderer | None = None) -> None:
        self.app = app
        self.render = render or _plain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            _check_target(scope)
            headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
            ctype = headers.get("content-type", b"").decode("latin-1").lower()
            declared = headers.get("content-length", b"")
            if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                raise _Refused(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
            if not (ctype.startswith(_FORM) or "json" in ctype):
                await self.app(scope, receive, send)
                return
            body = await _read_body(receive)
            _check_body(ctype, body)
        except _Refused as exc:
            response = self.render(Request(scope), exc.status, exc.message)
            await response(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _Refused(400, "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _Refused(413, f"the request body is larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then http.disconnect, as the server sends it

    return replay
