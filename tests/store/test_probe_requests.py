"""The probe_requests table functions, on a real PostgreSQL: insert, claim once, finish, expire."""

from __future__ import annotations

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.store import probe_requests as pr
from tests.store.conftest import make_series


def _mode_and_target(engine: Engine) -> tuple[int, int]:
    sid = make_series(engine, "db1")["dedicated"]
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "select m.target_id, m.id from series s join modes m on m.id = s.mode_id "
                "where s.id = :s"
            ),
            {"s": sid},
        ).one()
    return int(row[0]), int(row[1])


def test_insert_notifies_and_get_reads_it_back(engine: Engine) -> None:
    target, mode = _mode_and_target(engine)
    dsn = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute(f"listen {pr.CHANNEL}")
        with engine.begin() as conn:
            rid = pr.insert(conn, target, mode, "connping", timeout_ms=5000, params={"x": 1})
        got = next(listener.notifies(timeout=5.0))
    assert got.channel == pr.CHANNEL and got.payload == str(rid)
    with engine.connect() as conn:
        req = pr.get(conn, rid)
        assert pr.get(conn, rid + 1000) is None
    assert req is not None
    assert (req.status, req.probe, req.timeout_ms, req.params) == (
        "pending",
        "connping",
        5000,
        {"x": 1},
    )
    assert req.claimed_by is None and req.result is None and req.error is None


def test_a_request_is_claimed_once_by_its_site_then_finished(engine: Engine) -> None:
    target, mode = _mode_and_target(engine)
    with engine.begin() as conn:
        anywhere = pr.insert(conn, target, mode)
        dc2 = pr.insert(conn, target, mode, site="dc2", notify=False)
    with engine.begin() as conn:
        first = pr.claim(conn, "a1", "dc1")
        again = pr.claim(conn, "a2", "dc1")
    assert [r.id for r in first] == [anywhere] and again == []
    assert first[0].status == "running" and first[0].claimed_by == "a1"
    with engine.begin() as conn:
        assert [r.id for r in pr.claim(conn, "b1", "dc2")] == [dc2]
        pr.finish(conn, anywhere, "done", {"status": "ok", "logon_ns": 123})
        pr.finish(conn, dc2, "error", {"error": "no such mode"})
    with engine.connect() as conn:
        done, failed = pr.get(conn, anywhere), pr.get(conn, dc2)
    assert done is not None and done.status == "done" and done.finished_at is not None
    assert done.result == {"status": "ok", "logon_ns": 123} and done.error is None
    assert failed is not None and failed.error == "no such mode"


def test_requests_of_a_dead_agent_expire(engine: Engine) -> None:
    target, mode = _mode_and_target(engine)
    with engine.begin() as conn:
        old = pr.insert(conn, target, mode)
        fresh = pr.insert(conn, target, mode)
        pr.claim(conn, "gone", "default")
        conn.execute(
            text(
                "update probe_requests set claimed_at = now() - interval '11 minutes' where id = :i"
            ),
            {"i": old},
        )
        assert pr.expire_stale(conn) == 1
    with engine.connect() as conn:
        expired, running = pr.get(conn, old), pr.get(conn, fresh)
    assert expired is not None and expired.status == "error"
    assert expired.error == "agent gone stopped before finishing this request"
    assert running is not None and running.status == "running"
