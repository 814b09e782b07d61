"""The schedule's loop inside a web process: :func:`run_due` every ``TICK_S`` in a thread.

Every ``connwatch serve`` / ``connwatch web`` runs it (``CONNWATCH_REPORTS_ENABLED``);
the PostgreSQL lock in :func:`app.reports.delivery.schedule.run_due` makes exactly one of
them send each due report. Rendering runs Chromium, so it stays off the event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy.engine import Engine

from app.config import Settings
from app.reports.delivery.schedule import TICK_S, run_due

log = logging.getLogger(__name__)


class ReportLoop:
    def __init__(self, engine: Engine, *, base_url: str, browser: str | None) -> None:
        self.engine, self.base_url, self.browser = engine, base_url, browser
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="report-schedule", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(TICK_S):
            try:
                run_due(self.engine, base_url=self.base_url, browser=self.browser)
            except Exception as exc:  # the store away for a while: try again next tick
                log.warning("report schedule: %s", exc)

    def start(self) -> None:
        self.thread.start()

    def close(self, timeout: float = 10.0) -> None:
        self.stop.set()
        self.thread.join(timeout)


def attach(app: FastAPI, engine: Engine, settings: Settings) -> None:
    """Run the report schedule for as long as the web app runs."""
    from app.notify.deliver import public_url

    inner = app.router.lifespan_context
    chromium = str(settings.report_chromium) if settings.report_chromium else None

    @asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[Any]:
        async with inner(a) as state:
            loop = ReportLoop(engine, base_url=public_url(settings), browser=chromium)
            loop.start()
            try:
                yield state
            finally:
                loop.close()

    app.router.lifespan_context = lifespan
