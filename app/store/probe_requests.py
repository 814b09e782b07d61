""" "Test now" requests: the ``probe_requests`` table, read and written by the web and the agent.

The contract (docs/agent.md): the web :func:`insert` s a row (``pending``) and notifies
``connwatch_probe_requests``; an agent :func:`claim` s pending rows of its site with
``FOR UPDATE SKIP LOCKED`` (``running``: once, on one agent), runs the probe and
:func:`finish` es the row (``done`` with the sample as JSON, or ``error`` with
``{"error": message}``); :func:`expire_stale` fails rows whose agent died; :func:`get`
reads one row for the page that polls it. This module imports no probe: it is SQL only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

CHANNEL = "connwatch_probe_requests"
DEFAULT_TIMEOUT_MS = 10_000
STALE_S = 600  # a request running this long belongs to an agent that died
CLAIM_LIMIT = 4

_COLUMNS = (
    "id, target_id, mode_id, probe, params, timeout_ms, site, status, requested_at, "
    "claimed_by, finished_at, result"
)


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    id: int
    target_id: int
    mode_id: int
    probe: str
    params: dict[str, Any]
    timeout_ms: int
    site: str | None
    status: str  # pending, running, done or error
    requested_at: datetime
    claimed_by: str | None  # the agent that took it
    finished_at: datetime | None
    result: dict[str, Any] | None

    @property
    def error(self) -> str | None:
        """The message of a request that could not run (status ``error``)."""
        if self.status == "error" and self.result is not None:
            msg = self.result.get("error")
            return str(msg) if msg is not None else None
        return None


def _request(r: Any) -> ProbeRequest:
    return ProbeRequest(
        int(r.id),
        int(r.target_id),
        int(r.mode_id),
        str(r.probe),
        dict(r.params or {}),
        int(r.timeout_ms),
        r.site,
        str(r.status),
        r.requested_at,
        r.claimed_by,
        r.finished_at,
        dict(r.result) if r.result is not None else None,
    )


def insert(
    conn: Connection,
    target_id: int,
    mode_id: int,
    probe: str = "connping",
    *,
    params: dict[str, Any] | None = None,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    site: str | None = None,
    notify: bool = True,
) -> int:
    """Queue one probe run; returns its id. The caller commits (a NOTIFY is sent at commit)."""
    request_id = int(
        conn.execute(
            text(
                "insert into probe_requests (target_id, mode_id, probe, params, timeout_ms, site) "
                "values (:t, :m, :p, cast(:pa as jsonb), :to, :s) returning id"
            ),
            {
                "t": target_id,
                "m": mode_id,
                "p": probe,
                "pa": json.dumps(params or {}),
                "to": timeout_ms,
                "s": site,
            },
        ).scalar_one()
    )
    if notify:
        conn.execute(text("select pg_notify(:c, :id)"), {"c": CHANNEL, "id": str(request_id)})
    return request_id


def claim(conn: Connection, agent: str, site: str, limit: int = CLAIM_LIMIT) -> list[ProbeRequest]:
    """Claim up to ``limit`` pending requests for ``site`` (or any site), oldest first."""
    rows = conn.execute(
        text(
            "update probe_requests set status = 'running', claimed_by = :a, claimed_at = now() "
            "where id in (select id from probe_requests where status = 'pending' "
            "and (site is null or site = :s) order by id for update skip locked limit :n) "
            f"returning {_COLUMNS}"
        ),
        {"a": agent, "s": site, "n": limit},
    ).all()
    return sorted((_request(r) for r in rows), key=lambda r: r.id)


def finish(conn: Connection, request_id: int, status: str, result: dict[str, Any]) -> None:
    """Store the outcome: ``done`` with the sample as JSON, or ``error`` with ``{"error": ...}``."""
    conn.execute(
        text(
            "update probe_requests set status = :st, result = cast(:r as jsonb), "
            "finished_at = now() where id = :id"
        ),
        {"st": status, "r": json.dumps(result, default=str), "id": request_id},
    )


def expire_stale(conn: Connection, stale_s: float = STALE_S) -> int:
    """Requests claimed by an agent that never finished them: mark them failed."""
    return conn.execute(
        text(
            "update probe_requests set status = 'error', finished_at = now(), "
            "result = jsonb_build_object('error', 'agent ' || coalesce(claimed_by, '?') || "
            "' stopped before finishing this request') "
            "where status = 'running' and claimed_at < now() - make_interval(secs => :s)"
        ),
        {"s": stale_s},
    ).rowcount


def get(conn: Connection, request_id: int) -> ProbeRequest | None:
    r = conn.execute(
        text(f"select {_COLUMNS} from probe_requests where id = :i"), {"i": request_id}
    ).first()
    return _request(r) if r is not None else None
