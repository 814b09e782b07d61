"""The FastAPI application factory. The web reads the store; it never imports probes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from app import __version__, migrate


def get_engine(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(get_engine)]


def create_app(engine: Engine) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield

    app = FastAPI(
        title="connwatch",
        version=__version__,
        summary="Continuous connect/logon latency monitoring for Oracle and PostgreSQL",
        lifespan=lifespan,
    )
    app.state.engine = engine

    @app.get("/healthz", tags=["health"], summary="The process is up")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get("/readyz", tags=["health"], summary="The store is reachable and migrated to head")
    def readyz(engine: EngineDep) -> JSONResponse:
        try:
            with engine.connect() as conn:
                conn.execute(text("select 1"))
            current = migrate.current_revision(engine)
        except SQLAlchemyError as exc:
            reason = str(getattr(exc, "orig", exc) or exc).strip().splitlines()[0]
            return JSONResponse(
                {"status": "unavailable", "database": "unreachable", "detail": reason},
                status_code=503,
            )
        head = migrate.head_revision()
        if current != head:
            return JSONResponse(
                {"status": "unavailable", "database": "ok", "migration": current, "head": head},
                status_code=503,
            )
        return JSONResponse({"status": "ok", "database": "ok", "migration": current})

    return app
