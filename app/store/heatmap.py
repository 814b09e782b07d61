"""Hour-of-day x weekday heatmap of one timing's percentiles over a range.

Cells merge the 1-hour rollups falling on that weekday and hour in the time zone
``tz`` (an IANA name; the hour containing each rollup's start, so for zones with a
half-hour offset a cell is shifted by that half hour). Percentiles are within 1.96 %.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import HOUR, check_phase
from app.store.merge import merged_sql
from app.store.resolution import ceil_to, check_range, floor_to
from app.store.timeseries import ms


@dataclass(frozen=True, slots=True)
class Cell:
    weekday: int  # 1 = Monday .. 7 = Sunday (ISO)
    hour: int  # 0..23 in the requested time zone
    n: int
    n_ok: int
    n_failed: int  # error + timeout
    count: int
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None


@dataclass(frozen=True, slots=True)
class HeatmapResult:
    phase: str
    tz: str
    start: datetime
    end: datetime
    cells: list[Cell]  # only cells with samples, ordered by weekday, hour


def check_tz(tz: str) -> str:
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {tz!r}; use an IANA name such as Europe/Paris"
        ) from None
    return tz


def heatmap(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
    tz: str = "UTC",
) -> HeatmapResult:
    check_phase(phase)
    check_range(start, end)
    check_tz(tz)
    a, b = floor_to(start, HOUR.width), ceil_to(end, HOUR.width)
    src = (
        "select extract(isodow from bucket at time zone :tz)::int as wd, "
        "extract(hour from bucket at time zone :tz)::int as hod, n, n_ok, n_error, n_timeout, "
        f"n_skipped, {phase}_n, {phase}_min, {phase}_max, {phase}_sum, {phase}_hi, {phase}_hc "
        "from rollup_1h where series_id = any(:ids) and bucket >= :a and bucket < :b"
    )
    merged = merged_sql(src, ["wd", "hod"], raw=False, phases=(phase,), errors=False, hist=False)
    rows = conn.execute(
        text(
            f"select wd, hod, n, n_ok, n_error + n_timeout, coalesce({phase}_n, 0), "
            f"{phase}_p50, {phase}_p95, {phase}_p99, {phase}_max from ({merged}) x "
            "order by wd, hod"
        ),
        {"ids": list(series_ids), "a": a, "b": b, "tz": tz},
    )
    cells = [
        Cell(r[0], r[1], r[2], r[3], r[4], r[5], ms(r[6]), ms(r[7]), ms(r[8]), ms(r[9]))
        for r in rows
    ]
    return HeatmapResult(phase, tz, a, b, cells)
