"""Raw samples in: the idempotent batch writer.

Rows are COPYed (binary) into a session-local staging table, then moved with
``INSERT ... ON CONFLICT DO NOTHING`` in one statement that also queues the touched
(series, minute) pairs for the rollups. The key is (series_id, scheduled_at), so
writing a batch twice (a retry, a spool replay, an overlapping import) stores each
sample once. Missing daily partitions are created first. The writer runs in the
caller's transaction: use ``with engine.begin() as conn``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from datetime import UTC, date
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy.engine import Connection

from app.samples import Sample
from app.store.layout import COLUMNS, ORIGIN_SQL, SAMPLE_TYPES, driver_connection
from app.store.partitions import ensure_sample_days

_get = operator.attrgetter(*COLUMNS)
_JSON_COLS = (COLUMNS.index("logon_phases"), COLUMNS.index("extra"))


class SampleWriteError(ValueError):
    """A sample in a batch cannot be stored; the message names it."""


def _validate(samples: Sequence[Sample]) -> set[date]:
    days: set[date] = set()
    for n, s in enumerate(samples):
        if s.series_id is None:
            raise SampleWriteError(f"sample #{n} has no series_id")
        if s.scheduled_at.tzinfo is None or s.started_at.tzinfo is None:
            raise SampleWriteError(
                f"sample #{n} (series {s.series_id}) has a naive timestamp; use UTC-aware ones"
            )
        days.add(s.scheduled_at.astimezone(UTC).date())
    return days


def _ensure_stage(raw: psycopg.Connection[Any]) -> None:
    with raw.cursor() as cur:
        cur.execute("select to_regclass('pg_temp._cw_stage')")
        row = cur.fetchone()
        if row is None or row[0] is None:
            cur.execute(
                "create temp table _cw_stage (like samples including defaults) "
                "on commit delete rows"
            )
        else:
            cur.execute("truncate _cw_stage")


def write_samples(conn: Connection | psycopg.Connection[Any], samples: Sequence[Sample]) -> int:
    """Store ``samples`` once each; return how many were new (duplicates are skipped).

    Runs inside the caller's transaction (the caller commits). Raises
    :class:`SampleWriteError` before writing anything if a sample lacks a series or
    has naive timestamps.
    """
    if not samples:
        return 0
    days = _validate(samples)
    if isinstance(conn, Connection):
        ensure_sample_days(conn, days)
    else:
        with conn.cursor() as cur:
            for d in sorted(days):
                cur.execute("select connwatch_ensure_sample_partitions(%s, %s)", (d, d))
    raw = driver_connection(conn)
    _ensure_stage(raw)
    with raw.cursor() as cur:
        copy_sql = sql.SQL("copy _cw_stage ({}) from stdin (format binary)").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS)
        )
        with cur.copy(copy_sql) as cp:
            cp.set_types(list(SAMPLE_TYPES))
            for s in samples:
                row = list(_get(s))
                for j in _JSON_COLS:
                    if row[j] is not None:
                        row[j] = Jsonb(row[j])
                if row[3] is not None:
                    row[3] = str(row[3])
                if row[13] is not None:
                    row[13] = str(row[13])
                cp.write_row(row)
        cur.execute(
            "with ins as (insert into samples select * from _cw_stage "
            "on conflict do nothing returning series_id, scheduled_at), "
            "d as (insert into rollup_dirty (series_id, bucket) "
            f"select distinct series_id, date_bin('1 minute', scheduled_at, {ORIGIN_SQL}) "
            # DO UPDATE (a no-op) locks an existing pair until this transaction ends, so a
            # rollup pass cannot take and clear it before these samples are visible.
            "from ins on conflict (bucket, series_id) do update set bucket = excluded.bucket) "
            "select count(*) from ins"
        )
        got = cur.fetchone()
        cur.execute("truncate _cw_stage")
    return int(got[0]) if got else 0
