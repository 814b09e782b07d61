"""Raw samples out: filtered reads with keyset pagination, windows around incidents, CSV export.

The writer is :mod:`app.store.write.ingest`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg import sql
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.samples import ErrorClass, Sample, SampleStatus
from app.store.layout import COLUMNS, DAY, driver_connection, no_jit, probe_side_sql
from app.store.resolution import floor_to

# -- reading -------------------------------------------------------------------------

_SELECT = ", ".join(f"s.{c}" for c in COLUMNS)


def row_to_sample(r: Sequence[Any]) -> Sample:
    """A ``samples`` row (columns in :data:`COLUMNS` order) as a :class:`Sample`."""
    vals = list(r)
    vals[3] = SampleStatus(vals[3])
    if vals[13] is not None:
        try:
            vals[13] = ErrorClass(vals[13])
        except ValueError:
            vals[13] = ErrorClass.OTHER
    if vals[24] is None:
        vals[24] = {}
    return Sample(*vals)


@dataclass(frozen=True, slots=True)
class SamplePage:
    samples: list[Sample]
    next_cursor: str | None  # pass as ``after`` for the next page; None at the end


def encode_cursor(s: Sample) -> str:
    assert s.series_id is not None
    token = f"{s.scheduled_at.astimezone(UTC).isoformat()}|{s.series_id}"
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[datetime, int]:
    """Parse a cursor from :func:`encode_cursor`; ValueError (with the reason) if malformed."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        at, sid = raw.split("|")
        t = datetime.fromisoformat(at)
        if t.tzinfo is None:
            raise ValueError("naive time")
        return t, int(sid)
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise ValueError(f"invalid page cursor {token[:40]!r}: {exc}") from None


def resolve_series(
    conn: Connection,
    *,
    series_ids: Sequence[int] | None = None,
    target_id: int | None = None,
    mode_id: int | None = None,
) -> list[int]:
    """Series matching every given filter (all series when none is given)."""
    return list(
        conn.execute(
            text(
                "select s.id from series s join modes m on m.id = s.mode_id "
                "where (cast(:ids as integer[]) is null or s.id = any(cast(:ids as integer[]))) "
                "and (cast(:t as integer) is null or m.target_id = :t) "
                "and (cast(:m as integer) is null or s.mode_id = :m) order by s.id"
            ),
            {
                "ids": list(series_ids) if series_ids is not None else None,
                "t": target_id,
                "m": mode_id,
            },
        ).scalars()
    )


# Added to the filters when only failed samples can match: lets the planner use the
# partial index, and tells connwatch_samples() it may read failures only.
_FAILED_ONLY = "s.status <> 'ok'"


def _filters(
    statuses: Sequence[str] | None,
    error_code: str | None,
    params: dict[str, Any],
    probe_side: bool | None = None,
) -> list[str]:
    """SQL conditions of the filters. ``probe_side``: True keeps only probe-side errors
    (class PROBE), False leaves them out, None does not look."""
    cond: list[str] = []
    if statuses is not None:
        bad = [s for s in statuses if s not in {x.value for x in SampleStatus}]
        if bad:
            raise ValueError(f"unknown status {bad[0]!r}; expected ok, error, timeout or skipped")
        params["st"] = list(statuses)
        cond.append("s.status = any(:st)")
        if "ok" not in statuses:
            cond.append(_FAILED_ONLY)
    if error_code is not None:
        params["code"] = error_code
        cond += ["s.error_code = :code", _FAILED_ONLY]
    if probe_side is True:
        cond += [probe_side_sql("s"), _FAILED_ONLY]
    elif probe_side is False:
        cond.append("s.error_class is distinct from 'PROBE'")
    return cond


_US = timedelta(microseconds=1)
_FIRST_WINDOW = timedelta(hours=1)


def _windows(lo: datetime, hi: datetime, newest_first: bool) -> Iterator[tuple[datetime, datetime]]:
    """``[lo, hi)`` cut into windows growing from 1 hour (x6, then x2), walked from ``hi``
    down (newest first) or from ``lo`` up."""
    size = _FIRST_WINDOW
    while lo < hi:
        if newest_first:
            a = max(lo, hi - size)
            yield a, hi
            hi = a
        else:
            b = min(hi, lo + size)
            yield lo, b
            lo = b
        size = size * (6 if size == _FIRST_WINDOW else 2)


def _extent(conn: Connection, ids: list[int]) -> tuple[datetime | None, datetime | None]:
    """The oldest sample's time and just after the newest one of these series, in either
    form (packed rows count as their whole hour); (None, None) without samples."""
    row = conn.execute(
        text(
            "select least(min(r.lo), min(p.lo)), greatest(max(r.hi), max(p.hi)) "
            "from unnest(cast(:ids as integer[])) x(id) "
            "cross join lateral (select (select s.scheduled_at from samples s "
            "where s.series_id = x.id order by s.scheduled_at limit 1) as lo, "
            "(select s.scheduled_at + interval '1 microsecond' from samples s "
            "where s.series_id = x.id order by s.scheduled_at desc limit 1) as hi) r "
            "cross join lateral (select (select k.hour from samples_packed k "
            "where k.series_id = x.id order by k.hour limit 1) as lo, "
            "(select k.hour + interval '1 hour' from samples_packed k "
            "where k.series_id = x.id order by k.hour desc limit 1) as hi) p"
        ),
        {"ids": ids},
    ).one()
    return row[0], row[1]


def read_samples(
    conn: Connection,
    *,
    series_ids: Sequence[int] | None = None,
    target_id: int | None = None,
    mode_id: int | None = None,
    statuses: Sequence[str] | None = None,
    error_code: str | None = None,
    probe_side: bool | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    after: str | None = None,
    limit: int = 100,
    newest_first: bool = True,
) -> SamplePage:
    """Raw samples matching all filters, ordered by (scheduled_at, series_id), one page.

    Keyset pagination: ``after`` is the previous page's ``next_cursor``. ``end`` is
    exclusive. ``probe_side``: True only probe-side errors (class PROBE), False none of
    them. Raises ValueError for a bad cursor, status or limit.
    """
    if not 1 <= limit <= 10000:
        raise ValueError("limit must be between 1 and 10000")
    if any(t is not None and t.tzinfo is None for t in (start, end)):
        raise ValueError("start and end must be timezone-aware")
    params: dict[str, Any] = {}
    cond = _filters(statuses, error_code, params, probe_side)
    cursor = decode_cursor(after) if after is not None else None
    no_jit(conn)
    ids = resolve_series(conn, series_ids=series_ids, target_id=target_id, mode_id=mode_id)
    if not ids:
        return SamplePage([], None)
    params["ids"] = ids
    failed_only = _FAILED_ONLY in cond
    lo, hi = start, end
    if lo is None or hi is None:
        first, last = _extent(conn, ids)
        if first is None or last is None:
            return SamplePage([], None)
        lo = first if lo is None else lo
        hi = last if hi is None else hi
    op, order = ("<", "desc") if newest_first else (">", "asc")
    if cursor is not None:
        params["ct"], params["cs"] = cursor
        # (scheduled_at, series_id) beyond the cursor, written so the index range applies
        cond.append(f"s.scheduled_at {op}= :ct and (s.scheduled_at {op} :ct or x.id {op} :cs)")
        if newest_first:
            hi = min(hi, cursor[0] + _US)
        else:
            lo = max(lo, cursor[0])
    where = " and ".join(["true", *cond])
    query = text(
        f"select {_SELECT} from unnest(cast(:ids as integer[])) as x(id) "
        "cross join lateral (select s.* from connwatch_samples(array[x.id], :wa, :wb, :fo) s "
        f"where {where} order by s.scheduled_at {order} limit :lim) s "
        f"order by s.scheduled_at {order}, s.series_id {order} limit :lim"
    )
    params["fo"] = failed_only
    want = limit + 1
    rows: list[Any] = []
    # Newest (or oldest) first, window by window, growing: the first window usually
    # fills the page, and packed hours further away are never unpacked.
    for wa, wb in _windows(lo, hi, newest_first):
        params.update(wa=wa, wb=wb, lim=want - len(rows))
        rows += conn.execute(query, params).all()
        if len(rows) >= want:
            break
    samples = [row_to_sample(r) for r in rows[:limit]]
    nxt = encode_cursor(samples[-1]) if len(rows) > limit else None
    return SamplePage(samples, nxt)


def samples_around(
    conn: Connection, windows: Sequence[tuple[int, datetime, datetime]], limit: int = 500
) -> list[list[Sample]]:
    """Raw samples of each (series_id, start, end) window, oldest first, at most ``limit`` each."""
    if not windows:
        return []
    rows = conn.execute(
        text(
            f"select w.k, {_SELECT} from unnest(cast(:sids as integer[]), "
            "cast(:fs as timestamptz[]), cast(:ts as timestamptz[])) "
            "with ordinality as w(sid, f, t, k) cross join lateral ("
            "select * from connwatch_samples(array[w.sid], w.f, w.t) s "
            "order by s.scheduled_at limit :lim) s order by w.k"
        ),
        {
            "sids": [w[0] for w in windows],
            "fs": [w[1] for w in windows],
            "ts": [w[2] for w in windows],
            "lim": limit,
        },
    ).all()
    out: list[list[Sample]] = [[] for _ in windows]
    for r in rows:
        out[r[0] - 1].append(row_to_sample(r[1:]))
    return out


# -- CSV export ----------------------------------------------------------------------


def export_csv(
    engine: Engine,
    *,
    series_ids: Sequence[int] | None = None,
    target_id: int | None = None,
    mode_id: int | None = None,
    statuses: Sequence[str] | None = None,
    error_code: str | None = None,
    probe_side: bool | None = None,
    start: datetime,
    end: datetime,
) -> Iterator[bytes]:
    """Stream raw samples of ``[start, end)`` as CSV (header first), series by series,
    oldest first within a series (the order the primary key gives without sorting).

    A generator of byte chunks straight from PostgreSQL's ``COPY ... TO STDOUT``; it
    holds one connection until exhausted or closed. Validation errors (bad status,
    naive times) raise before the first chunk.
    """
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("start and end must be timezone-aware")
    with engine.connect() as conn:
        ids = resolve_series(conn, series_ids=series_ids, target_id=target_id, mode_id=mode_id)
    params: dict[str, Any] = {}
    cond = _filters(statuses, error_code, params, probe_side)
    return _stream(engine, ids, start, end, cond, params)


def _stream(
    engine: Engine,
    ids: list[int],
    start: datetime,
    end: datetime,
    cond: list[str],
    params: dict[str, Any],
) -> Iterator[bytes]:
    with engine.connect() as conn:
        names = {
            sid: (t, m)
            for sid, t, m in conn.execute(
                text(
                    "select se.id, t.name, m.name from series se join modes m on m.id = se.mode_id "
                    "join targets t on t.id = m.target_id where se.id = any(:ids)"
                ),
                {"ids": ids},
            )
        }
        first, last = _extent(conn, ids) if ids else (None, None)
    lits: dict[str, sql.Composable] = {k: sql.Literal(v) for k, v in params.items()}
    extra = "".join(f" and {c}" for c in cond)
    for k in params:
        extra = extra.replace(f":{k}", "{" + k + "}")

    cols = ", ".join(f"s.{c}" for c in COLUMNS)
    failed_only = sql.Literal(_FAILED_ONLY in cond)
    if first is None or last is None:
        first = last = start
    lo, hi = max(start, floor_to(first, DAY.width)), min(end, last)
    header = True
    with engine.connect() as conn:
        # A month of one series is costed high enough for JIT, whose compile time
        # (seconds with optimisation) would all come before the first row.
        no_jit(conn)
        conn.exec_driver_sql("set local max_parallel_workers_per_gather = 0")
        raw = driver_connection(conn)
        # Series by series, one UTC day at a time (a day of one series sorts in a few
        # ms, in either form), so the first chunk comes at once and nothing piles up.
        chunks: list[tuple[int | None, datetime, datetime]] = [
            (sid, a, b) for sid in ids for a, b in _day_windows(lo, hi)
        ] or [(None, start, start)]  # no rows: the header alone
        for sid, a, b in chunks:
            t, m = names.get(sid, (None, None)) if sid is not None else (None, None)
            query = sql.SQL(
                "copy (select {target}::text as target, {mode}::text as mode, " + cols + " "
                "from connwatch_samples(array[{sid}]::integer[], {a}, {b}, {fo}) s "
                "where true" + extra + " order by s.scheduled_at) "
                "to stdout with (format csv" + (", header" if header else "") + ")"
            ).format(
                target=sql.Literal(t),
                mode=sql.Literal(m),
                sid=sql.Literal(sid),
                a=sql.Literal(a),
                b=sql.Literal(b),
                fo=failed_only,
                **lits,
            )
            header = False
            with raw.cursor() as cur, cur.copy(query) as cp:
                for chunk in cp:
                    yield bytes(chunk)


def _day_windows(lo: datetime, hi: datetime) -> list[tuple[datetime, datetime]]:
    out: list[tuple[datetime, datetime]] = []
    a = lo
    while a < hi:
        b = min(hi, floor_to(a, DAY.width) + timedelta(days=1))
        out.append((a, b))
        a = b
    return out
