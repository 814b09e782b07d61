"""``Server-Timing: app;dur=<ms>`` on every response: the app's own time to the response head.

A plain ASGI middleware: it adds the header to the ``http.response.start`` message as it
passes. (It was a ``BaseHTTPMiddleware`` function, which runs every request through a
task group and a memory stream; under load that machinery cost more than some pages.)
The time covers routing, dependencies, the route and everything inside this middleware,
from the request's arrival here to the response head; a streamed body's later chunks
are not in it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ServerTiming:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter_ns()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                took = (time.perf_counter_ns() - t0) / 1e6
                headers = list(message.get("headers", ()))
                headers.append((b"server-timing", f"app;dur={took:.2f}".encode("latin-1")))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, timed)
