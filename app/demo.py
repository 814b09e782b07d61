"""``connwatch demo``: everything on one machine with no external services.

Starts (or joins) the embedded PostgreSQL, migrates it, and serves the dashboard.
Simulated Oracle databases and demo targets join here as those parts land.
"""

from __future__ import annotations

from app.config import Settings


def run(settings: Settings, *, host: str | None, port: int | None, history: bool) -> None:
    from app.cli import _run_web

    _run_web(settings, host, port, with_agent=True)
