""" "Test now": ask an agent to run one probe on a mode, then read its answer.

The web never runs probes itself (it does not import them). It inserts a row into
the agent's ``probe_requests`` table (migration 0020, contract in docs/agent.md)
and sends ``NOTIFY connwatch_probe_requests`` so a listening agent wakes at once;
agents also poll. The page then polls ``/api/v1/probe-requests/{id}``:

- ``pending`` -> ``running`` (claimed by an agent) -> ``done`` with ``result`` = the
  sample as JSON (phases in ns, ``logon_phases``, round trips, sid, error code...);
- or ``error`` with ``result = {"error": message}`` (the probe could not run).

The result never holds a password: samples carry none and messages are sanitised.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

CHANNEL = "connwatch_probe_requests"
DEFAULT_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    id: int
    target_id: int
    mode_id: int
    probe: str
    status: str
    requested_at: datetime
    finished_at: datetime | None
    agent: str | None
    result: dict[str, Any] | None

    @property
    def error(self) -> str | None:
        if self.status == "error" and self.result is not None:
            msg = self.result.get("error")
            return str(msg) if msg is not None else None
        return None


def create(
    conn: Connection,
    target_id: int,
    mode_id: int,
    probe: str = "connping",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> int:
    """Queue one probe run (the caller commits; the NOTIFY is delivered at commit)."""
    row = conn.execute(
        text(
            "insert into probe_requests (target_id, mode_id, probe, timeout_ms) "
            "values (:t, :m, :p, :to) returning id"
        ),
        {"t": target_id, "m": mode_id, "p": probe, "to": timeout_ms},
    ).one()
    request_id = int(row[0])
    conn.execute(text("select pg_notify(:c, :id)"), {"c": CHANNEL, "id": str(request_id)})
    return request_id


def get(conn: Connection, request_id: int) -> ProbeRequest | None:
    r = conn.execute(
        text(
            "select id, target_id, mode_id, probe, status, requested_at, finished_at, "
            "claimed_by, result from probe_requests where id = :i"
        ),
        {"i": request_id},
    ).first()
    if r is None:
        return None
    return ProbeRequest(
        int(r.id),
        int(r.target_id),
        int(r.mode_id),
        str(r.probe),
        str(r.status),
        r.requested_at,
        r.finished_at,
        r.claimed_by,
        dict(r.result) if r.result is not None else None,
    )
