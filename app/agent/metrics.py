"""Read side of the agents' self-monitoring, for the dashboard and ``/metrics``.

Imports nothing from the probes: the web may use it. :func:`agent_status` returns
one dict per agent row (newest heartbeat first) with ``alive`` computed from the
heartbeat; :func:`prometheus_text` renders them in the Prometheus text format
(``connwatch_agent_*`` gauges and counters labelled ``agent`` and ``site``).
The ``stats`` keys are documented in :mod:`app.agent.stats` and docs/agent.md.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

ALIVE_S = 10.0  # an agent heartbeats every ~1 s; silent this long counts as down

# (metric, type, help, how to get the value from a status dict)
_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("up", "gauge", "1 if the agent sent a heartbeat in the last 10 s", "alive"),
    ("heartbeat_age_seconds", "gauge", "seconds since the last heartbeat", "age_s"),
    ("series", "gauge", "series this agent runs", "stats.series"),
    ("in_flight", "gauge", "probe runs executing now", "stats.in_flight"),
    ("lag_p50_ms", "gauge", "scheduler start lag p50 over the last minute", "stats.lag_ms.p50"),
    ("lag_p95_ms", "gauge", "scheduler start lag p95 over the last minute", "stats.lag_ms.p95"),
    ("lag_p99_ms", "gauge", "scheduler start lag p99 over the last minute", "stats.lag_ms.p99"),
    ("runs_total", "counter", "probe runs executed since start", "stats.runs"),
    ("runs_failed_total", "counter", "runs that ended in error or timeout", "stats.runs_failed"),
    ("skipped_total", "counter", "runs recorded as skipped since start", "stats.skipped"),
    ("spool_samples", "gauge", "samples waiting in the local spool", "stats.spool_samples"),
    ("spool_bytes", "gauge", "bytes in the local spool", "stats.spool_bytes"),
    ("spool_fill_ratio", "gauge", "spool fill, 0..1 of its bound", "stats.spool_fill"),
    ("samples_written_total", "counter", "samples stored by this agent", "stats.written"),
    ("samples_dropped_total", "counter", "samples lost (spool full)", "stats.dropped"),
    ("cpu_percent", "gauge", "process CPU, percent of one core", "stats.cpu_percent"),
    ("cpu_ms_per_run", "gauge", "agent CPU per probe run, milliseconds", "stats.cpu_ms_per_run"),
)


def agent_status(conn: Connection, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """Every agent row as a dict: name, site, version, hostname, pid, started_at,
    heartbeat_at, age_s, alive, stats."""
    now = now or datetime.now(UTC)
    rows = conn.execute(
        text(
            "select name, site, version, hostname, pid, started_at, heartbeat_at, stats "
            "from agents order by heartbeat_at desc, name"
        )
    ).mappings()
    out = []
    for r in rows:
        doc = dict(r)
        age = (now - r["heartbeat_at"]).total_seconds()
        doc["age_s"] = round(age, 3)
        doc["alive"] = age <= ALIVE_S and not (r["stats"] or {}).get("stopped", False)
        out.append(doc)
    return out


def _get(doc: dict[str, Any], path: str) -> float | None:
    value: Any = doc
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(statuses: list[dict[str, Any]]) -> str:
    """The Prometheus text exposition of :func:`agent_status` rows."""
    lines: list[str] = []
    for name, kind, help_text, path in _METRICS:
        metric = f"connwatch_agent_{name}"
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} {kind}")
        for st in statuses:
            value = _get(st, path)
            if value is None:
                continue
            labels = f'agent="{_label(st["name"])}",site="{_label(st["site"])}"'
            lines.append(f"{metric}{{{labels}}} {value:g}")
    return "\n".join(lines) + "\n"
