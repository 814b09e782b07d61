"""The agent: scheduler, writer, coordination, "test now", maintenance, in one object.

Two entry points, both used by the CLI:

- :func:`attach` starts an :class:`Agent` inside the FastAPI lifespan (``connwatch
  serve``) and stops it, flushing every sample, when the server shuts down;
- :func:`run_forever` runs one on its own event loop (``connwatch agent``) until
  SIGTERM or SIGINT, then flushes everything and returns.

An agent probes the enabled series of its site (``Settings.site``) that it holds
the lock for (:mod:`app.agent.coord`), writes samples through
:class:`~app.agent.output.writer.Writer` (spool in ``<data_dir>/spool`` while the store is
away), answers "test now" requests (:mod:`app.agent.requests`) and, if it holds the
maintenance lock, runs :func:`app.store.write.maintenance.maintain` every
``maintain_every_s``. See docs/agent.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import AsyncIterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy.engine import Engine

from app.agent import requests
from app.agent.coord import Coordinator, default_agent_name
from app.agent.heap import HeapSettler
from app.agent.options import AgentOptions
from app.agent.output.spool import Spool
from app.agent.output.wal import WriteAheadLog
from app.agent.output.writer import Writer
from app.agent.scheduling.limits import Limiter
from app.agent.scheduling.scheduler import SeriesScheduler
from app.agent.scheduling.specs import SeriesRow, build_spec
from app.agent.stats import AgentStats
from app.config import Settings
from app.credentials import Vault
from app.probes.spec import ProbeSpec
from app.store.write.maintenance import maintain

log = logging.getLogger(__name__)


class Agent:
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
        self.vault = Vault.from_settings(settings)
        self.stats = AgentStats()
        self.limiter = Limiter(
            self.opt.max_in_flight, self.opt.logons_per_s, self.opt.target_logons_per_s
        )
        self.spool = Spool(
            settings.data_dir / "spool",
            settings.spool_max_mb * 1024 * 1024,
            segment_bytes=self.opt.spool_segment_bytes,
            warn_share=self.opt.spool_warn_share,
        )
        self.writer = Writer(engine, self.spool, self.opt, wal=self._open_wal(settings))
        self.scheduler = SeriesScheduler(
            build=self.build_spec,
            submit=self.writer.submit,
            limiter=self.limiter,
            stats=self.stats,
            agent=self.name,
            site=self.site,
            max_grace_s=self.opt.max_grace_s,
        )
        self.coord = Coordinator(engine, self.name, self.site)
        self.heap = HeapSettler()
        self._coord_pool = ThreadPoolExecutor(1, thread_name_prefix="connwatch-coord")
        self._db_pool = ThreadPoolExecutor(2, thread_name_prefix="connwatch-db")
        self._tasks: list[asyncio.Task[None]] = []
        self._maint: Future[Any] | None = None
        self._last_maint = 0.0
        self._store_error: str | None = None
        self.started = False

    def _open_wal(self, settings: Settings) -> WriteAheadLog | None:
        if self.opt.wal == "off":
            return None
        return WriteAheadLog(settings.data_dir / "wal", fsync=self.opt.wal == "fsync")

    # -- building probes --------------------------------------------------------
    def build_spec(self, row: SeriesRow) -> ProbeSpec:
        return build_spec(row, self.vault, self.settings, agent=self.name, site=self.site)

    # -- lifecycle ------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # The writer and coordination threads hold the GIL in bursts (encoding a batch);
        # a shorter switch interval hands it back to the event loop sooner, which keeps
        # the probes' start lag low (Python's default is 5 ms).
        sys.setswitchinterval(min(sys.getswitchinterval(), self.opt.switch_interval_s))
        # thick-mode driver calls (asyncio.to_thread) run in this bounded pool
        loop.set_default_executor(
            ThreadPoolExecutor(self.opt.thick_threads, thread_name_prefix="connwatch-driver")
        )
        self._quiet_cancelled_reads(loop)
        self.heap.start()
        self.writer.start()
        self.scheduler.start()
        self._tasks = [
            loop.create_task(self._coordinate(), name="connwatch-coordinate"),
            loop.create_task(self._serve_requests(), name="connwatch-requests"),
        ]
        self.started = True
        log.info("agent %s started at site %s", self.name, self.site)

    def _quiet_cancelled_reads(self, loop: asyncio.AbstractEventLoop) -> None:
        """python-oracledb thin (26.1) raises InvalidStateError from ``data_received`` when
        a reply arrives for a read the runner's deadline already cancelled; asyncio then
        closes that connection (the probe reconnects next run) and logs a traceback per
        connection. Count those and log one line a minute instead of flooding the log."""
        previous = loop.get_exception_handler()
        state = {"n": 0, "last": 0.0}

        def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            exc = context.get("exception")
            if isinstance(exc, asyncio.InvalidStateError) and "data_received" in str(
                context.get("message", "")
            ):
                state["n"] += 1
                now = time.monotonic()
                if now - state["last"] >= 60:
                    log.warning(
                        "%d connection(s) closed after a late reply to a timed-out call "
                        "(python-oracledb thin); their series reconnect at the next run",
                        state["n"],
                    )
                    state["n"], state["last"] = 0, now
                return
            if previous is not None:
                previous(lp, context)
            else:
                lp.default_exception_handler(context)

        loop.set_exception_handler(handler)

    async def stop(self) -> None:
        """Stop probing, flush every sample (store or spool), give up the series."""
        if not self.started:
            return
        self.started = False
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await self.scheduler.stop(self.opt.stop_grace_s)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._db_pool, self.writer.stop)
        with contextlib.suppress(Exception):
            await loop.run_in_executor(self._coord_pool, self.coord.close, self.snapshot())
        if self._maint is not None:
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(self._maint)
        self._coord_pool.shutdown(wait=False)
        self._db_pool.shutdown(wait=False)
        self.heap.release()
        log.info(
            "agent %s stopped: %d samples written, %d spooled for later",
            self.name,
            self.writer.written,
            self.writer.backlog,
        )

    # -- self-monitoring --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The ``agents.stats`` document (keys documented in :mod:`app.agent.stats`)."""
        doc = self.stats.snapshot()
        w = self.writer
        doc.update(
            series=len(self.scheduler.jobs),
            in_flight=self.limiter.in_flight,
            spool_samples=self.spool.samples,
            spool_bytes=self.spool.bytes,
            spool_fill=round(self.spool.fill(), 4),
            memory_backlog=w.backlog - self.spool.samples,
            queued=w.queued,
            written=w.written,
            wal_pending=w.wal_pending,
            wal_recovered=w.recovered,
            dropped=w.dropped,
            rejected=w.rejected,
            store_ok=w.store_ok,
            store_error=None if w.store_ok else w.last_error,
            overload=self.scheduler.overload.snapshot(),
        )
        return doc

    # -- loops ------------------------------------------------------------------
    async def _coordinate(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0 = time.monotonic()
            try:
                res = await loop.run_in_executor(self._coord_pool, self.coord.tick, self.snapshot())
                if self._store_error is not None:
                    log.warning("store reachable again: coordination resumed")
                    self._store_error = None
                if res.leader:
                    self._maybe_maintain()
            except Exception as exc:
                reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
                msg = reason[0] if reason else type(exc).__name__
                if self._store_error is None:
                    log.warning(
                        "cannot coordinate through the store (%s): running the %d series "
                        "this agent had",
                        msg,
                        len(self.scheduler.jobs),
                    )
                self._store_error = msg
                res = None
            if res is not None and res.changed:
                try:
                    self.scheduler.sync(res.rows)
                except Exception:
                    log.exception("could not apply the new schedule")
            self.heap.observe(self.scheduler.kept_logons)
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


# --------------------------------------------------------------------------- entry points


def attach(app: FastAPI, engine: Engine, settings: Settings) -> None:
    """Run an agent for as long as the web app runs (``connwatch serve``).

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
    """Run an agent until SIGTERM/SIGINT, then flush everything and return."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    agent = Agent(engine, settings, options)
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
    asyncio.run(run_until_stopped(engine, settings))
