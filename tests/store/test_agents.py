"""The read side of the agents' self-monitoring: statuses (their Prometheus figures:
tests/metrics/test_collect.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.metrics.registry import number
from app.store.read.agents import agent_status, label_value


def test_status_of_every_agent(engine: Engine) -> None:
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


def test_no_agents(engine: Engine) -> None:
    with engine.connect() as conn:
        assert agent_status(conn) == []


def test_values_and_labels_are_written_exactly() -> None:
    assert number(7.0) == "7"
    assert number(0.25) == "0.25"
    assert number(float("nan")) == "NaN"
    assert label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
