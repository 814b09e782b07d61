""" "Test now": run one probe on request from the web, through the store.

The web never imports probes. It inserts a row into ``probe_requests`` (see
docs/agent.md for the contract) and may ``NOTIFY connwatch_probe_requests``; every
running agent polls for pending rows about twice a second, claims a few with
``FOR UPDATE SKIP LOCKED`` (so each request runs once, on one agent), runs the
probe once through the shared runner and stores the outcome:

- ``status = 'done'``: the probe ran; ``result`` is the sample as JSON
  (:func:`app.agent.output.records.to_json`: every phase, the logon's round-trip
  breakdown, sid/serial/instance/server type, and the error class/code/message of
  a failed run) plus ``agent`` and ``site``;
- ``status = 'error'``: the probe could not be run (no such mode, bad parameters,
  an unresolvable password reference); ``result = {"error": "<message>"}``.

No password ever reaches ``result``: the sample holds none and error messages are
sanitised by the runner. A request claimed by an agent that died is marked
``error`` after :data:`STALE_S` seconds. The SQL over the table is in
:mod:`app.store.probe_requests` (the web inserts and reads requests through it too).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import Any

from sqlalchemy.engine import Connection

from app.agent.output.records import to_json
from app.agent.scheduling.specs import SeriesRow, SpecError, build_spec, load_for_request
from app.config import Settings
from app.probes.base import ProbeConfigError
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.secrets import Vault

# the table side (claim, finish, expire, the row) lives in the store, shared with the web
from app.store.probe_requests import (
    CHANNEL,
    CLAIM_LIMIT,
    STALE_S,
    ProbeRequest,
    claim,
    expire_stale,
    finish,
)

__all__ = [
    "CHANNEL",
    "CLAIM_LIMIT",
    "STALE_S",
    "ProbeRequest",
    "claim",
    "expire_stale",
    "finish",
    "load_row",
    "run_request",
]


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
