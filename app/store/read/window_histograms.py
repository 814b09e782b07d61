"""Merged log-bucket histograms of one timing per series over the last minutes or hours.

One query over the 1-minute rollups (every row whose minute starts in ``[start, end)``,
``start`` floored to the minute): per series, the count and sum of the timing
(successful samples only) and its merged histogram, each bucket given by its
representative value (within 1.96 % of every value in it, :mod:`app.store.histogram.buckets`).
What ``/metrics`` exports as Prometheus histograms; cheap because it reads at most
60 rows per series and hour and does no bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.histogram.buckets import bucket_value
from app.store.layout import ORIGIN_SQL, check_phase
from app.store.read.timeseries import NS_PER_MS
from app.store.resolution import check_range


@dataclass(slots=True)
class Histogram:
    count: int = 0  # successful samples with this timing
    sum_ms: float = 0.0
    buckets: list[tuple[float, int]] = field(default_factory=list)  # (value ms, count), sorted


def histograms(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
) -> dict[int, Histogram]:
    """series id -> its histogram over the 1-minute rollups of ``[start, end)``.

    Series without a timed sample in the range are absent.
    """
    check_phase(phase)
    check_range(start, end)
    if not series_ids:
        return {}
    rows = conn.execute(
        text(
            "with r as (select series_id, "
            f"{phase}_n as n, {phase}_sum as sm, {phase}_hi as hi, {phase}_hc as hc "
            "from rollup_1m where series_id = any(:ids) "
            f"and bucket >= date_bin('1 minute', cast(:a as timestamptz), {ORIGIN_SQL}) "
            "and bucket < :b and coalesce(" + phase + "_n, 0) > 0) "
            "select series_id, null::int as i, sum(n)::bigint, sum(sm)::float8 from r group by 1 "
            "union all select r.series_id, u.i, sum(u.c)::bigint, null from r "
            "cross join lateral unnest(r.hi, r.hc) as u(i, c) group by 1, 2 order by 1, 2"
        ),
        {"ids": list(series_ids), "a": start, "b": end},
    ).all()
    out: dict[int, Histogram] = {}
    for sid, index, count, total in rows:
        h = out.setdefault(sid, Histogram())
        if index is None:
            h.count, h.sum_ms = int(count), float(total or 0.0) / NS_PER_MS
        else:
            h.buckets.append((float(bucket_value(index)) / NS_PER_MS, int(count)))
    return out
