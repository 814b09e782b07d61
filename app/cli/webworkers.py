"""The web's worker processes, each with a listening socket of its own on the one port.

uvicorn's own ``--workers`` binds one socket in the parent and hands it to every worker:
all of them wait on one accept queue, and asyncio accepts every connection that is
pending when a process wakes, so a burst of connections (a browser's six, a proxy's
pool, ``wrk``) often landed on one process while the other idled: 32 connections split
32/0 or 31/1 in three runs of ``bench/bench_serve.py``, and the busy process became
the whole web. Here each worker binds its own socket with ``SO_REUSEPORT`` and the
kernel spreads new connections across the sockets by their addresses, as nginx's
``reuse_port`` and gunicorn's ``--reuse-port`` do. Linux only lets processes of the
same user join such a group.

The sockets are made with protocol ``IPPROTO_TCP``, as asyncio makes its own: accepted
connections inherit it, and asyncio turns on ``TCP_NODELAY`` only for sockets that
report it. uvicorn's ``bind_socket`` leaves it 0 (Kludex/uvicorn#3149), so with several
workers Nagle's algorithm stayed on and every keep-alive request after the first waited
~40 ms for the client's delayed ACK (44-48 ms for a 1.5 ms static file on one connection).

:class:`WebWorkers` starts the processes (spawned, each builds the app with
``app.cli.webapp:factory``) at ``CONNWATCH_WEB_NICE`` below the agent's CPU priority,
starts one again that exits on its own (after 1 s,
doubling up to 30 s while it keeps failing), and on SIGINT or SIGTERM stops them all:
uvicorn's graceful shutdown, then SIGKILL after :data:`STOP_S`.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import time
from multiprocessing.process import BaseProcess

from app.cli.errors import CliError

log = logging.getLogger(__name__)

STOP_S = 30.0
BACKOFF_S = (1.0, 30.0)


def tcp_listener(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` with protocol ``IPPROTO_TCP`` (see above)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


def serve_one(host: str, port: int) -> None:
    """A worker process: its own socket on the shared port, the app, until signalled."""
    import uvicorn

    from app.config import Settings

    # below the agent's priority: when web and probes want the same core, the probe's
    # timer wins (a probe started late is a wrong measurement; a page 5 ms later is not)
    os.nice(Settings().web_nice)
    sock = tcp_listener(host, port, reuse_port=True)
    config = uvicorn.Config("app.cli.webapp:factory", factory=True, host=host, port=port,
                            log_config=None, lifespan="on")  # fmt: skip
    uvicorn.Server(config).run(sockets=[sock])


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


class WebWorkers:
    """``n`` web worker processes on ``host:port``, kept running until a signal."""

    def __init__(self, host: str, port: int, n: int) -> None:
        self.host, self.port, self.n = host, port, n
        self.ctx = multiprocessing.get_context("spawn")
        self.procs: list[BaseProcess] = []

    def _start(self) -> BaseProcess:
        from app.agent.workers.supervisor import plain_main

        proc = self.ctx.Process(target=serve_one, args=(self.host, self.port),
                                name="connwatch-web", daemon=False)  # fmt: skip
        with plain_main():  # the child needs none of the CLI's main module
            proc.start()
        return proc

    def run(self) -> None:
        """Until SIGINT or SIGTERM (handled here even when the shell that started us made
        the process ignore SIGINT, as it does for a background job)."""
        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        self.procs = [self._start() for _ in range(self.n)]
        backoff = [BACKOFF_S[0]] * self.n
        due: list[float | None] = [None] * self.n
        try:
            while True:
                time.sleep(0.5)
                for i, proc in enumerate(self.procs):
                    if proc.is_alive():
                        continue
                    if due[i] is None:
                        log.error("web worker %s exited (code %s): starting it again in "
                                  "%.0f s", proc.pid, proc.exitcode, backoff[i])  # fmt: skip
                        due[i] = time.monotonic() + backoff[i]
                        backoff[i] = min(BACKOFF_S[1], backoff[i] * 2)
                    elif time.monotonic() >= due[i]:  # type: ignore[operator]
                        self.procs[i], due[i] = self._start(), None
        except (KeyboardInterrupt, SystemExit):
            self.stop()

    def stop(self) -> None:
        """SIGTERM to each worker (uvicorn's graceful shutdown), SIGKILL after STOP_S."""
        for proc in self.procs:
            if proc.is_alive() and proc.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                log.error("web worker %s did not stop within %.0f s: killed", proc.pid, STOP_S)
                proc.kill()
                proc.join(5)
