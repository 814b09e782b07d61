""" "Test now": run one probe on request from the web, through the store.

The web never imports probes. It inserts a row into ``probe_requests`` (see
docs/agent.md for the contract) and may ``NOTIFY connwatch_probe_requests``; every
running agent polls for pending rows about twice a second, claims a few with
``FOR UPDATE SKIP LOCKED`` (so each request runs once, on one agent), runs the
probe once through the shared runner and stores the outcome:

- ``status = 'done'``: the probe ran; ``result`` is the sample as JSON
  (:func:`app.agent.records.to_json`: every phase, the logon's round-trip
  breakdown, sid/serial/instance/server type, and the error class/code/message of
  a failed run) plus ``agent`` and ``site``;
- ``status = 'error'``: the probe could not be run (no such mode, bad parameters,
  an unresolvable password reference); ``result = {"error": "<message>"}``.

No password ever reaches ``result``: the sample holds none and error messages are
sanitised by the runner. A request claimed by an agent that died is marked
``error`` after :data:`STALE_S` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.agent.records import to_json
from app.agent.specs import SeriesRow, SpecError, build_spec, load_for_request
from app.config import Settings
from app.credentials import Vault
from app.probes.base import ProbeConfigError
from app.probes.registry import create_probe
from app.probes.runner import run_once

CHANNEL = "connwatch_probe_requests"
STALE_S = 600
CLAIM_LIMIT = 4


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    id: int
    target_id: int
    mode_id: int
    probe: str
    params: dict[str, Any]
    timeout_ms: int


def claim(conn: Connection, agent: str, site: str, limit: int = CLAIM_LIMIT) -> list[ProbeRequest]:
    """Claim up to ``limit`` pending requests for this agent's site (or any site)."""
    rows = conn.execute(
        text(
            "update probe_requests set status = 'running', claimed_by = :a, claimed_at = now() "
            "where id in (select id from probe_requests where status = 'pending' "
            "and (site is null or site = :s) order by id for update skip locked limit :n) "
            "returning id, target_id, mode_id, probe, params, timeout_ms"
        ),
        {"a": agent, "s": site, "n": limit},
    ).all()
    return [ProbeRequest(*r) for r in sorted(rows)]


def finish(conn: Connection, request_id: int, status: str, result: dict[str, Any]) -> None:
    conn.execute(
        text(
            "update probe_requests set status = :st, result = cast(:r as jsonb), "
            "finished_at = now() where id = :id"
        ),
        {"st": status, "r": json.dumps(result, default=str), "id": request_id},
    )


def expire_stale(conn: Connection) -> int:
    """Requests claimed by an agent that never finished them: mark them failed."""
    return conn.execute(
        text(
            "update probe_requests set status = 'error', finished_at = now(), "
            "result = jsonb_build_object('error', 'agent ' || coalesce(claimed_by, '?') || "
            "' stopped before finishing this request') "
            "where status = 'running' and claimed_at < now() - make_interval(secs => :s)"
        ),
        {"s": STALE_S},
    ).rowcount


def load_row(conn: Connection, req: ProbeRequest) -> SeriesRow:
    return load_for_request(conn, req.target_id, req.mode_id, req.probe)


async def run_request(
    req: ProbeRequest,
    row: SeriesRow,
    vault: Vault,
    settings: Settings,
    *,
    agent: str,
    site: str,
) -> tuple[str, dict[str, Any]]:
    """Run the request's probe once; returns (status, result JSON)."""
    try:
        base = build_spec(
            row, vault, settings, agent=agent, site=site, deadline_s=req.timeout_ms / 1000.0
        )
        spec = replace(base, params=dict(req.params or {}), series_id=None)
        probe = create_probe(spec)
    except (SpecError, ProbeConfigError) as exc:
        return "error", {"error": str(exc)}
    try:
        sample = await run_once(probe)
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2.0):
                await probe.close()
    doc = to_json(sample)
    doc["target_id"], doc["mode_id"], doc["probe"] = req.target_id, req.mode_id, req.probe
    return "done", doc
