"""The read side of self-monitoring: agent rows as dicts and as Prometheus text."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.agent.metrics import agent_status, prometheus_text


def test_status_and_prometheus_text(store: Engine) -> None:
    now = datetime.now(UTC)
    with store.begin() as conn:
        for name, site, age, stats in (
            ("a1", "dc1", 1, {"series": 3, "lag_ms": {"p99": 4.5}, "store_ok": True, "runs": 7}),
            ("a2", 'dc"2', 60, {"series": 0, "stopped": True}),
        ):
            conn.execute(
                text(
                    "insert into agents (name, site, version, hostname, pid, heartbeat_at, stats)"
                    " values (:n, :s, '0.1.0', 'h', 1, :hb, cast(:st as jsonb))"
                ),
                {"n": name, "s": site, "hb": now - timedelta(seconds=age), "st": json.dumps(stats)},
            )
    with store.connect() as conn:
        rows = agent_status(conn, now=now)
    assert [r["name"] for r in rows] == ["a1", "a2"]
    assert rows[0]["alive"] is True and rows[1]["alive"] is False
    assert 0.9 < rows[0]["age_s"] < 1.1
    out = prometheus_text(rows)
    assert 'connwatch_agent_up{agent="a1",site="dc1"} 1' in out
    assert 'connwatch_agent_up{agent="a2",site="dc\\"2"} 0' in out
    assert 'connwatch_agent_lag_p99_ms{agent="a1",site="dc1"} 4.5' in out
    assert 'connwatch_agent_runs_total{agent="a1",site="dc1"} 7' in out
    assert "# TYPE connwatch_agent_runs_total counter" in out
    assert 'connwatch_agent_runs_total{agent="a2"' not in out  # no value, no line
