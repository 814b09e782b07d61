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

from sqlalchemy.engine import Connection

from app.store.histogram.numpy_merge import merge, rollup_columns
from app.store.layout import HOUR, check_phase, no_jit
from app.store.read.timeseries import ms
from app.store.resolution import ceil_to, check_range, floor_to


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
    no_jit(conn)
    a, b = floor_to(start, HOUR.width), ceil_to(end, HOUR.width)
    cell = (
        "extract(isodow from bucket at time zone :tz)::int as k1, "
        "extract(hour from bucket at time zone :tz)::int as k2"
    )
    merged = merge(
        conn,
        f"select {cell}, {rollup_columns(phase)} from rollup_1h "
        "where series_id = any(:ids) and bucket >= :a and bucket < :b",
        {"ids": list(series_ids), "a": a, "b": b, "tz": tz},
        nkeys=2,
    )
    cells = [
        Cell(wd, hod, m.n, m.n_ok, m.n_error + m.n_timeout, m.count,
             ms(m.p50), ms(m.p95), ms(m.p99), ms(m.max))
        for (wd, hod), m in sorted(merged.items())
    ]  # fmt: skip
    return HeatmapResult(phase, tz, a, b, cells)
