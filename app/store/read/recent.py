"""What the last minutes look like per series, cheaply: for the overview and ``/metrics``.

- :func:`activity`: per series, the newest sample's scheduled time and how many samples
  (and how many ok / failed) were scheduled in the last 5 and 15 minutes, and the code
  of the newest failure: one count over the raw samples of the last 15 minutes, no
  percentiles; failed means the target's failures (probe-side errors and skipped runs
  are counted apart);
- :func:`minute_points`: the stored 1-minute rollup rows of a range as chart points
  (exact per-minute percentiles, computed once by the rollup pass), so an hour's
  sparkline reads 60 rows per series instead of re-aggregating raw samples. A minute
  not rolled up yet (the current one, until the next maintenance pass) is absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import ORIGIN_SQL, check_phase, failed_sql, probe_side_sql
from app.store.read.timeseries import Point, stored_columns, stored_point
from app.store.resolution import check_range


@dataclass(frozen=True, slots=True)
class Activity:
    last_at: datetime  # scheduled time of the newest sample (any status)
    n_5m: int  # samples scheduled in the last 5 minutes
    ok_5m: int
    n_15m: int  # ... in the last 15 minutes
    failed_15m: int  # the target's failures: error or timeout, probe-side errors excluded
    last_code: str | None = None  # code of the newest failed sample of the 15 minutes
    last_failed_at: datetime | None = None
    # runs that did not measure the target: probe-side errors and skipped runs
    unmeasured_5m: int = 0
    probe_15m: int = 0  # probe-side errors (class PROBE) in the last 15 minutes


def activity(conn: Connection, series_ids: Sequence[int], now: datetime) -> dict[int, Activity]:
    """series id -> its last 15 minutes up to ``now`` (series without samples: absent)."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    if not series_ids:
        return {}
    rows = conn.execute(
        text(
            "select series_id, max(scheduled_at), "
            "(count(*) filter (where scheduled_at >= :b5))::int, "
            "(count(*) filter (where scheduled_at >= :b5 and status = 'ok'))::int, "
            f"count(*)::int, (count(*) filter (where {failed_sql()}))::int, "
            "(array_agg(coalesce(error_code, status) order by scheduled_at desc) "
            f"filter (where {failed_sql()}))[1], "
            f"max(scheduled_at) filter (where {failed_sql()}), "
            "(count(*) filter (where scheduled_at >= :b5 "
            f"and (status = 'skipped' or {probe_side_sql()})))::int, "
            f"(count(*) filter (where {probe_side_sql()}))::int "
            "from connwatch_samples(cast(:ids as integer[]), :b15, "
            ":now + interval '1 microsecond') group by series_id"
        ),
        {
            "ids": list(series_ids),
            "b5": now - timedelta(minutes=5),
            "b15": now - timedelta(minutes=15),
            "now": now,
        },
    ).all()
    return {r[0]: Activity(*r[1:]) for r in rows}


def minute_points(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
) -> list[Point]:
    """The 1-minute rollup rows of ``[start, end)`` (start floored to its minute), in order."""
    check_phase(phase)
    check_range(start, end)
    if not series_ids:
        return []
    rows = conn.execute(
        text(
            f"select {stored_columns(phase)} from rollup_1m where series_id = any(:ids) "
            f"and bucket >= date_bin('1 minute', cast(:a as timestamptz), {ORIGIN_SQL}) "
            "and bucket < :b order by 1, 2"
        ),
        {"ids": list(series_ids), "a": start, "b": end},
    ).all()
    return [stored_point(r) for r in rows]
