"""Every route of the app, asked by every kind of caller: what each one gets.

The table is the app itself: each route's guard (app.web.access.guards) says which role
it needs; this test asks every route as nobody, as a viewer, operator and admin (each
with a fresh session), and with read and write tokens, and checks each answer against
the guard: below the role -> 401 (no credentials) or 403; at or above -> anything but
401/403/5xx. A route added without a guard stops the app from being built at all
(``test_a_route_without_a_guard_is_refused``). A few invariants are checked on top: a
state change is never open to viewers (except ending one's own session), and the admin
pages and the audit API need an admin.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.auth import sessions, tokens
from app.auth.roles import at_least
from app.secrets import Vault
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.access.guards import RouteInfo, app_routes, assert_guarded, require_viewer
from app.web.app import create_app
from tests.fixtures.auth import make_user, web_settings

PARAMS = {"name": "t1", "request_id": "1", "session_id": "1", "token_id": "1"}
# POSTs a viewer may make: their own session, and computing a backtest (changes nothing)
VIEWER_WRITES = {
    "/logout",
    "/account/sessions/{session_id}/revoke",
    "/login",
    "/api/v1/alerts/rules/backtest",
}


@dataclass(frozen=True)
class Caller:
    label: str
    role: str | None  # what the caller may do
    kind: str  # none | session | token


CALLERS = [
    Caller("nobody", None, "none"),
    Caller("viewer", "viewer", "session"),
    Caller("operator", "operator", "session"),
    Caller("admin", "admin", "session"),
    Caller("read token (admin's)", "viewer", "token:admin:read"),
    Caller("write token (operator's)", "operator", "token:operator:write"),
    Caller("write token (admin's)", "admin", "token:admin:write"),
]


@pytest.fixture(scope="module")
def env(pg_cluster: object) -> Iterator[tuple[FastAPI, Engine, dict[str, int]]]:
    from cryptography.fernet import Fernet
    from sqlalchemy import create_engine

    from tests.fixtures.browser import migrated_database

    engine = create_engine(migrated_database(pg_cluster, "routes_"))  # type: ignore[arg-type]
    vault = Vault(Fernet.generate_key())
    doc = parse_targets(
        "targets:\n  - {name: t1, kind: oracle, dsn: 'h:1521/S', username: u, "
        "modes: [{name: dedicated}]}\n",
        "t",
    )
    with engine.begin() as conn:
        import_targets(conn, doc, vault)
    ids = {r: make_user(engine, r).id for r in ("viewer", "operator", "admin")}
    app = create_app(engine, vault=vault, settings=web_settings())
    yield app, engine, ids
    engine.dispose()


def _url(route: RouteInfo) -> str:
    return re.sub(r"\{(\w+)(:[^}]*)?\}", lambda m: PARAMS.get(m.group(1), "x"), route.path)


def _headers(engine: Engine, ids: dict[str, int], caller: Caller) -> dict[str, str]:
    h = {"accept": "application/json"}
    if caller.kind == "session":
        assert caller.role is not None
        with engine.begin() as conn:
            token, csrf = sessions.create(
                conn, ids[caller.role], via="password", source="t", user_agent="t", max_hours=1
            )
        h["cookie"] = f"connwatch_session={token}"
        h["x-csrf-token"] = csrf
    elif caller.kind.startswith("token:"):
        _, owner, scope = caller.kind.split(":")
        with engine.begin() as conn:
            token, _ = tokens.create(
                conn, user_id=ids[owner], name="t", scope=scope, created_by="test"
            )
        h["authorization"] = f"Bearer {token}"
    return h


def test_every_route_declares_a_guard_and_obeys_it(
    env: tuple[FastAPI, Engine, dict[str, int]],
) -> None:
    app, engine, ids = env
    routes = [r for r in app_routes(app) if r.kind == "api"]
    assert len(routes) > 30
    wrong: list[str] = []
    with TestClient(app) as client:
        for route in routes:
            needed = route.role
            for method in sorted(route.methods - {"HEAD"}):
                for caller in CALLERS:
                    client.cookies.clear()
                    res = client.request(
                        method,
                        _url(route),
                        headers={
                            **_headers(engine, ids, caller),
                            "content-type": "application/x-www-form-urlencoded",
                        },
                        content=b"",
                        follow_redirects=False,
                    )
                    allowed = needed is None or at_least(caller.role, needed)
                    got = res.status_code
                    if allowed and (got in (401, 403) or got >= 500):
                        wrong.append(f"{caller.label} {method} {route.path}: {got} (allowed)")
                    if not allowed and got != (401 if caller.role is None else 403):
                        wrong.append(f"{caller.label} {method} {route.path}: {got} (refused?)")
    assert wrong == []


def test_state_changes_need_more_than_a_viewer(env: tuple[FastAPI, Engine, dict[str, int]]) -> None:
    app, _, _ = env
    loose = [
        f"{sorted(r.methods)} {r.path} ({r.role})"
        for r in app_routes(app)
        if r.kind == "api"
        and r.methods & {"POST", "PUT", "PATCH", "DELETE"}
        and not at_least(r.role, "operator")
        and r.path not in VIEWER_WRITES
    ]
    assert loose == []


def test_admin_surfaces_need_an_admin(env: tuple[FastAPI, Engine, dict[str, int]]) -> None:
    app, _, _ = env
    admin = [
        r.path
        for r in app_routes(app)
        if r.kind == "api" and (r.path.startswith("/admin") or r.path.startswith("/api/v1/audit"))
    ]
    assert "/admin/users" in admin and "/api/v1/audit" in admin
    for r in app_routes(app):
        if r.path in admin:
            assert r.role == "admin", r.path


def test_a_route_without_a_guard_is_refused() -> None:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/guarded", dependencies=[__import__("fastapi").Depends(require_viewer)])
    def guarded() -> dict[str, str]:
        return {}

    assert_guarded(app)  # fine so far

    @app.get("/forgotten")
    def forgotten() -> dict[str, str]:
        return {}

    with pytest.raises(RuntimeError, match=r"routes without a guard.*/forgotten"):
        assert_guarded(app)
