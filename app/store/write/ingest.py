"""Raw samples in: the idempotent batch writer.

The key of ``samples`` is (series_id, scheduled_at), so writing a batch twice (a
retry, a spool replay, an overlapping import) must store each sample once. Most
batches are new, so the writer first tries the fast path:

1. binary ``COPY`` straight into ``samples`` inside a savepoint, then
2. queue the batch's distinct (series, minute) pairs for the rollups with one
   ``unnest`` statement (the pairs are computed here, from the batch).

Only if the COPY hits a duplicate key does it roll back to the savepoint and take
the merge path: COPY into a session-local staging table, then ``INSERT ... ON
CONFLICT DO NOTHING`` in one statement that also queues the pairs of the rows it
really inserted. Either way the function returns how many samples were new.

Daily partitions are created for days this process has not seen yet (and again if
retention dropped one meanwhile: the COPY then fails with "no partition", which
clears the memory and retries once). The writer runs in the caller's transaction:
use ``with engine.begin() as conn``.
"""

from __future__ import annotations

import json
import operator
import threading
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format
from sqlalchemy.engine import Connection

from app.samples import Sample
from app.store.layout import COLUMNS, ORIGIN_SQL, SAMPLE_TYPES, driver_connection
from app.store.write.packed import drop_packed_duplicates
from app.store.write.partitions import ensure_sample_days
from app.store.write.serverstats import split_server_stats, write_server_stats

# A row for binary COPY is the sample's fields in table order, as they are: with the
# types set on the COPY, psycopg dumps str enums as text, and dicts as jsonb with
# _JsonbDumper below.
_row = operator.attrgetter(*COLUMNS)
_TYPES = list(SAMPLE_TYPES)
_COLUMN_LIST = sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS)
_COPY_SAMPLES = sql.SQL("copy samples ({}) from stdin (format binary)").format(_COLUMN_LIST)
_COPY_STAGE = sql.SQL("copy _cw_stage ({}) from stdin (format binary)").format(_COLUMN_LIST)

# Rollup buckets are ``date_bin('1 minute', scheduled_at, ORIGIN)``. ORIGIN is a whole
# number of minutes after the Unix epoch, so that bucket is the scheduled instant
# floored to its minute: minute number m = (t - epoch) // 1 minute, bucket = epoch + m.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = _EPOCH.date()
_MINUTE = timedelta(minutes=1)
_MINUTES_PER_DAY = 1440

# Queue (series, minute) pairs for the rollups. A pair already queued is locked FOR
# KEY SHARE until this transaction ends, so a rollup pass (FOR UPDATE SKIP LOCKED)
# cannot take and clear it before these samples are visible; writers do not block
# each other on it. Missing pairs are inserted in key order (ON CONFLICT DO NOTHING).
# The statement returns the pairs it could neither lock nor insert (another
# transaction queued or cleared them meanwhile): _mark_dirty tries those again.
_MARK_DIRTY = (
    "with p as (select s, m, timestamptz '1970-01-01 00:00:00+00' + m * interval '1 minute' b "
    "from unnest(cast(%s as int4[]), cast(%s as int8[])) as p(s, m)), "
    "held as materialized (select r.series_id, r.bucket from rollup_dirty r "
    "join p on r.series_id = p.s and r.bucket = p.b for key share of r), "
    "todo as materialized (select s, m, b from p where not exists "
    "(select 1 from held h where h.series_id = p.s and h.bucket = p.b)), "
    "new as (insert into rollup_dirty (series_id, bucket) select s, b from todo order by b, s "
    "on conflict do nothing returning series_id, bucket) "
    "select m, s from todo where not exists "
    "(select 1 from new n where n.series_id = todo.s and n.bucket = todo.b) order by m, s"
)
# After this many tries, the pairs left take the exclusive lock of a no-op DO UPDATE.
_MARK_TRIES = 5
_MARK_DIRTY_UPDATE = (
    "insert into rollup_dirty (series_id, bucket) "
    "select s, timestamptz '1970-01-01 00:00:00+00' + m * interval '1 minute' "
    "from unnest(cast(%s as int4[]), cast(%s as int8[])) as p(s, m) "
    "on conflict (bucket, series_id) do update set bucket = excluded.bucket"
)
# The merge path: insert what is new, return its pairs (and how many rows each).
_MERGE_STAGE = (
    "with ins as (insert into samples select * from _cw_stage "
    "on conflict do nothing returning series_id, scheduled_at) "
    f"select series_id, date_bin('1 minute', scheduled_at, {ORIGIN_SQL}), count(*) "
    "from ins group by 1, 2"
)

_encode_json = json.JSONEncoder().encode  # what json.dumps does, minus its argument checks


class _JsonbDumper(Dumper):
    """jsonb in binary (format version 1, then the JSON text); ``{}`` without encoding.

    Same output as psycopg's own jsonb dumper, at about a third of its cost per value
    (two jsonb columns per sample made it the largest part of encoding a row).
    """

    format = Format.BINARY
    oid = psycopg.postgres.types["jsonb"].oid

    def dump(self, obj: Any) -> Buffer | None:
        if not obj and isinstance(obj, dict):
            return b"\x01{}"
        return b"\x01" + _encode_json(obj).encode()


class SampleWriteError(ValueError):
    """A sample in a batch cannot be stored; the message names it."""


# Binary COPY packs a Python int into the column's width without a range check: a SID
# of 2**32 + 7 was stored as 7. The narrow integer columns (sid, serial, round_trips)
# and their range; the int8 nanosecond columns would need 292 years to overflow.
_INT_RANGES = {"int2": (-(2**15), 2**15 - 1), "int4": (-(2**31), 2**31 - 1)}
_INT_FIELDS = tuple(
    (name, *_INT_RANGES[kind])
    for name, kind in zip(COLUMNS, SAMPLE_TYPES, strict=True)
    if kind in _INT_RANGES and name != "series_id"
)


def _validate(samples: Sequence[Sample]) -> None:
    for n, s in enumerate(samples):
        if s.series_id is None:
            raise SampleWriteError(f"sample #{n} has no series_id")
        if s.scheduled_at.tzinfo is None or s.started_at.tzinfo is None:
            raise SampleWriteError(
                f"sample #{n} (series {s.series_id}) has a naive timestamp; use UTC-aware ones"
            )
        for name, lo, hi in _INT_FIELDS:
            v = getattr(s, name)
            if v is not None and not lo <= v <= hi:
                raise SampleWriteError(
                    f"sample #{n} (series {s.series_id}): {name} {v} does not fit the store's "
                    f"column ({lo}..{hi})"
                )


def minute_pairs(samples: Iterable[Sample]) -> list[tuple[int, int]]:
    """The distinct (minute number, series_id) pairs of ``samples``, sorted.

    Minute number m stands for the rollup bucket ``epoch + m minutes``, which equals
    ``date_bin('1 minute', scheduled_at, ORIGIN)``. Sorted in the order of the
    ``rollup_dirty`` key, so concurrent writers lock shared pairs in the same order.
    """
    epoch, minute = _EPOCH, _MINUTE
    return sorted({((s.scheduled_at - epoch) // minute, s.series_id or 0) for s in samples})


def _dbkey(raw: psycopg.Connection[Any]) -> tuple[str, int, str]:
    info = raw.info
    return (info.host, info.port, info.dbname)


class _KnownDays:
    """Days whose sample partition this process has seen, per database."""

    def __init__(self) -> None:
        self._days: dict[tuple[str, int, str], set[int]] = {}
        self._lock = threading.Lock()

    def missing(self, key: tuple[str, int, str], days: set[int]) -> set[int]:
        with self._lock:
            return days - self._days.get(key, set())

    def add(self, key: tuple[str, int, str], days: set[int]) -> None:
        with self._lock:
            self._days.setdefault(key, set()).update(days)

    def forget(self, key: tuple[str, int, str]) -> None:
        with self._lock:
            self._days.pop(key, None)


_known_days = _KnownDays()


def _ensure_days(conn: Connection | psycopg.Connection[Any], days: set[int]) -> None:
    """Create the partitions of these days (numbers since the epoch) unless known."""
    key = _dbkey(driver_connection(conn))
    todo = _known_days.missing(key, days)
    if not todo:
        return
    dates: list[date] = sorted(_EPOCH_DAY + timedelta(days=d) for d in todo)
    if isinstance(conn, Connection):
        ensure_sample_days(conn, dates)
    else:
        with conn.cursor() as cur:
            for d in dates:
                cur.execute("select connwatch_ensure_sample_partitions(%s, %s)", (d, d))
    # Known from now on; if this transaction rolls back or retention drops a day, the
    # COPY finds no partition and write_samples forgets and retries.
    _known_days.add(key, todo)


def _copy_rows(cur: psycopg.Cursor[Any], stmt: sql.Composed, samples: Sequence[Sample]) -> None:
    cur.adapters.register_dumper(dict, _JsonbDumper)  # this cursor only
    with cur.copy(stmt) as cp:
        cp.set_types(_TYPES)
        write = cp.write_row
        for s in samples:
            write(_row(s))


def _no_partition(exc: psycopg.Error) -> bool:
    return isinstance(exc, pg_errors.CheckViolation) and "no partition" in str(exc)


def _ensure_stage(cur: psycopg.Cursor[Any]) -> None:
    cur.execute("select to_regclass('pg_temp._cw_stage')")
    row = cur.fetchone()
    if row is None or row[0] is None:
        cur.execute(
            "create temp table _cw_stage (like samples including defaults) on commit delete rows"
        )
    else:
        cur.execute("truncate _cw_stage")


def _merge(raw: psycopg.Connection[Any], samples: Sequence[Sample]) -> int:
    """Staging table, then ``INSERT .. ON CONFLICT DO NOTHING``; returns the new rows."""
    with raw.cursor() as cur:
        _ensure_stage(cur)
        _copy_rows(cur, _COPY_STAGE, samples)
        cur.execute(_MERGE_STAGE)
        rows = cur.fetchall()
        cur.execute("truncate _cw_stage")
    _mark_dirty(raw, sorted({((b - _EPOCH) // _MINUTE, sid) for sid, b, _ in rows}))
    return sum(int(n) for _, _, n in rows)


def _arrays(pairs: list[tuple[int, int]]) -> tuple[str, str]:
    # Array literals as text: psycopg's list dumping costs ~10 us per element.
    series = "{" + ",".join([str(s) for _, s in pairs]) + "}"
    minutes = "{" + ",".join([str(m) for m, _ in pairs]) + "}"
    return series, minutes


def _mark_dirty(raw: psycopg.Connection[Any], pairs: list[tuple[int, int]]) -> None:
    """Queue (minute number, series_id) pairs (sorted) for the rollups; see _MARK_DIRTY."""
    for _ in range(_MARK_TRIES):
        if not pairs:
            return
        pairs = raw.execute(_MARK_DIRTY, _arrays(pairs)).fetchall()
    if pairs:
        raw.execute(_MARK_DIRTY_UPDATE, _arrays(pairs))


def _store(
    raw: psycopg.Connection[Any], samples: Sequence[Sample], pairs: list[tuple[int, int]]
) -> int:
    """The fast path, or the merge path if a sample is already stored; in a savepoint."""
    with raw.cursor() as cur:
        cur.execute("savepoint _cw_write")
        try:
            _copy_rows(cur, _COPY_SAMPLES, samples)
        except pg_errors.UniqueViolation:
            # Only a retry, a spool replay or an overlapping import gets here.
            cur.execute("rollback to savepoint _cw_write")
            new = _merge(raw, samples)
        else:
            _mark_dirty(raw, pairs)
            new = len(samples)
        cur.execute("release savepoint _cw_write")
    return new


def write_samples(conn: Connection | psycopg.Connection[Any], samples: Sequence[Sample]) -> int:
    """Store ``samples`` once each; return how many were new (duplicates are skipped).

    Runs inside the caller's transaction (the caller commits). Raises
    :class:`SampleWriteError` before writing anything if a sample lacks a series, has
    naive timestamps, or an integer its column cannot hold.
    """
    if not samples:
        return 0
    _validate(samples)
    # serverstats readings go to their own table (app.store.write.serverstats)
    samples, readings = split_server_stats(samples)
    # Samples of a compacted day that are already stored in packed form are not new.
    samples = drop_packed_duplicates(conn, samples)
    raw = driver_connection(conn)
    if raw.autocommit:  # no caller transaction (a bare psycopg connection): one of our own
        with raw.transaction():
            write_server_stats(raw, readings)
            return _write(conn, raw, samples) if samples else 0
    write_server_stats(raw, readings)
    return _write(conn, raw, samples) if samples else 0


def _write(
    conn: Connection | psycopg.Connection[Any],
    raw: psycopg.Connection[Any],
    samples: Sequence[Sample],
) -> int:
    pairs = minute_pairs(samples)
    days = {m // _MINUTES_PER_DAY for m, _ in pairs}
    _ensure_days(conn, days)
    try:
        return _store(raw, samples, pairs)
    except psycopg.Error as exc:
        if not _no_partition(exc):
            raise
    # A day this process took for created was dropped meanwhile (retention) or its
    # creation rolled back: forget what is known of this database, create, retry once.
    raw.execute("rollback to savepoint _cw_write")
    _known_days.forget(_dbkey(raw))
    _ensure_days(conn, days)
    return _store(raw, samples, pairs)
