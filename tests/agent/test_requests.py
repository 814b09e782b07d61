""" "Test now": the web inserts a probe_requests row, a running agent answers it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from tests.agent.conftest import add_mode, add_target, make_settings, run_agent


def request(engine: Engine, target: int, mode: int, probe: str = "connping", **kw: Any) -> int:
    with engine.begin() as conn:
        rid = conn.execute(
            text(
                "insert into probe_requests (target_id, mode_id, probe, params, site) "
                "values (:t, :m, :p, cast(:pa as jsonb), :s) returning id"
            ),
            {
                "t": target,
                "m": mode,
                "p": probe,
                "pa": json.dumps(kw.get("params", {})),
                "s": kw.get("site"),
            },
        ).scalar_one()
        conn.execute(text("notify connwatch_probe_requests"))
    return int(rid)


def outcome(engine: Engine, rid: int) -> Any:
    with engine.connect() as conn:
        return conn.execute(
            text(
                "select status, claimed_by, result, finished_at from probe_requests where id = :i"
            ),
            {"i": rid},
        ).one()


def test_requests_are_answered_once_without_secrets(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    secret = "s3cret-Pa55word"
    import os

    os.environ["CW_TEST_REQ_PW"] = secret
    try:
        with store.begin() as conn:
            t = add_target(conn, "pg", dsn=f"127.0.0.1:{pg_cluster.port}/{pg_database}")
            m = add_mode(conn, t, "direct")
            t_bad = add_target(
                conn, "unreachable", dsn="127.0.0.1:1/nodb", password_ref="env:CW_TEST_REQ_PW"
            )
            m_bad = add_mode(conn, t_bad, "direct")
            t_cfg = add_target(conn, "broken", dsn="not a dsn")
            m_cfg = add_mode(conn, t_cfg, "direct")
        ok = request(store, t, m)
        sp = request(store, t, m, "sessionping")
        down = request(store, t_bad, m_bad)
        cfg = request(store, t_cfg, m_cfg)
        elsewhere = request(store, t, m, site="other-site")

        async def until_done(agent: Any) -> None:
            for _ in range(100):
                with store.connect() as conn:
                    pending = conn.execute(
                        text(
                            "select count(*) from probe_requests where status in "
                            "('pending','running') and site is null"
                        )
                    ).scalar_one()
                if pending == 0:
                    return
                await asyncio.sleep(0.1)

        agent = run_agent(
            store, make_settings(tmp_path, "postgresql://unused/x"), 0, during=until_done
        )
    finally:
        del os.environ["CW_TEST_REQ_PW"]

    status, by, result, finished = outcome(store, ok)
    assert (status, by) == ("done", agent.name) and finished is not None
    assert result["status"] == "ok" and result["series_id"] is None
    assert set(result["phases_ms"]) >= {"logon", "ping", "query", "logoff", "total"}
    assert result["sid"] and result["server_type"] == "DIRECT"
    assert result["probe"] == "connping" and result["agent"] == agent.name

    status, _, result, _ = outcome(store, sp)
    assert status == "done" and result["status"] == "ok" and "ping" in result["phases_ms"]

    status, _, result, _ = outcome(store, down)
    assert status == "done" and result["status"] == "error"
    assert result["error_code"].startswith(("NET-", "PG-"))
    assert secret not in json.dumps(result)

    status, _, result, _ = outcome(store, cfg)
    assert status == "error" and "is not host[:port]/dbname" in result["error"]

    status, by, result, _ = outcome(store, elsewhere)
    assert (status, by, result) == ("pending", None, None)  # only an agent of that site runs it
