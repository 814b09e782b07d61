"""Partitions ahead of time, and retention by dropping whole partitions.

Raw samples live in one partition per UTC day (``samples_pYYYYMMDD``, and once a day
is compacted ``samples_packed_pYYYYMMDD``, see :mod:`app.store.write.packed`), 1-minute and
1-hour rollups in one partition per UTC month (``rollup_1m_pYYYYMM``,
``rollup_1h_pYYYYMM``). Retention drops a partition once all of it is older than
the horizon; nothing is deleted row by row except from the small ``rollup_1d`` and
``rollup_1w`` (kept as long as the hours).
A raw day is never dropped while it still has minutes waiting to be rolled up.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.histogram.sql_merge import merged_sql
from app.store.layout import rollup_value_columns

_SAMPLE_PART = re.compile(r"^samples_(?:packed_)?p(\d{8})$")
_ROLLUP_PART = re.compile(r"^(rollup_1m|rollup_1h)_p(\d{6})$")

# Serialises partition DDL between concurrent writers and maintenance.
PARTITION_LOCK = 727275


@dataclass(slots=True)
class RetentionReport:
    dropped: list[str] = field(default_factory=list)
    kept_pending: list[str] = field(default_factory=list)  # raw days still waiting for rollup
    deleted_1d_rows: int = 0


def ensure_sample_partitions(conn: Connection, first: date, last: date) -> int:
    """Create the daily sample partitions covering ``first..last``; return how many were new."""
    if last < first:
        return 0
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    return ensure_sample_days(conn, days)


def ensure_sample_days(conn: Connection, days: Iterable[date]) -> int:
    """Create the daily sample partitions of exactly these days; return how many were new."""
    missing = (
        conn.execute(
            text(
                "select d from unnest(cast(:days as date[])) d "
                "where to_regclass('samples_p' || to_char(d, 'YYYYMMDD')) is null order by d"
            ),
            {"days": sorted(set(days))},
        )
        .scalars()
        .all()
    )
    if not missing:
        return 0
    conn.execute(text("select pg_advisory_xact_lock(:k)"), {"k": PARTITION_LOCK})
    created = 0
    for d in missing:
        created += conn.execute(
            text("select connwatch_ensure_sample_partitions(:a, :a)"), {"a": d}
        ).scalar_one()
    return created


def ensure_rollup_partitions(conn: Connection, first: date, last: date) -> int:
    """Create the monthly 1-minute and 1-hour rollup partitions covering ``first..last``."""
    created = 0
    for tbl in ("rollup_1m", "rollup_1h"):
        missing = conn.execute(
            text(
                "select count(*) from generate_series(date_trunc('month', cast(:a as date)), "
                "cast(:b as date), interval '1 month') m "
                "where to_regclass(:t || '_p' || to_char(m, 'YYYYMM')) is null"
            ),
            {"a": first, "b": last, "t": tbl},
        ).scalar_one()
        if missing:
            conn.execute(text("select pg_advisory_xact_lock(:k)"), {"k": PARTITION_LOCK})
            created += conn.execute(
                text("select connwatch_ensure_rollup_partitions(:t, :a, :b)"),
                {"t": tbl, "a": first, "b": last},
            ).scalar_one()
    return created


def ensure_partitions(conn: Connection, days_ahead: int = 7, now: datetime | None = None) -> int:
    """Partitions from yesterday to ``days_ahead`` days ahead (samples and rollups)."""
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    first, last = today - timedelta(days=1), today + timedelta(days=days_ahead)
    return ensure_sample_partitions(conn, first, last) + ensure_rollup_partitions(conn, first, last)


def partitions_of(conn: Connection, parent: str) -> list[str]:
    rows = conn.execute(
        text(
            "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid "
            "where i.inhparent = to_regclass(:p) order by c.relname"
        ),
        {"p": parent},
    ).scalars()
    return list(rows)


def apply_retention(
    conn: Connection,
    *,
    raw_days: int,
    minute_days: int,
    hour_days: int,
    now: datetime | None = None,
) -> RetentionReport:
    """Drop partitions entirely older than each horizon; prune ``rollup_1d`` beyond ``hour_days``.

    A partition is dropped when its upper bound is at or before ``now - days``.
    """
    now = (now or datetime.now(UTC)).astimezone(UTC)
    report = RetentionReport()
    raw_cut = now - timedelta(days=raw_days)
    pending_days = set(
        conn.execute(
            text(
                "select distinct (bucket at time zone 'UTC')::date from rollup_dirty "
                "where bucket < :cut"
            ),
            {"cut": raw_cut},
        ).scalars()
    )
    raw_parts = partitions_of(conn, "samples") + partitions_of(conn, "samples_packed")
    for name in raw_parts:
        m = _SAMPLE_PART.match(name)
        if not m:
            continue
        day = datetime.strptime(m.group(1), "%Y%m%d").replace(tzinfo=UTC)
        if day + timedelta(days=1) <= raw_cut:
            if day.date() in pending_days:
                report.kept_pending.append(name)
                continue
            conn.execute(text(f'drop table "{name}"'))
            report.dropped.append(name)
    conn.execute(
        text(
            "delete from samples_packed_days d where d.day + 1 <= cast(:cut as date) "
            "and to_regclass('samples_packed_p' || to_char(d.day, 'YYYYMMDD')) is null"
        ),
        {"cut": raw_cut.date()},
    )
    cuts = {
        "rollup_1m": now - timedelta(days=minute_days),
        "rollup_1h": now - timedelta(days=hour_days),
    }
    for parent, cut in cuts.items():
        for name in partitions_of(conn, parent):
            m = _ROLLUP_PART.match(name)
            if not m:
                continue
            start = datetime.strptime(m.group(2) + "01", "%Y%m%d").replace(tzinfo=UTC)
            end = (start + timedelta(days=32)).replace(day=1)
            if end <= cut:
                conn.execute(text(f'drop table "{name}"'))
                report.dropped.append(name)
    res = conn.execute(
        text("delete from rollup_1d where bucket < :cut"),
        {"cut": now - timedelta(days=hour_days)},
    )
    report.deleted_1d_rows = res.rowcount or 0
    retire_weeks(conn, now - timedelta(days=hour_days + 7))
    return report


def retire_weeks(conn: Connection, cut: datetime) -> int:
    """Delete the weekly rollups before ``cut`` and fold them into ``rollup_retired`` (one
    row per series, added), in the caller's transaction: what ``/metrics`` counts (weekly
    rows + retired row, app/store/read/totals.py) never goes down. Returns the weeks."""
    conn.execute(
        text(
            "create temp table _cw_gone on commit drop as with d as "
            "(delete from rollup_1w where bucket < :cut returning *) select * from d"
        ),
        {"cut": cut},
    )
    n = int(conn.execute(text("select count(*) from _cw_gone")).scalar_one())
    if n:
        vals = ", ".join(rollup_value_columns())
        src = (
            f"select series_id, {vals} from _cw_gone union all select series_id, {vals} "
            "from rollup_retired where series_id in (select series_id from _cw_gone)"
        )
        cols = ["series_id", "bucket", *rollup_value_columns()]
        merged = merged_sql(src, ["series_id"], raw=False)
        sets = ", ".join(f"{c} = excluded.{c}" for c in cols[1:])
        conn.execute(
            text(
                f"insert into rollup_retired ({', '.join(cols)}) "
                f"select m.series_id, cast(:cut as timestamptz), "
                f"{', '.join('m.' + c for c in rollup_value_columns())} from ({merged}) m "
                f"on conflict (series_id) do update set {sets}"
            ),
            {"cut": cut},
        )
    conn.execute(text("drop table _cw_gone"))
    return n
