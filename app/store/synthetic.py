"""Synthetic history with the Oracle simulator's shape, for the benchmark and the demo.

``generate(engine, series=100, days=35, rollup_days=365)`` creates Oracle targets
``synthetic-NN`` with modes dedicated / shared / pooled (one connping series each,
every ``interval_s`` seconds) and fills:

- raw samples for the last ``days`` days (binary COPY built with numpy), then their
  1-minute, 1-hour and 1-day rollups through the store's own rollup path
  (:func:`app.store.rollups.roll_up_pending`), so benchmarks measure real rollups;
- for the ``rollup_days - days`` days before that (raw long gone by retention),
  1-hour and 1-day rollups computed here with the same binning, 1-minute rollups
  for ``minute_days`` of them, and the weekly rollups merged from the days by the
  store's own SQL.

Shape: connect+disconnect medians of about 61 ms (dedicated), 44 ms (shared) and
46 ms (pooled), a per-target factor, lognormal spread (sigma 0.15), a business-hours
bump and a weekday effect, a slow day-to-day random walk, a 0.5 % heavy tail, rare
spikes (a few minutes at 3-8x) and rare error runs with realistic codes
(TNS-12520, TNS-12516, NET-ECONNREFUSED, DPY-4011, timeouts).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.store.hist import bucket_index, bucket_value
from app.store.layout import driver_connection, rollup_value_columns
from app.store.partitions import ensure_rollup_partitions, ensure_sample_days
from app.store.rollups import roll_up_pending, weeks_backfill_sql

MODE_MEDIAN_MS = {"dedicated": 61.0, "shared": 44.0, "pooled": 46.0}
SERVER_TYPE = {"dedicated": "DEDICATED", "shared": "SHARED", "pooled": "POOLED"}
# (status code, class, code, phase, message); status 1 = error, 2 = timeout
ERRORS: tuple[tuple[int, str, str, str, str], ...] = (
    (1, "TNS", "TNS-12520", "logon", "listener could not find available handler"),
    (1, "TNS", "TNS-12516", "logon", "listener could not find available handler"),
    (1, "NET", "NET-ECONNREFUSED", "logon", "connection refused"),
    (1, "DPY", "DPY-4011", "logon", "the database or network closed the connection"),
    (2, "TIMEOUT", "TIMEOUT", "logon", "no answer within the timeout"),
)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_PHASES = ("total", "logon", "logoff")
Progress = Callable[[str], None]


@dataclass(slots=True)
class GenerateReport:
    series_ids: list[int] = field(default_factory=list)
    raw_samples: int = 0
    rollup_rows: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Series:
    id: int
    kind: str
    median_ms: float


@dataclass(slots=True)
class _Day:
    total: npt.NDArray[np.int64]  # [series, slots] ns, 0 where failed
    logon: npt.NDArray[np.int64]
    logoff: npt.NDArray[np.int64]
    status: npt.NDArray[np.uint8]  # 0 ok, 1 error, 2 timeout
    err: npt.NDArray[np.int8]  # index into ERRORS, -1 when ok


def _create_series(conn: Connection, n: int, interval_s: int, prefix: str) -> list[_Series]:
    rng = np.random.default_rng(12345)
    out: list[_Series] = []
    kinds = list(MODE_MEDIAN_MS)
    n_targets = math.ceil(n / len(kinds))
    for t in range(n_targets):
        factor = float(rng.lognormal(0.0, 0.08))
        tid = conn.execute(
            text(
                "insert into targets (name, kind, description, dsn, username, labels) "
                "values (:n, 'oracle', 'synthetic history', :dsn, 'probe', :l) returning id"
            ),
            {
                "n": f"{prefix}-{t + 1:02d}",
                "dsn": f"synthetic{t + 1:02d}.example:1521/ORCLPDB",
                "l": Jsonb({"synthetic": True}),
            },
        ).scalar_one()
        for kind in kinds:
            if len(out) >= n:
                break
            mid = conn.execute(
                text("insert into modes (target_id, name, kind) values (:t, :k, :k) returning id"),
                {"t": tid, "k": kind},
            ).scalar_one()
            sid = conn.execute(
                text(
                    "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                    "values (:m, 'connping', :i, :o) returning id"
                ),
                {"m": mid, "i": interval_s * 1000, "o": min(interval_s * 1000, 5000)},
            ).scalar_one()
            out.append(_Series(sid, kind, MODE_MEDIAN_MS[kind] * factor))
    return out


def _simulate_day(series: list[_Series], day: date, slots: int, interval_s: int, seed: int) -> _Day:
    rng = np.random.default_rng([seed, day.toordinal()])
    n = len(series)
    t = np.arange(slots) * interval_s  # seconds into the UTC day
    hod = t / 3600.0
    business = 1.0 + 0.08 * np.exp(-(((hod - 14.0) / 4.0) ** 2))
    weekday = 1.03 if day.weekday() < 5 else 0.97
    # a slow random walk from day to day (deterministic per day and series)
    walk = np.exp(0.03 * np.sin(day.toordinal() / 9.0 + np.arange(n)))
    med = np.array([s.median_ms for s in series]) * walk * weekday
    total_ms = med[:, None] * business[None, :] * rng.lognormal(0.0, 0.15, (n, slots))
    tail = rng.random((n, slots)) < 0.005
    total_ms[tail] *= rng.uniform(1.5, 4.0, int(tail.sum()))
    status = np.zeros((n, slots), dtype=np.uint8)
    err = np.full((n, slots), -1, dtype=np.int8)
    for i in range(n):
        if rng.random() < 0.25:  # a spike: a few minutes at 3-8x
            start = int(rng.integers(0, slots))
            length = int(rng.integers(30, 180)) // interval_s
            total_ms[i, start : start + length] *= rng.uniform(3.0, 8.0)
        if rng.random() < 0.12:  # an error run of 1-12 minutes
            start = int(rng.integers(0, slots))
            length = max(1, int(rng.integers(60, 720)) // interval_s)
            e = int(rng.integers(0, len(ERRORS)))
            status[i, start : start + length] = ERRORS[e][0]
            err[i, start : start + length] = e
    lone = rng.random((n, slots)) < 2e-4
    status[lone & (status == 0)] = 1
    err[lone & (err < 0)] = 0
    total = (total_ms * 1e6).astype(np.int64)
    logon = (total * rng.uniform(0.82, 0.9, (n, slots))).astype(np.int64)
    logoff = np.maximum(total - logon - 200_000, 50_000)
    failed = status != 0
    total[failed] = logon[failed] = logoff[failed] = 0
    return _Day(total, logon, logoff, status, err)


def _binary_copy_rows(fields: list[tuple[str, Any]], nrows: int) -> bytes:
    """Rows of a binary COPY stream: every field fixed-width (``(dtype, values)``)."""
    dt: list[tuple[str, Any]] = [("nf", ">i2")]
    for j, (dtype, _) in enumerate(fields):
        dt += [(f"l{j}", ">i4"), (f"v{j}", dtype)]
    arr = np.zeros(nrows, dtype=dt)
    arr["nf"] = len(fields)
    for j, (dtype, values) in enumerate(fields):
        arr[f"l{j}"] = np.dtype(dtype).itemsize
        arr[f"v{j}"] = values
    return arr.tobytes()


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"
_COPY_TRAILER = b"\xff\xff"
_OK_COLUMNS = (
    "series_id, scheduled_at, started_at, status, total_ns, logon_ns, logoff_ns, "
    "round_trips, sid, serial, instance, server_type, agent"
)


def _write_raw_day(
    conn: Connection,
    series: list[_Series],
    day: date,
    d: _Day,
    interval_s: int,
    seed: int,
    until: datetime,
) -> int:
    rng = np.random.default_rng([seed, day.toordinal(), 7])
    slots = d.total.shape[1]
    day_us = int((datetime(day.year, day.month, day.day, tzinfo=UTC) - _PG_EPOCH).total_seconds())
    sched = (day_us + np.arange(slots, dtype=np.int64) * interval_s) * 1_000_000
    until_us = int((until - _PG_EPOCH).total_seconds() * 1_000_000)
    keep = sched < until_us  # nothing in the future
    part = f"samples_p{day:%Y%m%d}"
    raw = driver_connection(conn)
    written = 0
    ids = np.array([s.id for s in series], dtype=np.int32)
    with raw.cursor() as cur:
        for kind in MODE_MEDIAN_MS:
            rows = np.array([i for i, s in enumerate(series) if s.kind == kind], dtype=np.int64)
            if rows.size == 0:
                continue
            ok = (d.status[rows] == 0) & keep[None, :]
            r_idx, c_idx = np.nonzero(ok)
            nrows = r_idx.size
            st = SERVER_TYPE[kind].encode()
            fields: list[tuple[str, Any]] = [
                (">i4", ids[rows][r_idx]),
                (">i8", sched[c_idx]),
                (">i8", sched[c_idx] + rng.integers(50, 2000, nrows)),
                ("S2", b"ok"),
                (">i8", d.total[rows][r_idx, c_idx]),
                (">i8", d.logon[rows][r_idx, c_idx]),
                (">i8", d.logoff[rows][r_idx, c_idx]),
                (">i2", 7),
                (">i4", rng.integers(20, 900, nrows)),
                (">i4", rng.integers(1, 60000, nrows)),
                ("S5", b"ORCL1"),
                (f"S{len(st)}", st),
                ("S9", b"synthetic"),
            ]
            with cur.copy(f"copy {part} ({_OK_COLUMNS}) from stdin (format binary)") as cp:
                cp.write(_COPY_HEADER)
                chunk = 200_000
                for lo in range(0, nrows, chunk):
                    sub = [
                        (dt, v if np.isscalar(v) or isinstance(v, bytes) else v[lo : lo + chunk])
                        for dt, v in fields
                    ]
                    cp.write(_binary_copy_rows(sub, min(chunk, nrows - lo)))
                cp.write(_COPY_TRAILER)
            written += nrows
        r_idx, c_idx = np.nonzero((d.status != 0) & keep[None, :])
        if r_idx.size:
            cols = (
                "series_id, scheduled_at, started_at, status, error_class, error_code, "
                "error_phase, error_message, agent"
            )
            with cur.copy(f"copy {part} ({cols}) from stdin") as cp:
                for i, j in zip(r_idx.tolist(), c_idx.tolist(), strict=True):
                    e = ERRORS[int(d.err[i, j])]
                    at = _PG_EPOCH + timedelta(microseconds=int(sched[j]))
                    cp.write_row(
                        (
                            ids[i].item(),
                            at,
                            at,
                            "error" if e[0] == 1 else "timeout",
                            e[1],
                            e[2],
                            e[3],
                            e[4],
                            "synthetic",
                        )
                    )
            written += r_idx.size
    return written


def _hist(idx: npt.NDArray[np.int16]) -> tuple[list[int], list[int]]:
    i, c = np.unique(idx, return_counts=True)
    return i.tolist(), c.tolist()


def _rollup_rows(
    series: list[_Series], d: _Day, day_start: datetime, width_s: int, interval_s: int
) -> list[tuple[Any, ...]]:
    """Rollup rows (columns of :func:`rollup_value_columns` for the 3 phases) of one day."""
    per = width_s // interval_s
    slots = d.total.shape[1]
    out: list[tuple[Any, ...]] = []
    vals = {"total": d.total, "logon": d.logon, "logoff": d.logoff}
    idxs = {p: bucket_index(np.maximum(v, 1)) for p, v in vals.items()}
    for i, s in enumerate(series):
        for b in range(slots // per):
            sl = slice(b * per, (b + 1) * per)
            st = d.status[i, sl]
            okm = st == 0
            n_ok = int(okm.sum())
            n_err = int((st == 1).sum())
            n_to = int((st == 2).sum())
            ecls: dict[str, int] | None = None
            ecode: dict[str, int] | None = None
            if n_err or n_to:
                ecls, ecode = {}, {}
                for e, c in zip(*np.unique(d.err[i, sl][~okm], return_counts=True), strict=True):
                    spec = ERRORS[int(e)]
                    ecls[spec[1]] = ecls.get(spec[1], 0) + int(c)
                    ecode[spec[2]] = ecode.get(spec[2], 0) + int(c)
            row: list[Any] = [
                s.id,
                day_start + timedelta(seconds=b * width_s),
                per,
                n_ok,
                n_err,
                n_to,
                0,
                Jsonb(ecls) if ecls else None,
                Jsonb(ecode) if ecode else None,
            ]
            for p in ("total", "logon", "ping", "query", "logoff", "commit", "acquire"):
                if p not in vals or n_ok == 0:
                    row += [None] * 9
                    continue
                v = vals[p][i, sl][okm]
                hi, hc = _hist(idxs[p][i, sl][okm])
                srt = np.sort(v)
                qs = []
                cum = np.cumsum(hc)
                for q in (0.5, 0.95, 0.99):
                    rank = max(1, math.ceil(q * n_ok - 1e-9))
                    rep = float(bucket_value(hi[int(np.searchsorted(cum, rank))]))
                    qs.append(min(max(rep, float(srt[0])), float(srt[-1])))
                row += [n_ok, int(srt[0]), int(srt[-1]), int(v.sum()), *qs, hi, hc]
            out.append(tuple(row))
    return out


def _copy_rollups(conn: Connection, table: str, rows: list[tuple[Any, ...]]) -> None:
    cols = ["series_id", "bucket", *rollup_value_columns()]
    types = ["int4", "timestamptz", "int4", "int4", "int4", "int4", "int4", "jsonb", "jsonb"]
    types += ["int4", "int8", "int8", "int8", "float4", "float4", "float4", "int2[]", "int4[]"] * 7
    raw = driver_connection(conn)
    with (
        raw.cursor() as cur,
        cur.copy(f"copy {table} ({', '.join(cols)}) from stdin (format binary)") as cp,
    ):
        cp.set_types(types)
        for r in rows:
            cp.write_row(r)


def generate(
    engine: Engine,
    *,
    series: int = 100,
    days: int = 35,
    rollup_days: int = 365,
    minute_days: int = 0,
    interval_s: int = 10,
    end: datetime | None = None,
    seed: int = 1,
    prefix: str = "synthetic",
    progress: Progress | None = None,
) -> GenerateReport:
    """Create ``series`` synthetic series and their history up to ``end`` (default: now).

    Raw samples cover ``days`` UTC days: the day of ``end`` up to ``end`` and the
    ``days - 1`` whole days before it. 1-hour and 1-day rollups cover
    ``max(rollup_days, days)`` days; 1-minute rollups the raw days plus ``minute_days``
    days before them.
    """
    if interval_s < 1 or 3600 % interval_s:
        raise ValueError("interval_s must be a whole number of seconds dividing an hour")
    if days < 1 or series < 1:
        raise ValueError("series and days must be at least 1")
    say = progress or (lambda _msg: None)
    until = (end or datetime.now(UTC)).astimezone(UTC)
    until = until - timedelta(seconds=until.timestamp() % interval_s)
    last_day = until.date()
    report = GenerateReport()
    slots = 86400 // interval_s
    t0 = time.perf_counter()
    with engine.begin() as conn:
        made = _create_series(conn, series, interval_s, prefix)
    report.series_ids = [s.id for s in made]
    raw_first = last_day - timedelta(days=days - 1)
    with engine.begin() as conn:
        ensure_sample_days(conn, [raw_first + timedelta(days=i) for i in range(days)])
    for k in range(days):
        day = raw_first + timedelta(days=k)
        d = _simulate_day(made, day, slots, interval_s, seed)
        with engine.begin() as conn:
            report.raw_samples += _write_raw_day(conn, made, day, d, interval_s, seed, until)
        say(f"raw {day}: {report.raw_samples} samples")
    report.seconds["raw"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    if days:
        with engine.begin() as conn:
            conn.execute(text("analyze samples"))
            conn.execute(
                text(
                    "insert into rollup_dirty (series_id, bucket) select s, m "
                    "from unnest(cast(:ids as integer[])) s, generate_series(cast(:a as "
                    "timestamptz), cast(:b as timestamptz) - interval '1 minute', "
                    "interval '1 minute') m on conflict do nothing"
                ),
                {
                    "ids": report.series_ids,
                    "a": datetime(raw_first.year, raw_first.month, raw_first.day, tzinfo=UTC),
                    "b": until,
                },
            )
        while True:
            rep = roll_up_pending(engine, batch=20000, budget_s=60.0)
            if not rep.more_pending:
                break
            if rep.batches:
                say(f"rolled up {rep.minutes} minutes in {rep.seconds:.1f}s")
            else:
                time.sleep(0.5)  # another process (an agent's maintenance) holds the rollup lock
    report.seconds["rollup_raw"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    older = max(rollup_days, days) - max(days, 0)
    if older:
        with engine.begin() as conn:
            ensure_rollup_partitions(conn, raw_first - timedelta(days=older), raw_first)
    for k in range(1, older + 1):
        day = raw_first - timedelta(days=k)
        d = _simulate_day(made, day, slots, interval_s, seed)
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        hours = _rollup_rows(made, d, start, 3600, interval_s)
        whole = _rollup_rows(made, d, start, 86400, interval_s)
        with engine.begin() as conn:
            _copy_rollups(conn, "rollup_1h", hours)
            _copy_rollups(conn, "rollup_1d", whole)
            report.rollup_rows += len(hours) + len(whole)
            if k <= minute_days:
                minutes = _rollup_rows(made, d, start, 60, interval_s)
                _copy_rollups(conn, "rollup_1m", minutes)
                report.rollup_rows += len(minutes)
        if k % 10 == 0:
            say(f"rollups back to {day}: {report.rollup_rows} rows")
    with engine.begin() as conn:
        if older:
            conn.execute(text(weeks_backfill_sql()))
        conn.execute(text("analyze rollup_1m; analyze rollup_1h; analyze rollup_1d"))
        conn.execute(text("analyze rollup_1w"))
    report.seconds["rollup_history"] = time.perf_counter() - t2
    return report
