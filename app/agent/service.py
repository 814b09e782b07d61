"""Running the agent inside a process (``serve``) or on its own (``agent``).

The scheduler, runner and writer arrive with the agent issue; until then both
entry points say so plainly instead of pretending to probe.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI
from sqlalchemy.engine import Engine

from app.config import Settings

log = logging.getLogger(__name__)


class AgentUnavailable(RuntimeError):
    pass


def attach(app: FastAPI, engine: Engine, settings: Settings) -> None:
    """Start the agent with the web app's lifespan (no-op until the agent exists)."""
    log.warning("the probing agent is not yet available: serving the dashboard only")


def run_forever(engine: Engine, settings: Settings) -> None:
    raise AgentUnavailable("'agent' is not yet available")
