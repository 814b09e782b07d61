"""The read side of the agents' self-monitoring: statuses and their Prometheus text."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.store.read.agents import agent_status, label_value, number, prometheus_text


def test_status_and_prometheus_text(engine: Engine) -> None:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        for name, site, age, stats in (
            ("a2", 'dc"2', 60, {"series": 0, "stopped": True}),
            ("a1", "dc1", 1, {"series": 3, "lag_ms": {"p99": 4.5}, "store_ok": True, "runs": 7}),
            ("a3", "dc1", 2, {"stopped": True, "written": 123456789}),
        ):
            conn.execute(
                text(
                    "insert into agents (name, site, version, hostname, pid, heartbeat_at, stats)"
                    " values (:n, :s, '0.1.0', 'h', 1, :hb, cast(:st as jsonb))"
                ),
                {"n": name, "s": site, "hb": now - timedelta(seconds=age), "st": json.dumps(stats)},
            )
    with engine.connect() as conn:
        rows = agent_status(conn, now=now)
    assert [(r.site, r.name) for r in rows] == [('dc"2', "a2"), ("dc1", "a1"), ("dc1", "a3")]
    alive = {r.name: r.alive for r in rows}
    assert alive == {"a1": True, "a2": False, "a3": False}  # a3: recent but stopped
    assert 0.9 < rows[1].heartbeat_age_s < 1.1
    out = prometheus_text(rows)
    assert 'connwatch_agent_up{agent="a1",site="dc1"} 1\n' in out
    assert 'connwatch_agent_up{agent="a2",site="dc\\"2"} 0\n' in out
    assert 'connwatch_agent_lag_p99_ms{agent="a1",site="dc1"} 4.5\n' in out
    assert 'connwatch_agent_runs_total{agent="a1",site="dc1"} 7\n' in out
    # a large counter keeps every digit (no 1.23457e+08)
    assert 'connwatch_agent_samples_written_total{agent="a3",site="dc1"} 123456789\n' in out
    assert "# TYPE connwatch_agent_runs_total counter" in out
    assert 'connwatch_agent_runs_total{agent="a2"' not in out  # no value, no line
    assert "connwatch_agent_cpu_percent" not in out  # nobody reported it: no HELP/TYPE either


def test_no_agents_no_text(engine: Engine) -> None:
    with engine.connect() as conn:
        assert prometheus_text(agent_status(conn)) == ""


def test_values_and_labels_are_written_exactly() -> None:
    assert number(7.0) == "7"
    assert number(0.25) == "0.25"
    assert number(float("nan")) == "NaN"
    assert label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
