"""The alert service every ``serve``, ``web`` and ``agent`` process runs: it competes for
the evaluator lease; the holder evaluates every ``alerts_eval_interval_s``, delivers the
outbox, and prunes old history; the others only try the lease again each cycle.

:func:`attach` runs it for the lifetime of a FastAPI app; :class:`AlertService` itself
(``start()`` / ``stop()``) is used by ``connwatch agent`` and ``connwatch alerts run``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.alerts.engine.cycle import CycleReport, Evaluator
from app.alerts.lease import Lease, LeaseLost
from app.config import Settings
from app.notify.deliver import Deliverer, public_url
from app.notify.outbox import prune

log = logging.getLogger(__name__)
PRUNE_EVERY_S = 3600.0


class AlertService:
    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.lease = Lease(engine, settings.alerts_lease_s)
        self.evaluator = Evaluator(engine, lease=self.lease, base_url=public_url(settings))
        self.deliverer = Deliverer(engine, settings, name=self.lease.holder)
        self._stop = threading.Event()
        self._deliver_stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._last_prune = 0.0
        self.last_report: CycleReport | None = None
        self.leader = False

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        t = threading.Thread(target=self._run, name="connwatch-alerts", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        self._deliver_stop.set()
        for t in self._threads:
            t.join(timeout=5)  # daemon threads: a stuck store call must not hold the exit
        if self.leader:
            try:
                self.lease.release()
            except Exception:
                log.debug("alerts: could not release the lease", exc_info=True)
        self.deliverer.close()

    # -- the loop ---------------------------------------------------------------------------
    def _run(self) -> None:
        interval = self.settings.alerts_eval_interval_s
        failing = False
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                self._tick()
                if failing:
                    log.warning("alerts: store reachable again")
                failing = False
            except LeaseLost as exc:
                log.warning("alerts: %s; another process evaluates now", exc)
                self._demote()
            except Exception as exc:
                if not failing:
                    log.warning("alerts: evaluation skipped (%s)", str(exc).splitlines()[0][:300])
                failing = True
            self._stop.wait(max(0.2, interval - (time.monotonic() - t0)))
        self._demote()

    def _tick(self) -> None:
        holds = self.lease.acquire()
        if holds and not self.leader:
            log.info("alerts: this process (%s) now evaluates rules", self.lease.holder)
            self._promote()
        elif not holds and self.leader:
            self._demote()
        if not holds:
            return
        report = self.evaluator.run_cycle()
        self.last_report = report
        for rule, fp, a, b in report.transitions:
            log.info("alert %s {%s}: %s -> %s", rule, fp, a, b)
        if time.monotonic() - self._last_prune > PRUNE_EVERY_S:
            self._last_prune = time.monotonic()
            self._prune()

    def _promote(self) -> None:
        self.leader = True
        self._deliver_stop = threading.Event()
        t = threading.Thread(
            target=self.deliverer.loop,
            args=(self._deliver_stop,),
            name="connwatch-notify",
            daemon=True,
        )
        t.start()
        self._threads.append(t)

    def _demote(self) -> None:
        if self.leader:
            self._deliver_stop.set()
        self.leader = False

    def _prune(self) -> None:
        with self.engine.begin() as conn:
            prune(conn, days=self.settings.notify_retention_days)
            conn.execute(
                text("delete from alert_transitions where at < now() - make_interval(days => :d)"),
                {"d": self.settings.alerts_history_days},
            )


def attach(app: FastAPI, engine: Engine, settings: Settings) -> None:
    """Run an :class:`AlertService` for as long as the web app runs (``serve``, ``web``)."""
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        async with inner(a) as state:
            service = AlertService(engine, settings)
            a.state.alerts = service
            service.start()
            try:
                yield state
            finally:
                import asyncio

                await asyncio.get_running_loop().run_in_executor(None, service.stop)

    app.router.lifespan_context = lifespan
