"""A listener that accepts TCP connections and never answers (a stalled listener)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def hanging_listener() -> Iterator[int]:
    """Run a plain asyncio server in its own thread; yields its port."""
    ready = threading.Event()
    state: dict[str, object] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()  # read until the client gives up; never answer
        finally:
            writer.close()

    async def serve() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        state["port"] = server.sockets[0].getsockname()[1]
        stop = asyncio.Event()
        state["stop"] = stop
        state["loop"] = asyncio.get_running_loop()
        ready.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield int(state["port"])  # type: ignore[call-overload]
    finally:
        loop = state["loop"]
        stop = state["stop"]
        loop.call_soon_threadsafe(stop.set)  # type: ignore[attr-defined]
        thread.join(10)
