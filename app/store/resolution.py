"""Which table serves a range, and at what step: the web never has to know.

The step is the smallest "nice" width giving at most ``max_points`` buckets. The
source is then:

- raw samples (exact percentiles) when the range is at most :data:`RAW_MAX_SPAN`
  (2 days) and raw data still exists for its start;
- otherwise the coarsest rollup whose width divides the step: 1-day rollups for
  steps of a day or more, 1-hour for steps of an hour or more, else 1-minute. Ranges
  longer than :data:`MINUTE_MAX_SPAN` (60 days) never use 1-minute rollups (the step
  is raised to at least an hour); a range reaching back past what a table still
  holds (retention) moves to the next coarser table.
- a finer table is only used while the rows to merge (series x range / width) stay
  within :data:`ROW_BUDGET`; beyond it the step is raised to the next table's width.
  This keeps every chart query around the 100 ms goal: at the default 300 points one
  series is drawn from 1-minute rollups up to ~6 days, from 1-hour rollups up to
  ~150 days, from 1-day rollups beyond.

Buckets are aligned to multiples of the step from Monday 2000-01-03 00:00 UTC, so
they line up across ranges (``Plan.start``/``end`` are the grid: the range floored
and ceiled to the step). What is read is exactly ``[start, end)`` from raw samples,
and whole rows of a rollup table (``Plan.data_start``/``data_end``), so the first
and last bucket may hold only part of a step.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import DAY, HOUR, MINUTE, RAW, Grain

RAW_MAX_SPAN = timedelta(days=2)
MINUTE_MAX_SPAN = timedelta(days=60)
ROW_BUDGET = 12_000
DEFAULT_POINTS = 300
ORIGIN = datetime(2000, 1, 3, tzinfo=UTC)
STEPS: tuple[timedelta, ...] = tuple(
    timedelta(seconds=s)
    for s in (
        10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
        86400, 2 * 86400, 7 * 86400,
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Plan:
    grain: Grain
    step: timedelta
    start: datetime  # the bucket grid: start floored to the step
    end: datetime  # exclusive, end ceiled to the step
    data_start: datetime  # what is read: exactly start for raw, floored to the table's width
    data_end: datetime  # exclusive: exactly end for raw, ceiled to the table's width

    @property
    def buckets(self) -> int:
        """How many step buckets the range touches (an upper bound on points per series)."""
        return int((self.end - self.start) / self.step)


def floor_to(t: datetime, step: timedelta) -> datetime:
    return ORIGIN + ((t.astimezone(UTC) - ORIGIN) // step) * step


def ceil_to(t: datetime, step: timedelta) -> datetime:
    f = floor_to(t, step)
    return f if f == t else f + step


def check_range(start: datetime, end: datetime) -> None:
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be timezone-aware")
    if end <= start:
        raise ValueError(
            f"empty range: end {end.isoformat()} is not after start {start.isoformat()}"
        )


def oldest(conn: Connection, parent: str) -> datetime | None:
    """Start of the oldest partition of a day/month-partitioned table (None if none)."""
    name = conn.execute(
        text(
            "select min(c.relname) from pg_inherits i join pg_class c on c.oid = i.inhrelid "
            "where i.inhparent = to_regclass(:p)"
        ),
        {"p": parent},
    ).scalar_one_or_none()
    if not name:
        return None
    stamp = name.rsplit("_p", 1)[1]
    fmt = "%Y%m%d" if len(stamp) == 8 else "%Y%m"
    return datetime.strptime(stamp, fmt).replace(tzinfo=UTC)


def choose(
    start: datetime,
    end: datetime,
    max_points: int = DEFAULT_POINTS,
    *,
    n_series: int = 1,
    raw_from: datetime | None = None,
    minute_from: datetime | None = None,
    allow_raw: bool = True,
) -> Plan:
    """Pure planning (``raw_from``/``minute_from``: oldest data still held, None = all)."""
    check_range(start, end)
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    span = end - start
    step = next((s for s in STEPS if span / s <= max_points), STEPS[-1])
    raw_ok = allow_raw and span <= RAW_MAX_SPAN and (raw_from is None or start >= raw_from)
    if raw_ok:
        return Plan(RAW, step, floor_to(start, step), ceil_to(end, step), start, end)
    if span > MINUTE_MAX_SPAN or (minute_from is not None and start < minute_from):
        step = max(step, HOUR.width)
    step = max(step, MINUTE.width)
    if step < HOUR.width and n_series * (span / MINUTE.width) > ROW_BUDGET:
        step = HOUR.width
    if step < DAY.width and n_series * (span / HOUR.width) > ROW_BUDGET:
        step = DAY.width
    if step >= DAY.width and step % DAY.width == timedelta(0):
        grain = DAY
    elif step >= HOUR.width and step % HOUR.width == timedelta(0):
        grain = HOUR
    else:
        grain = MINUTE
    return Plan(
        grain,
        step,
        floor_to(start, step),
        ceil_to(end, step),
        floor_to(start, grain.width),
        ceil_to(end, grain.width),
    )


def plan(
    conn: Connection,
    start: datetime,
    end: datetime,
    max_points: int = DEFAULT_POINTS,
    *,
    n_series: int = 1,
    allow_raw: bool = True,
) -> Plan:
    """:func:`choose` with the oldest raw day and 1-minute month read from the catalog."""
    return choose(
        start,
        end,
        max_points,
        n_series=n_series,
        raw_from=oldest(conn, "samples"),
        minute_from=oldest(conn, "rollup_1m"),
        allow_raw=allow_raw,
    )
