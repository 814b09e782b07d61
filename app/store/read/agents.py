"""The agents' self-monitoring, read side: one status per ``agents`` row.

Each agent writes its row (heartbeat about once a second, counters in ``stats``; keys
documented in docs/agent.md). This module is the one reader, shared by the web (the
Agents page, ``/api/v1/agents``), ``/metrics`` (app/metrics: the ``connwatch_agent_*``
families are declared in app/metrics/registry.py) and the agent; it imports neither.
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


def label_value(value: str) -> str:
    """A Prometheus label value, escaped (backslash, double quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


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
