"""Route guards: one FastAPI dependency per role, and the rule that every route has one.

Declare a route's role with one of::

    router = APIRouter(dependencies=[Depends(require_viewer)])      # every route of a router
    @router.post("/x", dependencies=[Depends(require_operator)])     # one route
    def f(principal: OperatorDep) -> ...:                             # and use who it is

``require_viewer`` / ``require_operator`` / ``require_admin`` accept a session cookie, an
``Authorization: Bearer`` token, an auth proxy's user or the anonymous role, and refuse
anyone below the role (401 without credentials, a browser is sent to the login page;
403 with too small a role). For a state change (POST, PUT, PATCH, DELETE) made with a
session or through the auth proxy they also require the session's anti-forgery token,
in the ``X-CSRF-Token`` header or a ``csrf_token`` form field (a bearer token is not
sent by browsers on their own, so it needs none). ``public`` declares a route open to
everyone (health, login, static assets); ``require_metrics`` is ``public`` when
``CONNWATCH_METRICS_PUBLIC`` says so and ``require_viewer`` otherwise.

:func:`assert_guarded` runs when the app is built: a route without a guard stops the
app from starting, and ``tests/web/test_access_routes.py`` enumerates every route.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import parse_qsl

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.concurrency import run_in_threadpool
from starlette.routing import Mount

from app.auth.principal import Principal
from app.auth.roles import Role, at_least
from app.web.access.identify import NotAuthenticated, identify

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
PUBLIC_MOUNTS = ("/static",)


class Guard:
    """A dependency that admits ``role`` and above (``None``: everyone)."""

    def __init__(self, role: Role | None, name: str, *, public_setting: str | None = None):
        self.role = role
        self.name = name
        self.public_setting = public_setting
        self.__name__ = name

    def __repr__(self) -> str:
        return f"<guard {self.name}>"

    def needed(self, request: Request) -> Role | None:
        if self.public_setting and getattr(request.app.state.settings, self.public_setting):
            return None
        return self.role

    async def __call__(self, request: Request) -> Principal:
        needed = self.needed(request)
        if needed is None and self.role is None:
            return _lazy_anonymous(request)
        found = getattr(request.state, "principal", None)
        if isinstance(found, Principal):
            principal = found
        else:
            principal = await run_in_threadpool(identify, request)
            request.state.principal = principal
        if needed is None:
            return principal
        if principal.role is None:
            raise NotAuthenticated()
        if not at_least(principal.role, needed):
            raise HTTPException(
                403,
                f"this needs the {needed} role; {principal.name} is {principal.role}"
                + (" (read-only token)" if principal.scope == "read" else ""),
            )
        if request.method not in SAFE_METHODS:
            await check_csrf(request, principal)
        return principal


def _lazy_anonymous(request: Request) -> Principal:
    found = getattr(request.state, "principal", None)
    return found if isinstance(found, Principal) else Principal("anonymous", None, "anonymous")


async def check_csrf(request: Request, principal: Principal) -> None:
    """A state change with ambient credentials (session, proxy) carries the session's token."""
    if principal.via not in ("session", "proxy"):
        return
    expected = principal.csrf_token or ""
    given = request.headers.get(CSRF_HEADER, "")
    if not given and request.headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        body = await request.body()
        try:
            given = dict(parse_qsl(body.decode(), keep_blank_values=True)).get(CSRF_FIELD, "")
        except UnicodeDecodeError:
            given = ""
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        raise HTTPException(
            403, "missing or wrong anti-forgery token: reload the page and try again"
        )


public = Guard(None, "public")
require_viewer = Guard("viewer", "require_viewer")
require_operator = Guard("operator", "require_operator")
require_admin = Guard("admin", "require_admin")
require_metrics = Guard("viewer", "require_metrics", public_setting="metrics_public")
GUARDS = (public, require_viewer, require_operator, require_admin, require_metrics)

ViewerDep = Annotated[Principal, Depends(require_viewer)]
OperatorDep = Annotated[Principal, Depends(require_operator)]
AdminDep = Annotated[Principal, Depends(require_admin)]


def _walk(dep: Dependant) -> Iterator[Any]:
    yield dep.call
    for sub in dep.dependencies:
        yield from _walk(sub)


@dataclass(frozen=True)
class RouteInfo:
    """One route of the app as a client sees it (routers included, prefixes applied)."""

    path: str
    methods: frozenset[str]
    guards: tuple[Guard, ...]
    kind: str  # api | mount | other

    @property
    def role(self) -> Role | None:
        strictest = max(self.guards, key=lambda g: _RANK[g.role])
        return strictest.role

    @property
    def guard(self) -> Guard:
        return max(self.guards, key=lambda g: _RANK[g.role])


_RANK = {None: -1, "viewer": 0, "operator": 1, "admin": 2}


def app_routes(app: FastAPI) -> list[RouteInfo]:
    """Every route with the guards its dependencies hold (FastAPI's effective routes)."""
    out = []
    for ctx in iter_route_contexts(app.routes):
        original = ctx.original_route
        if isinstance(original, APIRoute):
            dependant = ctx.dependant if ctx.dependant is not None else original.dependant
            guards = tuple(c for c in _walk(dependant) if isinstance(c, Guard))
            out.append(RouteInfo(str(ctx.path), frozenset(ctx.methods or ()), guards, "api"))
        elif isinstance(original, Mount):
            out.append(RouteInfo(original.path, frozenset(), (), "mount"))
        else:
            out.append(RouteInfo(str(getattr(ctx, "path", "?")), frozenset(), (), "other"))
    return out


def unguarded_routes(app: FastAPI) -> list[str]:
    missing = []
    for r in app_routes(app):
        if r.kind == "api" and not r.guards:
            missing.append(f"{sorted(r.methods)} {r.path}")
        elif r.kind == "mount" and r.path not in PUBLIC_MOUNTS:
            missing.append(f"mount {r.path}")
        elif r.kind == "other":
            missing.append(f"{r.path} (not a FastAPI route: it cannot declare a guard)")
    return missing


def assert_guarded(app: FastAPI) -> None:
    missing = unguarded_routes(app)
    if missing:
        raise RuntimeError(
            "routes without a guard (add dependencies=[Depends(require_viewer)] or another "
            "guard from app.web.access.guards): " + "; ".join(missing)
        )
