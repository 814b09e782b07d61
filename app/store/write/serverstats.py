"""What the server saw, in: the serverstats probe's readings into their own tables.

A serverstats run is a sample like any other (failures included). Its readings travel in
``extra["serverstats"]`` through the writer and the spool; :func:`split_server_stats`
takes them out of the sample (which keeps a short summary: ``server_instances``, the
instance names, and ``server_unavailable``, the views it could not read) and
:func:`write_server_stats` stores them, in the same transaction as the samples:

1. one ``server_stats`` row per run and instance (``ON CONFLICT DO NOTHING``: a replayed
   batch is stored once), its charted figures also in ``chart`` (a narrow ``real[]`` in
   :data:`~app.store.layout.SERVER_CHART_METRICS` order: charts read it, not the jsonb);
2. the ``server_stats_1h`` rows of every (series, hour) touched are recomputed from the
   raw rows (per metric: mean, max, count of non-null values), under a per-series
   advisory lock so two writers of one series cannot lose each other's rows.

:func:`prune_server_stats` applies retention (raw: ``retention_raw_days``, hourly:
``retention_1h_days``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import Sample
from app.store.layout import ORIGIN_SQL, SERVER_CHART_METRICS, driver_connection

KEY = "serverstats"

_INSERT = (
    "insert into server_stats (series_id, scheduled_at, inst_id, instance, startup, "
    "interval_s, reset, metrics, classes, unavailable, chart) "
    "select r.series_id, r.scheduled_at, r.inst_id, r.instance, r.startup, r.interval_s, "
    "r.reset, coalesce(r.metrics, '{}'::jsonb), r.classes, r.unavailable, r.chart "
    "from jsonb_to_recordset(%s::jsonb) as r(series_id int, scheduled_at timestamptz, "
    "inst_id smallint, instance text, startup text, interval_s float8, reset boolean, "
    "metrics jsonb, classes jsonb, unavailable jsonb, chart real[]) "
    "on conflict do nothing"
)
_HOUR = f"date_bin('1 hour', s.scheduled_at, {ORIGIN_SQL})"
_REHOUR = f"""
with touched as (
  select distinct t.series_id, t.bucket
  from unnest(%s::int4[], %s::timestamptz[]) as t(series_id, bucket)),
rows as (
  select s.* from server_stats s join touched t on s.series_id = t.series_id
  and s.scheduled_at >= t.bucket and s.scheduled_at < t.bucket + interval '1 hour'),
heads as (
  select s.series_id, {_HOUR} as bucket, s.inst_id, max(s.instance) as instance,
         count(*) as n, count(*) filter (where s.reset) as n_reset
  from rows s group by 1, 2, 3),
vals as (
  select s.series_id, {_HOUR} as bucket, s.inst_id, e.key,
         avg(e.value::float8) as a, max(e.value::float8) as m, count(*) as n
  from rows s cross join lateral jsonb_each(s.metrics) e
  where jsonb_typeof(e.value) = 'number'
  group by 1, 2, 3, 4)
insert into server_stats_1h (series_id, bucket, inst_id, instance, n, n_reset, metrics)
select h.series_id, h.bucket, h.inst_id, h.instance, h.n, h.n_reset,
       coalesce((select jsonb_object_agg(v.key, jsonb_build_array(v.a, v.m, v.n))
                 from vals v where v.series_id = h.series_id and v.bucket = h.bucket
                 and v.inst_id = h.inst_id), '{{}}'::jsonb)
from heads h
on conflict (series_id, bucket, inst_id) do update set instance = excluded.instance,
  n = excluded.n, n_reset = excluded.n_reset, metrics = excluded.metrics
"""
_LOCK = (
    "select pg_advisory_xact_lock(hashtext('connwatch.server_stats'), s) from unnest(%s::int4[]) s"
)


def split_server_stats(samples: Sequence[Sample]) -> tuple[list[Sample], list[dict[str, Any]]]:
    """The samples without their readings, and the readings as ``server_stats`` rows."""
    out: list[Sample] = []
    rows: list[dict[str, Any]] = []
    for s in samples:
        reading = s.extra.get(KEY) if s.extra else None
        if not isinstance(reading, dict):
            out.append(s)
            continue
        extra = {k: v for k, v in s.extra.items() if k != KEY}
        instances = reading.get("instances") or []
        extra["server_instances"] = [i.get("instance") for i in instances]
        if reading.get("unavailable"):
            extra["server_unavailable"] = reading["unavailable"]
        out.append(dataclasses.replace(s, extra=extra))
        for inst in instances:
            rows.append(
                {
                    "series_id": s.series_id,
                    "scheduled_at": s.scheduled_at.isoformat(),
                    "inst_id": int(inst.get("inst_id") or 1),
                    "instance": inst.get("instance"),
                    "startup": inst.get("startup"),
                    "interval_s": inst.get("interval_s"),
                    "reset": bool(inst.get("reset")),
                    "metrics": inst.get("metrics") or {},
                    "chart": [(inst.get("metrics") or {}).get(m) for m in SERVER_CHART_METRICS],
                    "classes": inst.get("classes") or None,
                    "unavailable": reading.get("unavailable") or None,
                }
            )
    return out, rows


def _hour(at: datetime) -> datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def write_server_stats(
    conn: Connection | psycopg.Connection[Any], rows: list[dict[str, Any]]
) -> None:
    """Store readings (rows of :func:`split_server_stats`) and recompute their hours; runs
    in the caller's transaction."""
    if not rows:
        return
    raw = driver_connection(conn)
    touched = sorted(
        {(r["series_id"], _hour(datetime.fromisoformat(r["scheduled_at"]))) for r in rows}
    )
    series = sorted({s for s, _ in touched})
    raw.execute(_LOCK, (series,))
    raw.execute(_INSERT, (json.dumps(rows),))
    raw.execute(_REHOUR, ([s for s, _ in touched], [h for _, h in touched]))


def prune_server_stats(conn: Connection, *, raw_days: int, hour_days: int, now: datetime) -> int:
    """Delete readings past retention; returns how many raw rows went."""
    res = conn.execute(
        text("delete from server_stats where scheduled_at < :cut"),
        {"cut": now - timedelta(days=raw_days)},
    )
    conn.execute(
        text("delete from server_stats_1h where bucket < :cut"),
        {"cut": now - timedelta(days=hour_days)},
    )
    return res.rowcount or 0
