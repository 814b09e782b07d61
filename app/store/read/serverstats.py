"""What the server saw, out: server-side series for charts and a window's summary.

Readings come from the serverstats probe (``server_stats``, one row per run and
instance; ``server_stats_1h`` per hour). Charts use the same bucket grid as the latency
charts (:func:`app.store.resolution.choose`: same range, same step, at least the
readings' interval), so one x axis serves both: buckets finer than an hour read the raw
rows (kept ``retention_raw_days``; such steps come only with ranges of a few days), an
hour or more the hourly rows. Each point is the
mean and the max of a metric over the bucket's readings; a bucket without readings is
absent (never interpolated). Metric names and meanings: :mod:`app.probes.serverstats`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.layout import HOUR, ORIGIN_SQL, SERVER_CHART_METRICS, no_jit
from app.store.resolution import DEFAULT_POINTS, STEPS, ceil_to, check_range, choose, floor_to

# The numbers charted under the latency charts, in order (also server_stats.chart's order).
CHART_METRICS: tuple[str, ...] = SERVER_CHART_METRICS
SUMMARY_METRICS: tuple[str, ...] = (
    *CHART_METRICS,
    "pool_requests_per_s",
    "pool_hit_pct",
    "pool_timeouts_per_s",
    "authpool_waiters",
    "dispatcher_wait_ms",
    "logons_current",
    "processes",
    "processes_max",
    "processes_limit",
    "sessions",
    "sessions_limit",
    "shared_servers_highwater",
    "shared_servers_max",
    "circuits",
)


@dataclass(frozen=True, slots=True)
class ServerPoint:
    bucket: datetime
    mean: float
    max: float


@dataclass(slots=True)
class InstanceSeries:
    inst_id: int
    instance: str | None
    metrics: dict[str, list[ServerPoint]] = field(default_factory=dict)
    resets: list[datetime] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ServerSeries:
    source: str  # "raw" or "1h"
    step: timedelta
    start: datetime
    end: datetime
    instances: list[InstanceSeries]


def serverstats_series_ids(conn: Connection, target_id: int) -> list[int]:
    """The serverstats series of a target (any mode, any site)."""
    return list(
        conn.execute(
            text(
                "select s.id from series s join modes m on m.id = s.mode_id "
                "where m.target_id = :t and s.probe = 'serverstats' order by s.id"
            ),
            {"t": target_id},
        ).scalars()
    )


def _metric_sql(names: tuple[str, ...], source: str) -> str:
    """Each row's jsonb is read once (``jsonb_to_record``), not once per metric."""
    if source == "raw":
        # the charted figures from the narrow chart array; rows written before it
        # existed (migration 0016) from the jsonb
        def value(m: str) -> str:
            if m not in SERVER_CHART_METRICS:
                return f"(s.metrics->>'{m}')::float8"
            i = SERVER_CHART_METRICS.index(m) + 1
            return f"coalesce(s.chart[{i}], (s.metrics->>'{m}')::float8)"

        cols = ", ".join(f"avg({value(m)}), max({value(m)})" for m in names)
        return (
            f"select date_bin(cast(:step as interval), s.scheduled_at, {ORIGIN_SQL}) as b, "
            f"s.inst_id, max(s.instance), bool_or(s.reset), {cols} "
            "from server_stats s where s.series_id = any(:ids) and s.scheduled_at >= :start "
            "and s.scheduled_at < :end group by 1, 2 order by 2, 1"
        )
    record = ", ".join(f"{m} float8[]" for m in names)  # [mean, max, n]
    cols = ", ".join(
        f"sum(m.{m}[1] * m.{m}[3]) / nullif(sum(m.{m}[3]), 0), max(m.{m}[2])" for m in names
    )
    return (
        f"select date_bin(cast(:step as interval), s.bucket, {ORIGIN_SQL}) as b, "
        f"s.inst_id, max(s.instance), sum(s.n_reset) > 0, {cols} "
        f"from server_stats_1h s cross join lateral jsonb_to_record(s.metrics) as m({record}) "
        "where s.series_id = any(:ids) and s.bucket >= :start "
        "and s.bucket < :end group by 1, 2 order by 2, 1"
    )


def server_series(
    conn: Connection,
    series_ids: list[int],
    start: datetime,
    end: datetime,
    *,
    metrics: tuple[str, ...] = CHART_METRICS,
    max_points: int = DEFAULT_POINTS,
    min_step: timedelta = timedelta(0),
) -> ServerSeries:
    """Per instance and metric, (bucket, mean, max) on the latency charts' bucket grid,
    its buckets at least ``min_step`` wide (the readings' interval: a bucket narrower than
    that would hold a reading only now and then, and the line would break between)."""
    check_range(start, end)
    grid = choose(start, end, max_points)
    want = max(grid.step, min_step)
    step = next((s for s in STEPS if s >= want), STEPS[-1])
    source = "raw"  # steps under an hour only come with ranges well inside raw retention
    if step >= HOUR.width:
        source = "1h"
        step = max(step, HOUR.width)
    out = ServerSeries(source, step, floor_to(start, step), ceil_to(end, step), [])
    if not series_ids:
        return out
    no_jit(conn)
    rows = conn.execute(
        text(_metric_sql(metrics, source)),
        {"step": f"{int(step.total_seconds())} seconds", "ids": series_ids}
        | {"start": out.start, "end": out.end},
    )
    by_inst: dict[int, InstanceSeries] = {}
    for row in rows:
        bucket, inst_id, instance, reset = row[0], int(row[1]), row[2], bool(row[3])
        inst = by_inst.setdefault(inst_id, InstanceSeries(inst_id, instance))
        if reset:
            inst.resets.append(bucket)
        for i, name in enumerate(metrics):
            mean, top = row[4 + 2 * i], row[5 + 2 * i]
            if mean is not None:
                inst.metrics.setdefault(name, []).append(
                    ServerPoint(bucket, float(mean), float(top))
                )
    out.instances.extend(by_inst[k] for k in sorted(by_inst))
    return out


@dataclass(frozen=True, slots=True)
class MetricSummary:
    mean: float | None
    max: float | None
    before_mean: float | None  # the same length of time just before the window


@dataclass(slots=True)
class InstanceSummary:
    inst_id: int
    instance: str | None
    readings: int
    resets: int
    metrics: dict[str, MetricSummary] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ServerWindow:
    start: datetime
    end: datetime
    instances: list[InstanceSummary]
    unavailable: dict[str, str]  # the latest run's views it could not read
    classes: dict[str, dict[str, float]]  # per connection class: mean rates in the window


def _summary_sql(names: tuple[str, ...]) -> str:
    record = ", ".join(f"{m} float8" for m in names)
    cols = ", ".join(
        f"avg(m.{m}) filter (where s.scheduled_at >= :start), "
        f"max(m.{m}) filter (where s.scheduled_at >= :start), "
        f"avg(m.{m}) filter (where s.scheduled_at < :start)"
        for m in names
    )
    return (
        "select s.inst_id, max(s.instance), count(*) filter (where s.scheduled_at >= :start), "
        f"count(*) filter (where s.reset and s.scheduled_at >= :start), {cols} "
        f"from server_stats s cross join lateral jsonb_to_record(s.metrics) as m({record}) "
        "where s.series_id = any(:ids) and s.scheduled_at >= :before "
        "and s.scheduled_at < :end group by 1 order by 1"
    )


def server_window(
    conn: Connection, series_ids: list[int], start: datetime, end: datetime
) -> ServerWindow:
    """Mean and max of every summary metric per instance over [start, end), with the mean
    of the equally long stretch just before for comparison (raw readings)."""
    check_range(start, end)
    before = start - (end - start)
    out = ServerWindow(start, end, [], {}, {})
    if not series_ids:
        return out
    params: dict[str, Any] = {"ids": series_ids, "start": start, "end": end, "before": before}
    for row in conn.execute(text(_summary_sql(SUMMARY_METRICS)), params):
        if not row[2]:
            continue
        inst = InstanceSummary(int(row[0]), row[1], int(row[2]), int(row[3]))
        for i, name in enumerate(SUMMARY_METRICS):
            mean, top, prior = row[4 + 3 * i], row[5 + 3 * i], row[6 + 3 * i]
            if mean is not None or top is not None:
                inst.metrics[name] = MetricSummary(
                    _f(mean), _f(top), None if prior is None else float(prior)
                )
        out.instances.append(inst)
    latest = conn.execute(
        text(
            "select unavailable from server_stats where series_id = any(:ids) "
            "and scheduled_at >= :start and scheduled_at < :end "
            "order by scheduled_at desc limit 1"
        ),
        params,
    ).scalar_one_or_none()
    out.unavailable.update(latest or {})
    for name, rate, mean in conn.execute(
        text(
            "select c.key, r.key, avg(r.value::float8) from server_stats s "
            "cross join lateral jsonb_each(coalesce(s.classes, '{}'::jsonb)) c "
            "cross join lateral jsonb_each_text(c.value) r "
            "where s.series_id = any(:ids) and s.scheduled_at >= :start "
            "and s.scheduled_at < :end group by 1, 2 order by 1, 2"
        ),
        params,
    ):
        out.classes.setdefault(name, {})[rate] = round(float(mean), 4)
    return out


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True, slots=True)
class LogonCost:
    """Per series: logons with the server's own time, their medians (ms)."""

    n: int
    server_p50_ms: float | None
    client_p50_ms: float | None


def server_logon_cost(
    conn: Connection, series_ids: list[int], start: datetime, end: datetime
) -> dict[int, LogonCost]:
    """Median server time per logon (connping's ``server_time``: V$SESS_TIME_MODEL) and the
    median client logon of the same samples, per series, from raw samples in the window."""
    if not series_ids:
        return {}
    rows = conn.execute(
        text(
            "select series_id, count(*), "
            "percentile_cont(0.5) within group (order by (extra->>'server_logon_ms')::float8), "
            "percentile_cont(0.5) within group (order by logon_ns) / 1e6 "
            "from samples where series_id = any(:ids) and scheduled_at >= :start "
            "and scheduled_at < :end and status = 'ok' and extra ? 'server_logon_ms' "
            "group by series_id"
        ),
        {"ids": series_ids, "start": start, "end": end},
    )
    return {int(r[0]): LogonCost(int(r[1]), _f(r[2]), _f(r[3])) for r in rows}
