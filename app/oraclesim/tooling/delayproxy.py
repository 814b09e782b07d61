"""A userspace TCP proxy that delays every chunk by a fixed one-way time, both ways.

``tc netem`` is not available on these machines, so the probe-accuracy benchmark
puts this proxy between the probe and the simulator: each chunk read from one
side is held for ``delay_s`` and then written to the other side, in order. A
round trip through the proxy therefore costs ``2 * delay_s`` plus the proxy's own
forwarding cost, which the benchmark calibrates at ``delay_s = 0`` in the same run.

Precision: asyncio timers wake up late by up to a millisecond (the selector's
timeout is rounded up to whole milliseconds), which would blur a 1 ms round
trip. So a chunk waits with ``asyncio.sleep`` until ``SPIN_S`` before it is due,
then with a blocking ``time.sleep`` until ``SPIN_TAIL_S`` before, then spins. The
blocking wait stalls the proxy's own event loop for at most ``SPIN_S``; run the
proxy on its own thread (:class:`DelayProxyThread`) or process
(:class:`DelayProxyProcess`) so the probe's loop is never blocked. Every chunk's
lateness (send time minus due time) is kept; :meth:`DelayProxy.lateness`
summarises it, and the child process prints it when it stops. On a loaded
machine the scheduler, not the proxy, dominates that figure.

Limits: the TCP handshake is answered by the kernel and is not delayed (a real
network spends one round trip there); a REDIRECT (shared-server dispatcher)
sends the client to the dispatcher's own address, around the proxy.

API::

    async with DelayProxy("127.0.0.1", upstream_port, delay_s=0.0025) as proxy:
        ... connect to proxy.host:proxy.port ...

    with DelayProxyThread("127.0.0.1", upstream_port, delay_s=0.001) as proxy:
        proxy.set_delay(0.005)   # takes effect for chunks read from now on
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Coroutine
from types import TracebackType
from typing import Any

from app.oraclesim.tooling.child import start_child

SPIN_S = 0.004
SPIN_TAIL_S = 0.0001
CHUNK = 65536


class DelayProxy:
    """The proxy itself; runs in whatever event loop starts it."""

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        delay_s: float = 0.0,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
    ) -> None:
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        self.upstream = (upstream_host, upstream_port)
        self.delay_s = delay_s
        self.host = listen_host
        self.port = listen_port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = 0
        # how late each chunk left, relative to its due time (the proxy's own error)
        self.late_ns: deque[int] = deque(maxlen=100_000)

    def lateness(self) -> dict[str, float | int]:
        """How late chunks were sent after their due time (microseconds)."""
        late = sorted(self.late_ns)
        if not late:
            return {"chunks": 0}
        return {
            "chunks": len(late),
            "late_us_p50": late[len(late) // 2] / 1e3,
            "late_us_p90": late[int(len(late) * 0.9)] / 1e3,
            "late_us_max": late[-1] / 1e3,
        }

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def __aenter__(self) -> DelayProxy:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _handle(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            u_reader, u_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            c_writer.close()
            return
        up = self._spawn(self._pipe(c_reader, u_writer))
        down = self._spawn(self._pipe(u_reader, c_writer))
        try:
            await asyncio.gather(up, down)
        except asyncio.CancelledError:  # proxy stopping: end quietly
            up.cancel()
            down.cancel()
        finally:
            for w in (c_writer, u_writer):
                w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read chunks as they come; a second task writes each one when it is due."""
        queue: deque[tuple[float, bytes]] = deque()
        ready = asyncio.Event()
        done = False

        async def send() -> None:
            while True:
                while not queue:
                    if done:
                        return
                    ready.clear()
                    await ready.wait()
                due, data = queue.popleft()
                wait = due - time.perf_counter()
                if wait > SPIN_S:
                    await asyncio.sleep(wait - SPIN_S)
                    wait = due - time.perf_counter()
                if wait > SPIN_TAIL_S:
                    time.sleep(wait - SPIN_TAIL_S)  # the last stretch (see module docs)
                while time.perf_counter() < due:  # the last ~100 us: spin
                    pass
                self.late_ns.append(int((time.perf_counter() - due) * 1e9))
                writer.write(data)
                await writer.drain()

        sender = self._spawn(send())
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                queue.append((time.perf_counter() + self.delay_s, data))
                ready.set()
        except (ConnectionError, OSError):
            pass
        finally:
            done = True
            ready.set()
        with contextlib.suppress(ConnectionError, OSError):
            await sender
            if writer.can_write_eof():
                writer.write_eof()


class DelayProxyThread:
    """A :class:`DelayProxy` on its own thread and event loop (context manager)."""

    def __init__(self, upstream_host: str, upstream_port: int, delay_s: float = 0.0) -> None:
        self.proxy = DelayProxy(upstream_host, upstream_port, delay_s)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="delayproxy", daemon=True)

    @property
    def host(self) -> str:
        return self.proxy.host

    @property
    def port(self) -> int:
        return self.proxy.port

    def set_delay(self, delay_s: float) -> None:
        if delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {delay_s}")
        self.proxy.delay_s = delay_s

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            await self.proxy.start()
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.proxy.stop()

    def start(self) -> DelayProxyThread:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def __enter__(self) -> DelayProxyThread:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class DelayProxyProcess:
    """``python -m app.oraclesim.tooling.delayproxy`` in a child process (no GIL shared with
    the measuring process). ``port`` is where to connect."""

    def __init__(self, upstream_host: str, upstream_port: int, delay_s: float = 0.0) -> None:
        self.args = [f"{upstream_host}:{upstream_port}", f"{delay_s * 1000:.6f}"]
        self.proc: subprocess.Popen[str] | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.stats: dict[str, float | int] = {}

    def start(self) -> DelayProxyProcess:
        args = ["--upstream", self.args[0], "--delay-ms", self.args[1]]
        self.proc, info = start_child("app.oraclesim.tooling.delayproxy", args, "delay proxy")
        self.port = int(info["port"])
        return self

    def stop(self) -> None:
        """Stop the child; ``stats`` then holds its lateness figures."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                out, _ = self.proc.communicate(timeout=10)
                for line in out.splitlines():
                    if line.startswith("{"):
                        self.stats = json.loads(line)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def __enter__(self) -> DelayProxyProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m app.oraclesim.tooling.delayproxy --upstream HOST:PORT --delay-ms MS [--port N]``:
    prints ``{"port": N}`` once listening, runs until SIGTERM / Ctrl-C."""
    parser = argparse.ArgumentParser(prog="delayproxy", description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay per chunk")
    parser.add_argument("--port", type=int, default=0, help="listen port (0: a free one)")
    ns = parser.parse_args(argv)
    host, sep, port_text = ns.upstream.rpartition(":")
    if not sep or not port_text.isdigit():
        parser.error(f"--upstream must be HOST:PORT, got {ns.upstream!r}")
    if ns.delay_ms < 0:
        parser.error("--delay-ms must be >= 0")

    async def serve() -> None:
        proxy = DelayProxy(host, int(port_text), ns.delay_ms / 1000, listen_port=ns.port)
        await proxy.start()
        print(json.dumps({"port": proxy.port, "delay_ms": ns.delay_ms}), flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await proxy.stop()
            print(json.dumps(proxy.lateness()), flush=True)

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
