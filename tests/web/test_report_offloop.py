"""Building a report never stalls the web: while a report is being built (held for as long
as the test likes by a real PostgreSQL lock on a table it must read), ``/healthz`` answers;
once the lock goes, the report completes. Page, API and "send now" (which also prints the
PDF) each run off the event loop."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from app.reports.delivery.subscriptions import save, validate
from tests.fixtures.browser import LiveServer, migrated_database, serve_app

WAIT_S = 60.0  # generous: a loaded CI machine


@pytest.fixture(scope="module")
def server(pg_cluster: PgCluster, live_key: str) -> Iterator[LiveServer]:
    with serve_app(migrated_database(pg_cluster, "offloop_"), live_key) as live:
        with live.engine.begin() as conn:
            save(conn, validate({"name": "held", "recipients": ["boss@example.org"]}))
        yield live


def _waiting_on_lock(engine: Engine) -> int:
    with engine.connect() as conn:
        n: int = conn.execute(
            text(
                "select count(*) from pg_stat_activity where datname = current_database() "
                "and wait_event_type = 'Lock'"
            )
        ).scalar_one()
        return n


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _operator(engine: Engine) -> dict[str, str]:
    """An operator's session cookie and anti-forgery token ("send now" needs one)."""
    from app.auth import sessions
    from tests.fixtures.auth import make_user

    user = make_user(engine, "operator")
    with engine.begin() as conn:
        token, csrf = sessions.create(
            conn, user.id, via="password", source="t", user_agent="t", max_hours=1
        )
    return {"cookie": f"connwatch_session={token}", "x-csrf-token": csrf}


def _request(
    method: str, url: str, timeout: float, auth: dict[str, str] | None = None
) -> tuple[int, str, bytes]:
    """(status, Location, body) of one request; a POST sends an empty form."""
    req = urllib.request.Request(url, method=method, headers=auth or {})
    if method == "POST":
        req.add_header("content-type", "application/x-www-form-urlencoded")
        req.data = b""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, r.headers.get("location", ""), r.read()
    except urllib.error.HTTPError as exc:  # 3xx (not followed) and errors
        return exc.code, exc.headers.get("location", ""), exc.read()


def _in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["response"] = fn()
        except Exception as exc:  # surfaced by the assertions below
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/report?week=last"),
        ("GET", "/api/v1/report?week=current"),
        ("POST", "/report/subscriptions/held/send"),
    ],
)
def test_healthz_answers_while_a_report_is_built(
    server: LiveServer, method: str, path: str
) -> None:
    auth = _operator(server.engine) if method == "POST" else None
    locker = create_engine(server.db_url, pool_size=1)
    try:
        with locker.connect() as hold:
            hold.execute(text("lock table targets in access exclusive mode"))  # no commit yet
            thread, out = _in_thread(lambda: _request(method, server.url + path, WAIT_S * 2, auth))
            deadline = time.monotonic() + WAIT_S
            while _waiting_on_lock(server.engine) == 0:
                assert time.monotonic() < deadline, "the report never reached the targets table"
                assert thread.is_alive(), f"the report finished without reading targets: {out}"
                time.sleep(0.05)
            # the report is now blocked inside the store; the web must still answer
            status, _, body = _request("GET", server.url + "/healthz", 20.0)
            assert status == 200 and b'"ok"' in body
            assert thread.is_alive(), "the report finished while its table was locked"
            hold.rollback()  # release: the report goes on
        thread.join(WAIT_S * 2)
        assert not thread.is_alive()
        assert "error" not in out, out
        status, location, body = out["response"]
        assert status == (303 if method == "POST" else 200), body[:300]
        if method == "POST":
            assert "queued" in location
    finally:
        locker.dispose()
