"""``connwatch serve`` and ``connwatch web``: web worker processes, and the agent in its own.

The web and the agent used to share one process and one event loop, so a busy dashboard
moved the probes' start lag (issue 16: 3 ms -> 20 ms at ~99 requests/s). Now:

- ``web`` and ``serve`` run ``--workers N`` web processes (``CONNWATCH_WEB_WORKERS``;
  default one per CPU core), each with its own listening socket on the port
  (:mod:`app.cli.webworkers`: ``SO_REUSEPORT``, so the kernel spreads connections
  evenly); each builds the app with :func:`factory` (its own store connections). Every
  request's state is in PostgreSQL or in the request, so any process may answer any
  request (docs/scaling.md). With one worker the app runs in this process.
- ``serve`` also starts the agent as a process of its own (``python -m app.cli.main
  agent``, with the store URL this process resolved, so the embedded PostgreSQL is
  shared), restarts it if it dies (a non-zero exit), and stops it with SIGTERM (it
  flushes every sample) after the web has stopped. A Ctrl-C in a terminal reaches every
  process of the group: the web workers stop, the agent flushes and exits 0 (not
  restarted), and ``serve`` waits for it before it returns.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

import typer

from app import __version__
from app.config import Settings

if TYPE_CHECKING:
    from fastapi import FastAPI
    from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)

AGENT_STOP_S = 60.0  # runs in flight, the last batch, the spool's replay
RESTART_S = (1.0, 30.0)


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def build_app(settings: Settings, engine: Engine) -> FastAPI:
    """The web app with the services every web process runs (they elect one leader each
    through the store: reports and alerts)."""
    from app.web.app import create_app

    app = create_app(engine, settings=settings)
    if settings.reports_enabled:
        from app.reports.delivery import runner

        runner.attach(app, engine, settings)
    if settings.alerts_enabled:  # every process competes; one evaluates (app/alerts/lease.py)
        from app.alerts import service as alerts

        alerts.attach(app, engine, settings)
    return app


def factory() -> FastAPI:
    """A web worker process's app (uvicorn ``factory=True``): settings from the
    environment, where :func:`run_web` put the store URL it resolved."""
    from app.db import database_url, make_engine
    from app.logs import setup_logging

    settings = Settings()
    setup_logging(settings.log_level, settings.log_format)
    return build_app(settings, make_engine(database_url(settings)))


class AgentProcess:
    """``connwatch agent`` as a child of ``serve``: started, restarted, stopped."""

    def __init__(self, url: str) -> None:
        self.env = {**os.environ, "CONNWATCH_DATABASE_URL": url}
        self.proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._watch: threading.Thread | None = None

    def start(self) -> None:
        self._spawn()
        self._watch = threading.Thread(target=self._supervise, name="agent-watch", daemon=True)
        self._watch.start()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "agent"], env=self.env, start_new_session=False
        )

    def _supervise(self) -> None:
        backoff = RESTART_S[0]
        while not self._stopping.is_set():
            proc = self.proc
            if proc is None:
                return
            code = proc.wait()
            if self._stopping.is_set():
                return
            if code == 0:  # it was asked to stop (a Ctrl-C reaches the whole process group)
                log.info("the agent process stopped")
                return
            log.error("the agent process exited (code %s): starting it again in %.0f s", code,
                      backoff)  # fmt: skip
            if self._stopping.wait(backoff):
                return
            backoff = min(RESTART_S[1], backoff * 2)
            self._spawn()

    def stop(self) -> None:
        """SIGTERM, then wait for it to flush its samples (SIGKILL after AGENT_STOP_S)."""
        self._stopping.set()
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(AGENT_STOP_S)
        except subprocess.TimeoutExpired:
            log.error("the agent did not stop within %.0f s: killed", AGENT_STOP_S)
            proc.kill()
            proc.wait(10)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def run_web(
    settings: Settings,
    engine: Engine,
    host: str,
    port: int,
    *,
    with_agent: bool,
    workers: int,
) -> None:
    """Serve until SIGTERM/SIGINT (the caller checked the port and opened the store)."""
    import uvicorn

    url = engine.url.render_as_string(hide_password=False)
    agent = AgentProcess(url) if with_agent else None
    typer.echo(
        f"connwatch {__version__}: dashboard at http://{host}:{port}/ ({workers} web "
        f"process{'es' if workers > 1 else ''}{', agent in its own process' if agent else ''})"
    )
    # uvicorn shuts down gracefully on SIGTERM and then re-raises it; make that re-raise
    # an orderly exit so context managers and atexit hooks (embedded PostgreSQL,
    # simulators, pgbouncer) stop what they started.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if agent is not None:
        agent.start()
    try:
        if workers == 1 and agent is None:  # beside an agent the web is a process of its
            # own, below the agent's CPU priority (app/cli/webworkers.py)
            uvicorn.run(build_app(settings, engine), host=host, port=port, log_config=None,
                        lifespan="on")  # fmt: skip
        else:
            from app.cli.webworkers import WebWorkers

            os.environ["CONNWATCH_DATABASE_URL"] = url  # the workers' factory reads it
            # and the access mode the caller chose (the demo's anonymous viewer)
            os.environ["CONNWATCH_ANONYMOUS_ROLE"] = settings.anonymous_role
            WebWorkers(host, port, workers).run()
    finally:
        if agent is not None:
            agent.stop()
