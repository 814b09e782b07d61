"""The agents' self-monitoring, read side: one status per ``agents`` row, and its Prometheus text.

Each agent writes its row (heartbeat about once a second, counters in ``stats``; keys
documented in docs/agent.md). This module is the one reader, shared by the web (the
Agents page, ``/api/v1/agents``, ``/metrics``) and the agent; it imports neither.
An agent counts as alive when its heartbeat is at most :data:`ALIVE_S` old and it did
not report ``stopped``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

ALIVE_S = 10.0  # an agent heartbeats every ~1 s; silent this long counts as down


@dataclass(frozen=True, slots=True)
class AgentStatus:
    name: str
    site: str
    version: str
    hostname: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age_s: float  # seconds since the heartbeat, at the time of reading
    alive: bool
    stats: dict[str, Any]


# (metric, type, help, where the value is: an attribute or "stats.<key>[.<key>]")
METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("up", "gauge", "1 if the agent sent a heartbeat in the last 10 s", "alive"),
    ("heartbeat_age_seconds", "gauge", "seconds since the last heartbeat", "heartbeat_age_s"),
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
    # overload (docs/agent.md, "Overload"): when and by how much the agent cannot keep up
    ("overloaded", "gauge", "1 while more runs are due than the agent can start on time "
     "(it starts a share of every series' instants and records the rest as skipped "
     "OVERLOAD)", "stats.overload.active"),
    ("overload_factor", "gauge", "runs due per second over the runs per second the agent "
     "can start on time; above 1 the agent is overloaded by that much",
     "stats.overload.factor"),
    ("run_share_ratio", "gauge", "share of due runs the agent starts (1 unless overloaded)",
     "stats.overload.share"),
    ("runs_due_per_second", "gauge", "instants due per second, all series of the agent",
     "stats.overload.demand_per_s"),
    ("capacity_runs_per_second", "gauge", "runs per second the agent's workers start on "
     "time at their target utilisation (measured)", "stats.overload.capacity_per_s"),
    ("loop_busy_ratio", "gauge", "the busiest worker's event loop: share of time it was not "
     "idle", "stats.overload.busy"),
    ("overload_skipped_total", "counter", "instants recorded as skipped OVERLOAD since start",
     "stats.overload.skipped"),
    ("workers", "gauge", "worker processes the agent runs (configured)",
     "stats.workers_configured"),
    ("workers_alive", "gauge", "worker processes alive", "stats.workers_alive"),
    ("wal_pending_samples", "gauge", "samples in the write-ahead log not yet stored or "
     "spooled", "stats.wal_pending"),
)  # fmt: skip

# per worker of an agent (label ``worker``), from ``stats.workers[i]``
WORKER_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("worker_series", "gauge", "series this worker runs", "series"),
    ("worker_loop_busy_ratio", "gauge", "share of time this worker's event loop was not idle",
     "overload.busy"),
    ("worker_run_share_ratio", "gauge", "share of due runs this worker starts",
     "overload.share"),
    ("worker_lag_p99_ms", "gauge", "start lag p99 of this worker's runs, last minute",
     "lag_p99_ms"),
)  # fmt: skip


def agent_status(conn: Connection, *, now: datetime | None = None) -> list[AgentStatus]:
    """Every agent row, ordered by site and name, with its heartbeat age and liveness."""
    now = now or datetime.now(UTC)
    rows = conn.execute(
        text(
            "select name, site, version, hostname, pid, started_at, heartbeat_at, stats "
            "from agents order by site, name"
        )
    ).all()
    out = []
    for r in rows:
        stats = dict(r.stats or {})
        age = (now - r.heartbeat_at).total_seconds()
        alive = age <= ALIVE_S and not stats.get("stopped", False)
        out.append(
            AgentStatus(
                r.name, r.site, r.version, r.hostname, r.pid, r.started_at, r.heartbeat_at,
                round(age, 3), alive, stats,
            )
        )  # fmt: skip
    return out


def _value(st: AgentStatus | dict[str, Any], path: str) -> float | None:
    head, _, rest = path.partition(".")
    value: Any = st.get(head) if isinstance(st, dict) else getattr(st, head)
    for part in rest.split(".") if rest else ():
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    return None


def label_value(value: str) -> str:
    """A Prometheus label value, escaped (backslash, double quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(v: float) -> str:
    """A sample value: integers in full (counters stay exact), else the shortest float."""
    v = float(v)
    if v != v:
        return "NaN"
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    return repr(v)


def prometheus_text(statuses: list[AgentStatus]) -> str:
    """``connwatch_agent_*{agent, site}`` in the Prometheus text format 0.0.4.

    A metric without any value (no agent reported that key) is left out entirely.
    """
    lines: list[str] = []
    for name, kind, help_text, path in METRICS:
        metric = f"connwatch_agent_{name}"
        found = [(st, v) for st in statuses if (v := _value(st, path)) is not None]
        if not found:
            continue
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} {kind}")
        for st, v in found:
            labels = f'agent="{label_value(st.name)}",site="{label_value(st.site)}"'
            lines.append(f"{metric}{{{labels}}} {number(v)}")
    for name, kind, help_text, path in WORKER_METRICS:
        metric = f"connwatch_agent_{name}"
        found_w = [
            (st, w, v)
            for st in statuses
            if st.alive
            for w in st.stats.get("workers") or []
            if isinstance(w, dict) and (v := _value(w, path)) is not None
        ]
        if not found_w:
            continue
        lines.append(f"# HELP {metric} {help_text}")
        lines.append(f"# TYPE {metric} {kind}")
        for st, w, v in found_w:
            labels = (
                f'agent="{label_value(st.name)}",site="{label_value(st.site)}",'
                f'worker="{w.get("worker", 0)}"'
            )
            lines.append(f"{metric}{{{labels}}} {number(v)}")
    return "\n".join(lines) + "\n" if lines else ""


@dataclass(frozen=True, slots=True)
class OverloadedAgent:
    """An agent that is overloaded now, as the overview names it beside its series."""

    name: str
    site: str
    overload: dict[str, Any]  # the agent's ``stats.overload`` document


def overloaded_series(conn: Connection) -> dict[int, OverloadedAgent]:
    """Series run by an agent that is alive and overloaded now (usually none: one cheap
    query over ``agent_assignments`` and the overloaded agents' rows)."""
    rows = conn.execute(
        text(
            "select x.series_id, a.name, a.site, a.stats -> 'overload' from agents a "
            "join agent_assignments x on x.agent = a.name "
            "where (a.stats -> 'overload' ->> 'active')::boolean "
            "and not coalesce((a.stats ->> 'stopped')::boolean, false) "
            "and a.heartbeat_at > now() - make_interval(secs => :alive)"
        ),
        {"alive": ALIVE_S},
    ).all()
    return {sid: OverloadedAgent(name, site, dict(doc or {})) for sid, name, site, doc in rows}
