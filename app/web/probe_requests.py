""" "Test now": ask an agent to run one connping on a mode, then read its answer.

The web never runs probes itself (it does not import them). It inserts a row
into the agent's ``probe_requests`` table (defined and documented by the agent:
``docs/agent.md``) and the page polls ``/api/v1/probe-requests/{id}`` until an
agent has stored the result (a sample as JSON, which never holds a password).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    id: int
    mode_id: int
    probe: str
    status: str
    requested_at: datetime
    finished_at: datetime | None
    agent: str | None
    result: dict[str, Any] | None
    error: str | None


def create(conn: Connection, mode_id: int, probe: str = "connping") -> int:
    row = conn.execute(
        text("insert into probe_requests (mode_id, probe) values (:m, :p) returning id"),
        {"m": mode_id, "p": probe},
    ).one()
    return int(row[0])


def get(conn: Connection, request_id: int) -> ProbeRequest | None:
    r = conn.execute(
        text(
            "select id, mode_id, probe, status, requested_at, finished_at, agent, result, error "
            "from probe_requests where id = :i"
        ),
        {"i": request_id},
    ).first()
    if r is None:
        return None
    return ProbeRequest(
        int(r.id),
        int(r.mode_id),
        str(r.probe),
        str(r.status),
        r.requested_at,
        r.finished_at,
        r.agent,
        dict(r.result) if r.result is not None else None,
        r.error,
    )
