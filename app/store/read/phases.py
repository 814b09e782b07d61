"""The logon's round trips over time: per series and bucket, the median of each phase.

Phases are kept only on raw samples (``samples.logon_phases``, JSONB, nanoseconds),
so this reads raw samples (row and packed days alike, through
``connwatch_samples``) of at most :data:`MAX_SPAN`: a longer window is cut to its
last :data:`MAX_SPAN` (the result's ``start`` says where it begins). Only ``ok``
samples count. Each value is the nearest-rank median of that phase in the bucket;
stacked, the medians come close to, but are not exactly, the bucket's logon p50.
Phase names are the data's own (whatever the probes recorded); order them with
:func:`app.samples.logon_phase_key`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import ORIGIN_SQL, no_jit
from app.store.resolution import RAW_MAX_SPAN, STEPS, ceil_to, check_range, floor_to

MAX_SPAN = RAW_MAX_SPAN


@dataclass(frozen=True, slots=True)
class PhasePoint:
    series_id: int
    bucket: datetime
    phase: str
    p50_ms: float
    n: int  # ok samples of the bucket that recorded this phase


@dataclass(frozen=True, slots=True)
class PhaseResult:
    step: timedelta
    start: datetime  # first bucket (the window, cut to MAX_SPAN, floored to the step)
    end: datetime
    cut: bool  # the window was longer than MAX_SPAN
    points: list[PhasePoint]


_SQL = (
    f"select s.series_id, date_bin(:step, s.scheduled_at, {ORIGIN_SQL}) as b, kv.key, "
    "percentile_disc(0.5) within group (order by kv.value::bigint), count(*)::int "
    "from connwatch_samples(cast(:ids as integer[]), :a, :b) s "
    "cross join lateral jsonb_each_text(s.logon_phases) kv "
    "where s.status = 'ok' and s.logon_phases is not null "
    "group by 1, 2, 3 order by 1, 2"
)


def logon_phases(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    max_points: int = 200,
) -> PhaseResult:
    """Median of each logon phase per (series, bucket) in ``[start, end)``."""
    check_range(start, end)
    cut = end - start > MAX_SPAN
    if cut:
        start = end - MAX_SPAN
    step = next((s for s in STEPS if (end - start) / s <= max_points), STEPS[-1])
    a, b = floor_to(start, step), ceil_to(end, step)
    no_jit(conn)
    rows = conn.execute(
        text(_SQL), {"ids": list(series_ids), "a": start, "b": end, "step": step}
    ).all()
    points = [PhasePoint(r[0], r[1], r[2], int(r[3]) / 1e6, r[4]) for r in rows]
    return PhaseResult(step, a, b, cut, points)
