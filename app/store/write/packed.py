"""Packed raw samples: closed UTC days rewritten into one compressed row per series and hour.

A row of ``samples`` costs ~166 bytes on disk (tuple header, line pointer, index
entries). Once a day is closed and rolled up, :func:`compact_day` rewrites it into
``samples_packed``: one row per (series_id, hour) holding one array per sample
column, which TOAST compresses (timings ~5 bytes, repeated text next to nothing).
The day's row partition is emptied (kept, so late writes and ``oldest()`` still
find it). ``scheduled_at`` is stored as the hour plus ``at0_us + k * step_us +
at_dev_us[k]`` microseconds (``step_us`` is the series' interval, so a regular
series stores zeros), ``started_at`` as microseconds after ``scheduled_at``;
everything else as is. Lossless: every column comes back identical.

Reads go through the SQL function ``connwatch_samples(ids, lo, hi, failed_only)``
(migration 0004), which returns both forms in ``samples`` column order.

Late writes into a packed day (a spool replay, an import) go to the day's row
partition; :func:`drop_packed_duplicates` (called by the writer) drops the samples
that are already packed, and the next :func:`compact_day` of that day merges the
rest in. Layout and figures: docs/store.md, "Bytes per sample".
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.samples import Sample
from app.store.layout import COLUMNS, ORIGIN_SQL, driver_connection, no_jit
from app.store.write.partitions import PARTITION_LOCK

# pg_advisory_xact_lock(PACK_LOCK, day ordinal): compaction holds it exclusively, a
# writer into a packed day shares it while it checks and inserts.
PACK_LOCK = 727277

# The sample columns kept as plain arrays (everything after scheduled_at, started_at).
ARRAY_COLUMNS: tuple[str, ...] = COLUMNS[3:]

PACKED_PREFIX = "samples_packed_p"


def day_part(day: date, prefix: str = "samples_p") -> str:
    return f"{prefix}{day:%Y%m%d}"


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    d0 = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return d0, d0 + timedelta(days=1)


def unpack_sql(source: str, where: str = "true") -> str:
    """SELECT of the samples held by the packed rows ``p`` of ``source`` matching ``where``,
    in ``samples`` column order (the arrays unnested in lockstep in the select list)."""
    at = "y.at0_us + y.k * y.step_us + y.at_dev_us"
    return (
        f"select y.series_id, y.hour_ + ({at}) * interval '1 microsecond' as scheduled_at, "
        f"y.hour_ + ({at} + y.start_us) * interval '1 microsecond' as started_at, "
        + ", ".join(f"y.{c}" for c in ARRAY_COLUMNS)
        + " from (select p.hour as hour_, p.series_id, p.at0_us, p.step_us, "
        "generate_series(0, p.n - 1) as k, unnest(p.at_dev_us) as at_dev_us, "
        "unnest(p.start_us) as start_us, "
        + ", ".join(f"unnest(p.{c}) as {c}" for c in ARRAY_COLUMNS)
        + f" from {source} p where {where}) y"
    )


def _pack_sql(row_part: str, packed_part: str) -> str:
    """Rows of ``samples_packed`` for one day: the day's packed samples merged with its
    row partition, one sample per (series_id, scheduled_at) (a packed one wins)."""
    cols = ", ".join(COLUMNS)
    hour = f"date_bin('1 hour', d.scheduled_at, {ORIGIN_SQL})"

    def arr(c: str) -> str:
        return f"case when count({c}) = 0 then null else array_agg({c}) end"

    return (
        "with src as ("
        f"select 0 as pri, {cols} from ({unpack_sql(packed_part)}) pk "
        f"union all select 1 as pri, {cols} from {row_part}), "
        f"dedup as (select distinct on (series_id, scheduled_at) {cols} from src "
        "order by series_id, scheduled_at, pri), "
        f"num as (select d.*, {hour} as hour, "
        f"(extract(epoch from d.scheduled_at - {hour}) * 1000000)::bigint as off_us, "
        "row_number() over w - 1 as k, coalesce(se.interval_ms, 0)::bigint * 1000 as step_us "
        "from dedup d left join series se on se.id = d.series_id "
        f"window w as (partition by d.series_id, {hour} order by d.scheduled_at)), "
        "rel as (select num.*, first_value(off_us) over w as at0_us from num "
        "window w as (partition by series_id, hour order by k) "
        "order by series_id, hour, k) "
        "select series_id, hour, count(*)::int as n, "
        "(count(*) filter (where status <> 'ok'))::int as n_not_ok, "
        "min(at0_us) as at0_us, min(step_us) as step_us, "
        "array_agg(off_us - at0_us - k * step_us) as at_dev_us, "
        "array_agg((extract(epoch from started_at - scheduled_at) * 1000000)::bigint) "
        "as start_us, " + ", ".join(f"{arr(c)} as {c}" for c in ARRAY_COLUMNS) + " "
        "from rel group by series_id, hour"
    )


@dataclass(slots=True)
class CompactReport:
    day: date | None = None
    samples: int = 0  # samples in the day's packed rows after compaction
    rows_merged: int = 0  # row-form samples folded in (all of them the first time)
    packed_rows: int = 0  # (series, hour) rows written
    seconds: float = 0.0


def compact_day(engine: Engine, day: date) -> CompactReport:
    """Rewrite one UTC day into packed rows (merging rows packed before) and empty its
    row partition, in one transaction. Idempotent: a second run finds nothing to do.

    Locks: the day's advisory lock (writers into the day wait), EXCLUSIVE on the row
    partition while packing (readers go on), then ACCESS EXCLUSIVE on it only for the
    final swap (DELETE + INSERT of the day's packed rows, TRUNCATE of the row
    partition). Readers lock the row partition before the packed one, and so does this,
    so the two cannot deadlock; the packed partition is created beforehand in its own
    transaction, never while a reader could hold the row partition.
    """
    t0 = time.perf_counter()
    report = CompactReport(day=day)
    row_part, packed_part = day_part(day), day_part(day, PACKED_PREFIX)
    with engine.begin() as conn:
        if conn.execute(text("select to_regclass(:p)"), {"p": packed_part}).scalar() is None:
            conn.execute(text("select pg_advisory_xact_lock(:k)"), {"k": PARTITION_LOCK})
            conn.execute(text("select connwatch_ensure_packed_partition(:d)"), {"d": day})
    with engine.begin() as conn:
        no_jit(conn)
        conn.exec_driver_sql("set local max_parallel_workers_per_gather = 0")
        conn.execute(
            text("select pg_advisory_xact_lock(:k, :d)"), {"k": PACK_LOCK, "d": day.toordinal()}
        )
        if conn.execute(text("select to_regclass(:p)"), {"p": row_part}).scalar() is None:
            return report
        # Writers wait (readers do not) until the day is rewritten.
        conn.exec_driver_sql(f'lock table "{row_part}" in exclusive mode')
        pending = conn.exec_driver_sql(f'select count(*) from "{row_part}"').scalar_one()
        packed_before = conn.execute(
            text("select exists (select 1 from samples_packed_days where day = :d)"), {"d": day}
        ).scalar_one()
        if not pending and packed_before:
            report.seconds = time.perf_counter() - t0
            return report
        conn.exec_driver_sql(
            f"create temp table _cw_pack on commit drop as {_pack_sql(row_part, packed_part)}"
        )
        report.packed_rows, report.samples = conn.exec_driver_sql(
            "select count(*), coalesce(sum(n), 0) from _cw_pack"
        ).one()
        conn.exec_driver_sql(f'lock table "{row_part}" in access exclusive mode')
        conn.exec_driver_sql(f'delete from "{packed_part}"')
        conn.exec_driver_sql(f'insert into "{packed_part}" select * from _cw_pack')
        conn.exec_driver_sql(f'truncate "{row_part}"')
        conn.execute(
            text(
                "insert into samples_packed_days (day, packed_at, samples) "
                "values (:d, now(), :n) on conflict (day) do update "
                "set packed_at = excluded.packed_at, samples = excluded.samples"
            ),
            {"d": day, "n": report.samples},
        )
        conn.exec_driver_sql("drop table _cw_pack")
        report.rows_merged = int(pending)
    report.seconds = time.perf_counter() - t0
    return report


def compactable_days(
    conn: Connection, *, after_days: int, now: datetime | None = None
) -> list[date]:
    """Days due for (re)compaction, oldest first: their row partition ended at least
    ``after_days`` days before ``now``, holds rows, and none of its minutes still waits
    for its rollup."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    cut = now - timedelta(days=max(1, after_days))
    names = conn.execute(
        text(
            "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid "
            "where i.inhparent = to_regclass('samples') order by c.relname"
        )
    ).scalars()
    out: list[date] = []
    for name in names:
        stamp = name.removeprefix("samples_p")
        if len(stamp) != 8 or not stamp.isdigit():
            continue
        day = datetime.strptime(stamp, "%Y%m%d").date()
        d0, d1 = _day_bounds(day)
        if d1 > cut:
            break
        has_rows = conn.exec_driver_sql(f'select exists (select 1 from "{name}")').scalar()
        if not has_rows:
            continue
        dirty = conn.execute(
            text("select exists (select 1 from rollup_dirty where bucket >= :a and bucket < :b)"),
            {"a": d0, "b": d1},
        ).scalar()
        if not dirty:
            out.append(day)
    return out


def compact_pending(
    engine: Engine, *, after_days: int, now: datetime | None = None, max_days: int = 1
) -> list[CompactReport]:
    """Compact up to ``max_days`` due days (oldest first), one transaction each."""
    with engine.connect() as conn:
        days = compactable_days(conn, after_days=after_days, now=now)
    return [compact_day(engine, d) for d in days[:max_days]]


def drop_packed_duplicates(
    conn: Connection | psycopg.Connection[Any], samples: Sequence[Sample]
) -> list[Sample]:
    """``samples`` without those already stored in packed form (same series_id and
    scheduled_at), for the writer.

    No query unless a sample is older than yesterday (UTC; compaction never touches
    younger days). Otherwise it takes a shared lock on each such day, held until the
    caller's transaction ends (a compaction of the day waits for the write, and a
    compaction under way makes the write wait until it committed), then one query on
    ``samples_packed_days``, and only when a day is packed one more reading the packed
    (series, hour) rows the batch touches.
    """
    yesterday, _ = _day_bounds(datetime.now(UTC).date() - timedelta(days=1))
    # one comparison per sample in the usual case (a batch of recent samples)
    old = {s.scheduled_at.astimezone(UTC).date() for s in samples if s.scheduled_at < yesterday}
    if not old:
        return list(samples)
    raw = driver_connection(conn)
    with raw.cursor() as cur:
        cur.execute(
            "select count(pg_advisory_xact_lock_shared(%s, d - date '0001-01-01' + 1)) "
            "from unnest(%s::date[]) d",
            (PACK_LOCK, sorted(old)),
        )
        # a new statement, so it sees what a compaction we waited for committed
        cur.execute("select day from samples_packed_days where day = any(%s)", (sorted(old),))
        packed = {r[0] for r in cur.fetchall()}
        if not packed:
            return list(samples)
        keys = {
            (s.series_id, _hour(s.scheduled_at))
            for s in samples
            if s.scheduled_at.astimezone(UTC).date() in packed
        }
        sids = [k[0] for k in keys]
        hours = [k[1] for k in keys]
        cur.execute(
            "select y.series_id, y.hour + (y.at0_us + y.k * y.step_us + y.at_dev_us) "
            "* interval '1 microsecond' from (select p.series_id, p.hour, p.at0_us, "
            "p.step_us, generate_series(0, p.n - 1) as k, unnest(p.at_dev_us) as at_dev_us "
            "from samples_packed p join unnest(%s::integer[], %s::timestamptz[]) q(sid, hour) "
            "on p.series_id = q.sid and p.hour = q.hour "
            "where p.hour >= %s and p.hour <= %s) y",
            (sids, hours, min(hours), max(hours)),
        )
        have = {(r[0], r[1]) for r in cur.fetchall()}
    if not have:
        return list(samples)
    return [s for s in samples if (s.series_id, s.scheduled_at) not in have]


def _hour(t: datetime) -> datetime:
    return t.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
