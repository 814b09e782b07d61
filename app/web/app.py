"""The FastAPI application factory. The web reads the store; it never imports probes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DataError, SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import __version__, migrate
from app.config import Settings, get_settings
from app.secrets import Vault
from app.web.access.config import AccessConfig
from app.web.access.guards import assert_guarded, public
from app.web.access.identify import NotAuthenticated
from app.web.access.middleware import AccessMiddleware
from app.web.deps import STATIC_DIR, TEMPLATES_DIR, EngineDep, get_engine
from app.web.inputguard import InputGuard
from app.web.render import make_templates
from app.web.routes import admin as pages_admin
from app.web.routes import (
    api,
    apidocs,
    errors,
    heatmap,
    metrics,
    pages,
    report,
    report_admin,
    vendor,
)
from app.web.routes import auth as auth_routes
from app.web.routes import oidc as oidc_routes
from app.web.routes import users as users_routes
from app.web.servertiming import ServerTiming
from app.web.timerange import RangeError
from app.web.views.reuse.recent import Recent, Reuse

__all__ = ["create_app", "get_engine"]
log = logging.getLogger(__name__)

# Routes and their dependencies read the store in threads (sync SQLAlchemy), at most this
# many at once per web process (anyio's default is 40). Requests are mostly CPU, and a
# process has one core's worth of it: more threads only queue on the GIL, and more
# at once than the store's pool keeps open (app.db.make_engine) means a PostgreSQL
# session opened and closed per request. Slow admin actions (a test notification, a
# report sent now) wait on the network in one of these threads, not on the loop.
WEB_THREADS = 8


def _wants_html(request: Request) -> bool:
    path = request.url.path
    if path.startswith("/api/") or path in ("/metrics", "/healthz", "/readyz"):
        return False
    return "text/html" in request.headers.get("accept", "")


def _error_page(request: Request, status: int, message: str) -> Response:
    if _wants_html(request):
        templates = request.app.state.templates
        page: Response = templates.TemplateResponse(
            request,
            "error.html",
            {"title": f"Error {status}", "message": message},
            status_code=status,
        )
        return page
    return JSONResponse({"detail": message}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("query", "path", "body"))
        parts.append(f"{loc}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg")))
    return "; ".join(parts) or "invalid request"


def _login_required(request: Request, exc: NotAuthenticated) -> Response:
    if request.method in ("GET", "HEAD") and _wants_html(request):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        from urllib.parse import quote

        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
    response = _error_page(request, 401, str(exc))
    response.headers["WWW-Authenticate"] = 'Bearer realm="connwatch"'
    return response


def create_app(
    engine: Engine, *, vault: Vault | None = None, settings: Settings | None = None
) -> FastAPI:
    """The web app. ``settings`` default to the process's (CONNWATCH_* variables); tests
    pass their own (an anonymous role, allowed hosts) instead of weakening the defaults."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = WEB_THREADS
        yield

    app = FastAPI(
        title="connwatch",
        version=__version__,
        summary="Continuous connect/logon latency monitoring for Oracle and PostgreSQL",
        lifespan=lifespan,
        # Swagger UI and ReDoc load their assets from a CDN: connwatch runs offline, so
        # /docs is its own page rendered from the same OpenAPI schema (app/web/routes/apidocs.py).
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served by app/web/routes/apidocs.py behind the viewer guard
    )
    app.state.engine = engine
    app.state.vault = vault
    app.state.settings = settings
    app.state.access = AccessConfig.from_settings(settings)
    app.state.templates = make_templates(TEMPLATES_DIR, STATIC_DIR)
    # what the web process reuses for a moment (app/web/views/reuse/recent.py): the
    # overview's figures, /metrics' exposition, and charts, comparisons, sample tables
    app.state.overview_recent = Recent()
    app.state.metrics_text = Recent()
    app.state.reuse = Reuse(settings.reads_cache_s)

    app.add_middleware(ServerTiming)  # innermost: the app's own time (docs/web.md)

    @app.exception_handler(NotAuthenticated)
    async def _not_authenticated(request: Request, exc: NotAuthenticated) -> Response:
        return _login_required(request, exc)

    @app.exception_handler(DataError)
    async def _data_error(request: Request, exc: DataError) -> Response:
        # a value the store cannot hold (out of range, NUL): bad input, never a 500
        reason = str(getattr(exc, "orig", exc) or exc).strip().splitlines()[0]
        log.warning(
            "%s %s: the store refused a value: %s", request.method, request.url.path, reason
        )
        return _error_page(request, 422, f"a value is out of range for the store: {reason}")

    @app.exception_handler(RangeError)
    async def _range_error(request: Request, exc: RangeError) -> Response:
        return _error_page(request, 422, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        return _error_page(request, 422, _validation_message(exc))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        # A bug, not bad input: log it (the traceback stays in the log) and answer plainly.
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _error_page(request, 500, f"internal error ({type(exc).__name__}); see the log")

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _error_page(request, exc.status_code, str(exc.detail))

    @app.get(
        "/healthz",
        tags=["health"],
        summary="The process is up",
        dependencies=[Depends(public)],
    )
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    @app.get(
        "/readyz",
        tags=["health"],
        summary="The store is reachable and migrated to head",
        dependencies=[Depends(public)],
    )
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

    app.include_router(vendor.router)
    app.include_router(api.router)
    app.include_router(metrics.router)
    app.include_router(pages.router)
    app.include_router(pages_admin.router)
    app.include_router(apidocs.router)
    app.include_router(report.router)
    app.include_router(report_admin.router)
    app.include_router(heatmap.router)
    from app.web.routes.alerting import api as alerting_api
    from app.web.routes.alerting import pages as alerting_pages
    from app.web.routes.alerting import settings as alerting_settings

    app.include_router(alerting_api.router)
    app.include_router(alerting_pages.router)
    app.include_router(alerting_settings.router)
    app.include_router(errors.router)
    app.include_router(auth_routes.router)
    app.include_router(oidc_routes.router)
    app.include_router(users_routes.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.add_middleware(AccessMiddleware, config=app.state.access)
    assert_guarded(app)
    # outermost: a NUL or an oversized body is refused before anything else reads it
    app.add_middleware(InputGuard, render=_error_page)
    return app
