"""Sweep results (seed 000's scaling chart): the latest sweep run of each mode in a window.

A sweep run is one sample whose ``extra["levels"]`` lists, per concurrency level,
the logon p50/p90 (ns), logons, errors and throughput (see ``app/probes/sweep.py``).
The store has no query for this (it is one row per mode), so it is read here: the
newest sample of each sweep series in the window.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.web.views.lookups import TargetInfo


class SweepMode(BaseModel):
    name: str
    color: str
    dash: str
    symbol: str
    at: datetime | None
    levels: list[int]
    p50: list[float | None]
    p90: list[float | None]
    throughput_per_s: list[float | None]
    errors: list[int]


class SweepOut(BaseModel):
    target: str
    resolution: str = "raw"
    modes: list[SweepMode]


def _ms(stats: Any, key: str) -> float | None:
    if isinstance(stats, dict) and isinstance(stats.get(key), int | float):
        return float(stats[key]) / 1e6
    return None


def latest_sweeps(
    conn: Connection, target: TargetInfo, start: datetime, end: datetime, mode_names: list[str]
) -> SweepOut:
    modes = [m for m in target.modes if m.name in mode_names]
    owner = {s.id: m for m in modes for s in m.series_for("sweep")}
    found: dict[int, Any] = {}
    if owner:
        rows = conn.execute(
            text(
                "select distinct on (series_id) series_id, scheduled_at, extra "
                "from connwatch_samples(cast(:ids as integer[]), :a, :b) "
                "where extra ? 'levels' order by series_id, scheduled_at desc"
            ),
            {"ids": list(owner), "a": start, "b": end},
        ).all()
        for r in rows:
            mid = owner[r.series_id].id
            if mid not in found or r.scheduled_at > found[mid].scheduled_at:
                found[mid] = r
    out = []
    for m in modes:
        run = found.get(m.id)
        levels = (
            [lv for lv in (run.extra.get("levels") or []) if isinstance(lv, dict)] if run else []
        )
        levels.sort(key=lambda lv: int(lv.get("level", 0)))
        out.append(
            SweepMode(
                name=m.name,
                **m.style,
                at=run.scheduled_at if run else None,
                levels=[int(lv.get("level", 0)) for lv in levels],
                p50=[_ms(lv.get("logon_ns"), "p50") for lv in levels],
                p90=[_ms(lv.get("logon_ns"), "p90") for lv in levels],
                throughput_per_s=[lv.get("throughput_per_s") for lv in levels],
                errors=[int(lv.get("errors", 0)) for lv in levels],
            )
        )
    return SweepOut(target=target.name, modes=out)
