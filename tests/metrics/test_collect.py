"""The collectors: agents' heartbeat figures in base units, the overview's modes, and the
store's cumulative totals (the histogram bounds are the store's bucket edges)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.metrics.collect import ModeView, agent_figures, mode_figures
from app.metrics.registry import Exposition
from app.store.read.agents import agent_status
from app.store.read.totals import bound_label, export_bounds_ns


def test_agent_figures_in_base_units(migrated_engine: Engine) -> None:
    now = datetime.now(UTC)
    with migrated_engine.begin() as conn:
        for name, site, age, stats in (
            ("a2", 'dc"2', 60, {"series": 0, "stopped": True}),
            ("a1", "dc1", 1, {"series": 3, "lag_ms": {"p99": 4.5}, "runs": 7, "cpu_percent": 12.5}),
            ("a3", "dc1", 2, {"stopped": True, "written": 123456789, "cpu_ms_per_run": 0.25}),
        ):
            conn.execute(
                text(
                    "insert into agents (name, site, version, hostname, pid, heartbeat_at, stats)"
                    " values (:n, :s, '0.1.0', 'h', 1, :hb, cast(:st as jsonb))"
                ),
                {"n": name, "s": site, "hb": now - timedelta(seconds=age), "st": json.dumps(stats)},
            )
    with migrated_engine.connect() as conn:
        out = Exposition()
        agent_figures(out, agent_status(conn, now=now))
    body = out.text()
    assert 'connwatch_agent_up{agent="a1",site="dc1"} 1\n' in body
    assert 'connwatch_agent_up{agent="a2",site="dc\\"2"} 0\n' in body
    assert 'connwatch_agent_lag_p99_seconds{agent="a1",site="dc1"} 0.0045\n' in body
    assert 'connwatch_agent_cpu_ratio{agent="a1",site="dc1"} 0.125\n' in body
    assert 'connwatch_agent_cpu_seconds_per_run{agent="a3",site="dc1"} 0.00025\n' in body
    assert 'connwatch_agent_runs_total{agent="a1",site="dc1"} 7\n' in body
    assert 'connwatch_agent_samples_written_total{agent="a3",site="dc1"} 123456789\n' in body
    assert 'connwatch_agent_runs_total{agent="a2"' not in body  # no value, no line
    assert "connwatch_agent_spool_bytes" not in body  # nobody reported it: no HELP/TYPE


def test_mode_figures_never_call_a_probe_error_down() -> None:
    out = Exposition()
    mode_figures(
        out,
        [
            ModeView("t", "pooled", "pooled", "oracle", "poolacquire", "probe-error"),
            ModeView(
                "t", "dedicated", "dedicated", "oracle", "connping", "down", logon_p50_ms=61.0
            ),
        ],
    )
    body = out.text()
    assert 'connwatch_up{target="t",mode="pooled"}' not in body  # unknown, not 0
    assert 'connwatch_up{target="t",mode="dedicated"} 0' in body
    assert 'connwatch_mode_state{target="t",mode="pooled",state="probe-error"} 1' in body
    assert 'connwatch_logon_p50_seconds{target="t",mode="dedicated"} 0.061' in body


def test_milliseconds_become_seconds_without_float_noise() -> None:
    out = Exposition()
    mode_figures(
        out,
        [
            ModeView(
                "t", "dedicated", "dedicated", "oracle", "connping", "ok",
                logon_p50_ms=1.531247, logon_p95_ms=0.1 + 0.2, ping_p50_ms=2 / 3,
            )
        ],
    )  # fmt: skip
    body = out.text()
    assert 'connwatch_logon_p50_seconds{target="t",mode="dedicated"} 0.001531247\n' in body
    assert 'connwatch_logon_p95_seconds{target="t",mode="dedicated"} 0.0003\n' in body
    assert 'connwatch_ping_p50_seconds{target="t",mode="dedicated"} 0.000666666666667\n' in body


def test_bounds_are_store_edges_printed_never_below_them() -> None:
    bounds = export_bounds_ns()
    assert len(bounds) == 60 and 0.10e6 < bounds[0] < 0.11e6 and 100e9 < bounds[-1] < 110e9
    labels = [bound_label(b) for b in bounds]
    assert all(float(le) * 1e9 >= b and float(le) * 1e9 <= b * 1.00001 for le, b in zip(
        labels, bounds, strict=True))  # fmt: skip
    assert labels == sorted(labels, key=float) and len(set(labels)) == len(labels)
