"""The agent: its once-per-agent duties, and its probing workers in this process or in N.

Entry points, used by the CLI and the tests:

- :func:`run_forever` (``connwatch agent``): with ``CONNWATCH_AGENT_WORKERS`` = 1 an
  :class:`Agent` in this process; with more (default: one per CPU core) an
  :class:`~app.agent.workers.supervisor.AgentHost` that runs them as worker processes;
  until SIGTERM or SIGINT, then every sample is flushed;
- :class:`Agent` (``await agent.start()`` ... ``await agent.stop()``): one worker on the
  caller's event loop, plus the duties;
- :func:`attach` starts an :class:`Agent` inside a FastAPI lifespan (embedding; ``serve``
  runs the agent in a process of its own instead, see ``app/cli/main.py``).

:class:`Duties` is what an agent does once, whatever its number of workers: its
``agents`` row and heartbeat (:class:`~app.agent.coordination.registry.Registry`, the
stats of all its workers in one document), the store maintenance every
``maintain_every_s`` while it holds the maintenance lock, and "test now" requests
(:mod:`app.agent.requests`). See docs/agent.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from app.agent import requests
from app.agent.coordination.registry import Registry, default_agent_name
from app.agent.options import AgentOptions
from app.agent.scheduling.specs import SeriesRow
from app.agent.stats import combine
from app.agent.workers.unit import ProbeWorker, drain_leftovers
from app.config import Settings
from app.drivers import eventloop
from app.secrets import Vault
from app.store.write.maintenance import maintain

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)


def worker_count(settings: Settings) -> int:
    """``CONNWATCH_AGENT_WORKERS``, 0 meaning one per CPU core this process may use."""
    if settings.agent_workers:
        return settings.agent_workers
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Duties:
    """The agent's row and heartbeat, store maintenance, and "test now" requests."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        options: AgentOptions,
        name: str,
        stats: Callable[[], dict[str, Any]],
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.opt = options
        self.name = name
        self.site = settings.site
        self.stats = stats
        self.vault = Vault.from_settings(settings)
        self.registry = Registry(engine, name, self.site)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="connwatch-registry")
        self._db_pool = ThreadPoolExecutor(2, thread_name_prefix="connwatch-db")
        self._tasks: list[asyncio.Task[None]] = []
        self._maint: Future[Any] | None = None
        self._last_maint = 0.0
        self._store_error: str | None = None

    async def register(self) -> int:
        """The agent's id (registers its row and takes its presence lock)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self.registry.register)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._beat(), name="connwatch-heartbeat"),
            loop.create_task(self._serve_requests(), name="connwatch-requests"),
        ]

    async def stop(self, final_stats: dict[str, Any]) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            await loop.run_in_executor(self._pool, self.registry.close, final_stats)
        if self._maint is not None:
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(self._maint)
        self._pool.shutdown(wait=False)
        self._db_pool.shutdown(wait=False)

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0 = time.monotonic()
            try:
                beat = await loop.run_in_executor(self._pool, self.registry.heartbeat, self.stats())
                if self._store_error is not None:
                    log.warning("store reachable again: heartbeat resumed")
                    self._store_error = None
                if beat.leader:
                    self._maybe_maintain()
            except Exception as exc:
                reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
                if self._store_error is None:
                    log.warning(
                        "cannot write the heartbeat (%s): probing goes on, samples are spooled",
                        reason[0] if reason else type(exc).__name__,
                    )
                self._store_error = reason[0] if reason else type(exc).__name__
            await asyncio.sleep(max(0.05, self.opt.poll_s - (time.monotonic() - t0)))

    def _maybe_maintain(self) -> None:
        if self._maint is not None and not self._maint.done():
            return
        now = time.monotonic()
        if now - self._last_maint < self.opt.maintain_every_s:
            return
        self._last_maint = now

        def run() -> None:
            try:
                maintain(self.engine, self.settings)
            except Exception as exc:
                log.warning("store maintenance failed: %s", str(exc).splitlines()[0])

        self._maint = self._db_pool.submit(run)

    async def _serve_requests(self) -> None:
        loop = asyncio.get_running_loop()
        last_expire = 0.0
        while True:
            try:
                claimed = await loop.run_in_executor(self._db_pool, self._claim)
                if time.monotonic() - last_expire > 60:
                    last_expire = time.monotonic()
                    await loop.run_in_executor(self._db_pool, self._expire)
                if claimed:
                    await asyncio.gather(*(self._answer(r) for r in claimed))
                    continue
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug("probe requests: store unreachable", exc_info=True)
            await asyncio.sleep(self.opt.requests_poll_s)

    def _claim(self) -> list[tuple[requests.ProbeRequest, SeriesRow | None, str | None]]:
        out: list[tuple[requests.ProbeRequest, SeriesRow | None, str | None]] = []
        with self.engine.begin() as conn:
            for req in requests.claim(conn, self.name, self.site):
                try:
                    out.append((req, requests.load_row(conn, req), None))
                except Exception as exc:
                    out.append((req, None, str(exc)))
        return out

    def _expire(self) -> None:
        with self.engine.begin() as conn:
            requests.expire_stale(conn)

    async def _answer(
        self, item: tuple[requests.ProbeRequest, SeriesRow | None, str | None]
    ) -> None:
        req, row, error = item
        if row is None:
            status, result = "error", {"error": error or "unknown mode"}
        else:
            status, result = await requests.run_request(
                req, row, self.vault, self.settings, agent=self.name, site=self.site
            )
        result["agent"], result["site"] = self.name, self.site

        def store() -> None:
            with self.engine.begin() as conn:
                requests.finish(conn, req.id, status, result)

        await asyncio.get_running_loop().run_in_executor(self._db_pool, store)


class Agent:
    """An agent probing on the caller's event loop: the duties plus one worker."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        options: AgentOptions | None = None,
        *,
        name: str | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        # explicit options (tests, benchmarks) win over the CONNWATCH_AGENT_* settings
        self.opt = options or AgentOptions.from_settings(settings)
        self.name = name or settings.agent_name or default_agent_name()
        self.site = settings.site
        self.worker = ProbeWorker(engine, settings, self.opt, name=self.name)
        self.duties = Duties(engine, settings, self.opt, self.name, self.snapshot)
        self.started = False

    # the worker's parts, as tests and benchmarks reach for them
    @property
    def stats(self) -> Any:
        return self.worker.stats

    @property
    def writer(self) -> Any:
        return self.worker.writer

    @property
    def scheduler(self) -> Any:
        return self.worker.scheduler

    @property
    def limiter(self) -> Any:
        return self.worker.limiter

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, drain_leftovers, self.engine, self.settings, self.opt, 1)
        try:
            agent_id = await self.duties.register()
        except Exception as exc:
            agent_id = None
            log.warning("store unreachable at start (%s): retrying", str(exc).splitlines()[0])
        while agent_id is None:
            await asyncio.sleep(self.opt.retry_s)
            with contextlib.suppress(Exception):
                agent_id = await self.duties.register()
        await self.worker.start(agent_id)
        self.worker.begin()
        self.duties.start()
        self.started = True
        log.info("agent %s started at site %s", self.name, self.site)

    async def stop(self) -> None:
        """Stop probing, flush every sample (store or spool), give up the series."""
        if not self.started:
            return
        self.started = False
        await self.worker.stop()
        await self.duties.stop(self.snapshot())
        log.info(
            "agent %s stopped: %d samples written, %d spooled for later",
            self.name,
            self.writer.written,
            self.writer.backlog,
        )

    def snapshot(self) -> dict[str, Any]:
        """The ``agents.stats`` document (keys documented in :mod:`app.agent.stats`)."""
        doc = combine([{**self.worker.snapshot(), "alive": True}])
        doc["workers_configured"] = 1
        return doc


# --------------------------------------------------------------------------- entry points


def attach(app: FastAPI, engine: Engine, settings: Settings) -> None:
    """Run an agent for as long as the web app runs, in its process (embedding).

    The agent starts after the app's own lifespan start-up and stops (flushing every
    sample) before its shutdown; it is reachable as ``app.state.agent``.
    """
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        async with inner(a) as state:
            agent = Agent(engine, settings)
            a.state.agent = agent
            await agent.start()
            try:
                yield state
            finally:
                await agent.stop()

    app.router.lifespan_context = lifespan


async def run_until_stopped(
    engine: Engine, settings: Settings, options: AgentOptions | None = None
) -> None:
    """Run the agent until SIGTERM/SIGINT, then flush everything and return."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    workers = worker_count(settings)
    agent: Any
    if workers == 1:
        agent = Agent(engine, settings, options)
    else:
        from app.agent.workers.supervisor import AgentHost

        agent = AgentHost(engine, settings, options, workers=workers)
    await agent.start()
    try:
        await stop.wait()
        log.info("agent %s: signal received, flushing samples", agent.name)
    finally:
        await agent.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def run_forever(engine: Engine, settings: Settings) -> None:
    """``connwatch agent``: probe until SIGTERM/SIGINT; every sample is flushed on exit."""
    # python-oracledb's asyncio listener-REDIRECT race: app/drivers/eventloop.py
    eventloop.run(run_until_stopped(engine, settings))
