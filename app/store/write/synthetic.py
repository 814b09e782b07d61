"""Synthetic history with the Oracle simulator's shape, for the benchmark and the demo.

``generate(engine, series=100, days=35, rollup_days=365)`` creates Oracle targets
``synthetic-NN`` with modes dedicated / shared / pooled (one connping series each,
every ``interval_s`` seconds) and fills:

- raw samples for the last ``days`` days (binary COPY built with numpy), then their
  1-minute, 1-hour and 1-day rollups through the store's own rollup path
  (:func:`app.store.write.rollups.roll_up_pending`), so benchmarks measure real rollups;
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

from app.models import ORACLE_MODES
from app.store.histogram.buckets import bucket_index
from app.store.layout import driver_connection, rollup_value_columns
from app.store.write.maintenance import analyze_retrying
from app.store.write.partitions import ensure_rollup_partitions, ensure_sample_days
from app.store.write.rollups import mark_dirty, roll_up_pending, weeks_backfill_sql
from app.store.write.synthetic_bins import bucket_rows

MODE_MEDIAN_MS = {"dedicated": 61.0, "shared": 44.0, "pooled": 46.0}
# (status code, class, code, phase, message); status 1 = error, 2 = timeout
ERRORS: tuple[tuple[int, str, str, str, str], ...] = (
    (1, "TNS", "TNS-12520", "logon", "listener could not find available handler"),
    (1, "TNS", "TNS-12516", "logon", "listener could not find available handler"),
    (1, "NET", "NET-ECONNREFUSED", "logon", "connection refused"),
    (1, "DPY", "DPY-4011", "logon", "the database or network closed the connection"),
    (2, "TIMEOUT", "TIMEOUT", "logon", "no answer within the timeout"),
)
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
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
            st = MODE_SERVER_TYPE[kind].encode()
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


def _rollup_rows(
    series: list[_Series], d: _Day, day_start: datetime, width_s: int, interval_s: int
) -> list[tuple[Any, ...]]:
    """Rollup rows (columns of :func:`rollup_value_columns` for the 3 phases) of one day."""
    per = width_s // interval_s
    vals = {"total": d.total, "logon": d.logon, "logoff": d.logoff}
    idxs = {p: bucket_index(np.maximum(v, 1)) for p, v in vals.items()}
    phases = {p: (v, idxs[p]) for p, v in vals.items()}
    ids = [s.id for s in series]
    return bucket_rows(ids, phases, d.status, d.err, ERRORS, day_start, width_s, per)


def _copy_rollups(conn: Connection, table: str, rows: list[tuple[Any, ...]]) -> None:
    cols = ["series_id", "bucket", *rollup_value_columns()]
    types = ["int4", "timestamptz", *["int4"] * 6, "jsonb", "jsonb"]  # ..., n_probe, err maps
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
    simulate_days: int | None = None,
) -> GenerateReport:
    """Create ``series`` synthetic series and their history up to ``end`` (default: now).

    Raw samples cover ``days`` UTC days: the day of ``end`` up to ``end`` and the
    ``days - 1`` whole days before it. 1-hour and 1-day rollups cover
    ``max(rollup_days, days)`` days; 1-minute rollups the raw days plus ``minute_days``
    days before them. With ``simulate_days``, only that many days (rounded up to whole
    weeks) before the raw ones are simulated; older 1-hour and 1-day rollups repeat them
    (:func:`repeat_history`), so a year of history takes minutes instead of an hour.
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
    total_older = max(rollup_days, days) - max(days, 0)
    older = total_older
    if simulate_days is not None:
        older = min(total_older, 7 * math.ceil(max(simulate_days, 1) / 7))
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
    if total_older > older:
        with engine.begin() as conn:
            ensure_rollup_partitions(conn, raw_first - timedelta(days=total_older), raw_first)
            report.rollup_rows += repeat_history(
                conn, report.series_ids, raw_first - timedelta(days=older), raw_first,
                raw_first - timedelta(days=total_older),
            )  # fmt: skip
        say(f"rollups repeated back to {raw_first - timedelta(days=total_older)}")
    with engine.begin() as conn:
        if older:
            conn.execute(text(weeks_backfill_sql()))
        conn.execute(text("analyze rollup_1m; analyze rollup_1h; analyze rollup_1d"))
        conn.execute(text("analyze rollup_1w"))
    report.seconds["rollup_history"] = time.perf_counter() - t2
    return report


def repeat_history(
    conn: Connection, series_ids: list[int], src_start: date, src_end: date, back_to: date
) -> int:
    """Fill ``[back_to, src_start)`` with copies of the 1-hour and 1-day rollups of
    ``[src_start, src_end)`` (whole weeks: weekday and hour shapes stay), shifted back by
    whole multiples of that span, in SQL. Returns the rows written."""
    span = (src_end - src_start).days
    if span <= 0 or span % 7:
        raise ValueError("the repeated span must be whole weeks")
    cols = ", ".join(rollup_value_columns())
    written = 0
    for table in ("rollup_1h", "rollup_1d"):
        for k in range(1, math.ceil((src_start - back_to).days / span) + 1):
            shift = timedelta(days=k * span)
            written += conn.execute(
                text(
                    f"insert into {table} (series_id, bucket, {cols}) "
                    f"select series_id, bucket - :shift, {cols} from {table} "
                    "where series_id = any(:ids) and bucket >= :a and bucket < :b "
                    "and bucket - :shift >= :lo"
                ),
                {"shift": shift, "ids": series_ids, "a": _day_start(src_start),
                 "b": _day_start(src_end), "lo": _day_start(back_to)},
            ).rowcount  # fmt: skip
    return written


# --------------------------------------------------------------------------- backfill
#
# History for series that already exist (the demo's targets), shaped like what the
# live probes write: every phase the probe kind measures, identity columns, and
# ``agent = 'synthetic'`` plus ``extra = {"synthetic": true}`` on every sample.

SYNTHETIC_AGENT = "synthetic"
# what app.drivers write into server_type per mode (Oracle: sys_context; PostgreSQL: route)
MODE_SERVER_TYPE = {
    "dedicated": "DEDICATED",
    "shared": "SHARED",
    "pooled": "POOLED",
    "direct": "DIRECT",
    "unix": "DIRECT/UNIX",
    "pgbouncer_session": "PGBOUNCER_SESSION",
    "pgbouncer_transaction": "PGBOUNCER_TRANSACTION",
}
# logon medians (ms) of PostgreSQL modes on one machine, next to the Oracle ones above
PG_LOGON_MEDIAN_MS = {
    "direct": 4.0,
    "unix": 2.6,
    "pgbouncer_session": 1.3,
    "pgbouncer_transaction": 1.3,
}
# (median ms, lognormal sigma) of the short phases: Oracle, PostgreSQL
_PHASE_MS = {
    "oracle": {"ping": (0.6, 0.3), "query": (0.9, 0.3), "logoff": (2.4, 0.3)},
    "postgres": {"ping": (0.1, 0.3), "query": (0.15, 0.3), "logoff": (0.06, 0.3)},
}
# per mode: a shared server's dispatcher adds a hop to every round trip, a DRCP logoff
# is a release, a unix socket skips TCP, pgbouncer adds a hop
_MODE_PHASE_FACTOR: dict[str, dict[str, float]] = {
    "shared": {"ping": 1.3, "query": 1.25, "logoff": 0.85},
    "pooled": {"logoff": 0.5},
    "unix": {"ping": 0.8, "query": 0.8, "logoff": 0.8},
    "pgbouncer_session": {"ping": 1.3, "query": 1.3, "logoff": 1.5},
    "pgbouncer_transaction": {"ping": 1.3, "query": 1.3, "logoff": 1.5},
}
_LONE_ERRORS_PER_DAY = 0.5
_COMMIT_MS, _ACQUIRE_MS = (1.5, 0.3), (0.6, 0.3)
# timed phases each probe kind writes (total always)
PROBE_PHASES = {
    "connping": ("logon", "ping", "query", "logoff"),
    "sessionping": ("ping", "query"),
    "commit": ("commit",),
    "poolacquire": ("acquire", "query"),
}
_ERROR_PHASE = {"connping": "logon", "sessionping": "ping", "commit": "commit"}
_ERROR_PHASE["poolacquire"] = "acquire"
_ORACLE_SESSION_ERRORS: tuple[tuple[int, str, str, str, str], ...] = (
    (1, "ORA", "ORA-03113", "", "end-of-file on communication channel"),
    (1, "DPY", "DPY-4011", "", "the database or network closed the connection"),
    (2, "TIMEOUT", "TIMEOUT", "", "no answer within the timeout"),
)
_PG_ERRORS: tuple[tuple[int, str, str, str, str], ...] = (
    (1, "NET", "NET-ECONNREFUSED", "", "connection refused"),
    (1, "PG", "PG-57P03", "", "the database system is starting up"),
    (1, "PG", "PG-53300", "", "sorry, too many clients already"),
    (2, "TIMEOUT", "TIMEOUT", "", "no answer within the timeout"),
)
_EXTRA = b'\x01{"synthetic": true}'  # jsonb in binary COPY: version 1, then the text


@dataclass(frozen=True, slots=True)
class HistorySeries:
    """One existing series to backfill and what its samples look like.

    ``offset_ms`` is the series' phase within its interval (the agent's
    ``app.agent.scheduling.phase.phase_offset_ms``), so history instants lie on the live grid;
    ``instances`` are spread over its samples (two give a two-line instance
    breakdown); ``factor`` scales its logon median (one database slower than another).
    """

    id: int
    probe: str
    mode: str
    target_kind: str
    interval_ms: int
    offset_ms: int = 0
    factor: float = 1.0
    instances: tuple[str, ...] = ("ORCL1",)
    service: str | None = None
    site: str = "default"
    # phase -> median ms measured live ("logon", "ping", ...): the history is drawn around
    # these instead of the built-in shape, so it meets the live samples without a step
    medians_ms: tuple[tuple[str, float], ...] = ()

    @property
    def errors(self) -> tuple[tuple[int, str, str, str, str], ...]:
        phase = _ERROR_PHASE[self.probe]
        if self.target_kind == "postgres":
            base = _PG_ERRORS
        elif self.probe in ("connping", "poolacquire"):
            base = ERRORS
        else:
            base = _ORACLE_SESSION_ERRORS
        return tuple((st, c, code, phase, msg) for st, c, code, _, msg in base)


@dataclass(slots=True)
class BackfillReport:
    series_ids: list[int] = field(default_factory=list)  # backfilled now
    skipped: list[int] = field(default_factory=list)  # already had their history
    ends: dict[int, datetime] = field(default_factory=dict)  # last synthetic instant
    raw_samples: int = 0
    rollup_rows: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _SeriesDay:
    phases: dict[str, npt.NDArray[np.int64]]  # ns; 0 where failed
    status: npt.NDArray[np.uint8]
    err: npt.NDArray[np.int8]


def _us(at: datetime) -> int:
    delta = at - _PG_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _grid_before(s: HistorySeries, before: datetime) -> datetime:
    """The series' last scheduled instant strictly before ``before``."""
    off_us, step_us = s.offset_ms * 1000, s.interval_ms * 1000
    t = _us(before) - 1
    return _PG_EPOCH + timedelta(microseconds=t - (t - off_us) % step_us)


def _slots(s: HistorySeries) -> int:
    if s.interval_ms < 1000 or 86_400_000 % s.interval_ms:
        raise ValueError(f"series {s.id}: interval {s.interval_ms} ms does not divide a day")
    return 86_400_000 // s.interval_ms


def _simulate_series_day(s: HistorySeries, day: date, seed: int) -> _SeriesDay:
    """One UTC day of one series: slot k is due at day start + offset + k * interval."""
    rng = np.random.default_rng([seed, s.id, day.toordinal()])
    slots = _slots(s)
    interval_s = s.interval_ms / 1000.0
    hod = (s.offset_ms / 1000.0 + np.arange(slots) * interval_s) / 3600.0
    business = 1.0 + 0.08 * np.exp(-(((hod - 14.0) / 4.0) ** 2))
    weekday = 1.03 if day.weekday() < 5 else 0.97
    walk = math.exp(0.03 * math.sin(day.toordinal() / 9.0 + s.id))
    load = business * (weekday * walk)
    oracle = s.target_kind == "oracle"
    ms: dict[str, npt.NDArray[np.float64]] = {}
    live = dict(s.medians_ms)
    for p in PROBE_PHASES[s.probe]:
        if p in live:  # measured: the spread is the built-in one, the level the live one
            sigma = 0.15 if p == "logon" else 0.3
            ms[p] = live[p] * load * rng.lognormal(0.0, sigma, slots)
            continue
        if p == "logon":
            med = (MODE_MEDIAN_MS if oracle else PG_LOGON_MEDIAN_MS)[s.mode] * s.factor
            ms[p] = med * load * rng.lognormal(0.0, 0.15, slots)
            continue
        if p == "commit":
            med, sigma = _COMMIT_MS
        elif p == "acquire":
            med, sigma = _ACQUIRE_MS
        else:
            med, sigma = _PHASE_MS["oracle" if oracle else "postgres"][p]
            med *= _MODE_PHASE_FACTOR.get(s.mode, {}).get(p, 1.0)
        ms[p] = med * load * rng.lognormal(0.0, sigma, slots)
    lead = PROBE_PHASES[s.probe][0]  # the phase that suffers: logon, ping, commit, acquire
    tail = rng.random(slots) < 0.005
    ms[lead][tail] *= rng.uniform(1.5, 4.0, int(tail.sum()))
    status = np.zeros(slots, dtype=np.uint8)
    err = np.full(slots, -1, dtype=np.int8)
    errors = s.errors
    if rng.random() < 0.25:  # a spike: 0.5-3 minutes at 3-8x
        start = int(rng.integers(0, slots))
        length = max(1, int(rng.integers(30, 180) / interval_s))
        ms[lead][start : start + length] *= rng.uniform(3.0, 8.0)
    if rng.random() < 0.12:  # an error run of 1-12 minutes
        start = int(rng.integers(0, slots))
        length = max(1, int(rng.integers(60, 720) / interval_s))
        e = int(rng.integers(0, len(errors)))
        status[start : start + length] = errors[e][0]
        err[start : start + length] = e
    lone = (rng.random(slots) < _LONE_ERRORS_PER_DAY / slots) & (status == 0)
    status[lone] = errors[0][0]
    err[lone] = 0
    failed = status != 0
    phases = {p: (v * 1e6).astype(np.int64) for p, v in ms.items()}
    overhead = (rng.uniform(0.05, 0.3, slots) * 1e6).astype(np.int64)
    phases["total"] = sum(phases.values(), overhead)
    for v in phases.values():
        v[failed] = 0
    return _SeriesDay(phases, status, err)


def _ints(rng: np.random.Generator, lo: int, hi: int, n: int) -> npt.NDArray[np.int64]:
    return np.asarray(rng.integers(lo, hi, n), dtype=np.int64)


def _write_series_day(
    cur: Any, s: HistorySeries, day: date, d: _SeriesDay, until: datetime, seed: int
) -> int:
    """COPY one series' day into its partition (instants up to ``until`` inclusive)."""
    rng = np.random.default_rng([seed, s.id, day.toordinal(), 7])
    slots = d.status.shape[0]
    day_us = _us(datetime(day.year, day.month, day.day, tzinfo=UTC))
    sched = day_us + s.offset_ms * 1000 + np.arange(slots, dtype=np.int64) * s.interval_ms * 1000
    keep = sched <= _us(until)
    part = f"samples_p{day:%Y%m%d}"
    oracle = s.target_kind == "oracle"
    inst = _ints(rng, 0, len(s.instances), slots)
    lo, hi = (30, 70) if s.mode == "pooled" else (20, 900)  # DRCP: a few pooled servers
    sid = _ints(rng, lo, hi, slots)
    if s.probe in ("sessionping", "commit"):  # one kept session: its identity changes rarely
        sid[:] = sid[0]
    serial = _ints(rng, 1, 60000, slots)
    start_dev = _ints(rng, 50, 2000, slots)
    written = 0
    server_type = MODE_SERVER_TYPE[s.mode].encode()
    for k, name in enumerate(s.instances):
        ok = np.nonzero(keep & (d.status == 0) & (inst == k))[0]
        if ok.size == 0:
            continue
        fields: list[tuple[str, str, Any]] = [
            ("series_id", ">i4", s.id),
            ("scheduled_at", ">i8", sched[ok]),
            ("started_at", ">i8", sched[ok] + start_dev[ok]),
            ("status", "S2", b"ok"),
        ]
        fields += [(f"{p}_ns", ">i8", v[ok]) for p, v in d.phases.items()]
        if oracle and s.probe == "connping":
            fields.append(("round_trips", ">i2", 5))
        fields.append(("sid", ">i4", sid[ok]))
        if oracle:
            fields.append(("serial", ">i4", serial[ok]))
        fields.append(("instance", f"S{len(name.encode())}", name.encode()))
        if s.service:
            fields.append(("service", f"S{len(s.service.encode())}", s.service.encode()))
        fields += [
            ("server_type", f"S{len(server_type)}", server_type),
            ("agent", f"S{len(SYNTHETIC_AGENT)}", SYNTHETIC_AGENT.encode()),
            ("site", f"S{len(s.site.encode())}", s.site.encode()),
            ("extra", f"S{len(_EXTRA)}", _EXTRA),
        ]
        cols = ", ".join(f[0] for f in fields)
        with cur.copy(f"copy {part} ({cols}) from stdin (format binary)") as cp:
            cp.write(_COPY_HEADER)
            cp.write(_binary_copy_rows([(dt, v) for _, dt, v in fields], ok.size))
            cp.write(_COPY_TRAILER)
        written += ok.size
    bad = np.nonzero(keep & (d.status != 0))[0]
    if bad.size:
        cols = (
            "series_id, scheduled_at, started_at, status, error_class, error_code, "
            "error_phase, error_message, agent, site, extra"
        )
        errors = s.errors
        with cur.copy(f"copy {part} ({cols}) from stdin") as cp:
            for j in bad.tolist():
                e = errors[int(d.err[j])]
                at = _PG_EPOCH + timedelta(microseconds=int(sched[j]))
                status = "error" if e[0] == 1 else "timeout"
                cp.write_row(
                    (
                        s.id,
                        at,
                        at,
                        status,
                        *e[1:],
                        SYNTHETIC_AGENT,
                        s.site,
                        Jsonb({"synthetic": True}),
                    )
                )
        written += bad.size
    return written


def _series_rollups(
    s: HistorySeries, d: _SeriesDay, day_start: datetime, width_s: int
) -> list[tuple[Any, ...]]:
    phases = {p: (v, bucket_index(np.maximum(v, 1))) for p, v in d.phases.items()}
    per = width_s * 1000 // s.interval_ms
    return bucket_rows(s.id, phases, d.status, d.err, s.errors, day_start, width_s, per)


def _day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def backfill(
    engine: Engine,
    series: list[HistorySeries],
    *,
    raw_days: int = 7,
    rollup_days: int = 365,
    end: datetime | None = None,
    seed: int = 1,
    progress: Progress | None = None,
) -> BackfillReport:
    """Give existing series a history that ends just before their live data.

    Per series, history ends at its last scheduled instant before its first sample not
    written by this function (``agent <> 'synthetic'``, row or packed form), or before
    ``end`` (default now) when it has none. Raw samples cover that day and the
    ``raw_days - 1`` days before it and are rolled up by the store's own rollup path;
    1-hour and 1-day rollups computed here cover the days before, back to
    ``rollup_days`` days in all; weeks are merged from the days.

    A series that already has data from a day before the one its history would end
    on (a 1-day rollup older than that day: real history, or this function's) is
    skipped (``report.skipped``), so running this twice adds nothing and never writes
    over real data. Synthetic raw rows of a run interrupted before its rollups are
    removed first; a run interrupted later is not resumed.
    """
    if raw_days < 1 or rollup_days < raw_days:
        raise ValueError("need raw_days >= 1 and rollup_days >= raw_days")
    for s in series:
        _slots(s)
        if s.probe not in PROBE_PHASES or s.mode not in MODE_SERVER_TYPE:
            raise ValueError(f"series {s.id}: no synthetic shape for {s.probe} / {s.mode}")
        if (s.target_kind == "oracle") != (s.mode in ORACLE_MODES):
            raise ValueError(f"series {s.id}: mode {s.mode} is not a {s.target_kind} mode")
    say = progress or (lambda _msg: None)
    now = (end or datetime.now(UTC)).astimezone(UTC)
    report = BackfillReport()
    t0 = time.perf_counter()
    ids = [s.id for s in series]
    with engine.connect() as conn:
        live: dict[int, datetime] = dict(
            conn.execute(
                text(
                    "select series_id, min(scheduled_at) from connwatch_samples(cast(:ids as "
                    "integer[]), '-infinity', 'infinity') where agent is distinct from :a "
                    "group by 1"
                ),
                {"ids": ids, "a": SYNTHETIC_AGENT},
            ).all()
        )
    todo: list[HistorySeries] = []
    for s in series:
        until = _grid_before(s, min(live.get(s.id, now), now + timedelta(microseconds=1)))
        report.ends[s.id] = until
        with engine.connect() as conn:
            done = conn.execute(
                text(
                    "select exists (select 1 from rollup_1d where series_id = :s and bucket < :d)"
                ),
                {"s": s.id, "d": _day_start(until.date())},
            ).scalar_one()
        if done:
            report.skipped.append(s.id)
        else:
            todo.append(s)
    if not todo:
        return report
    report.series_ids = [s.id for s in todo]
    todo_ids = report.series_ids
    last_day = max(report.ends[s.id] for s in todo).date()
    raw_first = min(report.ends[s.id] for s in todo).date() - timedelta(days=raw_days - 1)
    raw_span = [raw_first + timedelta(days=k) for k in range((last_day - raw_first).days + 1)]
    say(
        f"backfilling {len(todo)} series: raw {raw_first} to {last_day}, "
        f"rollups back to {last_day - timedelta(days=rollup_days - 1)}"
    )
    with engine.begin() as conn:
        # raw rows of an interrupted run that never reached its rollups
        conn.execute(
            text("delete from samples where series_id = any(:ids) and agent = :a"),
            {"ids": todo_ids, "a": SYNTHETIC_AGENT},
        )
        ensure_sample_days(conn, raw_span)
    raw = 0
    for day in raw_span:
        with engine.begin() as conn, driver_connection(conn).cursor() as cur:
            for s in todo:
                if day > report.ends[s.id].date():
                    continue
                d = _simulate_series_day(s, day, seed)
                raw += _write_series_day(cur, s, day, d, report.ends[s.id], seed)
    report.raw_samples = raw
    say(f"{raw} raw samples written in {time.perf_counter() - t0:.0f} s; rolling them up")
    report.seconds["raw"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    with engine.begin() as conn:
        mark_dirty(
            conn, _day_start(raw_first), max(report.ends.values()) + timedelta(seconds=1), todo_ids
        )
    analyze_retrying(engine, "samples")
    while True:
        rep = roll_up_pending(engine, batch=20000, budget_s=60.0)
        if not rep.more_pending:
            break
        if not rep.batches:
            time.sleep(0.5)  # another process holds the rollup lock
    report.seconds["rollup_raw"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    older = rollup_days - raw_days
    if older > 0:
        with engine.begin() as conn:
            ensure_rollup_partitions(conn, raw_first - timedelta(days=older + 1), raw_first)
    for k in range(1, older + 1):
        day = raw_first - timedelta(days=k)
        start = _day_start(day)
        hours: list[tuple[Any, ...]] = []
        whole: list[tuple[Any, ...]] = []
        for s in todo:
            if day <= report.ends[s.id].date() - timedelta(days=rollup_days):
                continue
            d = _simulate_series_day(s, day, seed)
            hours += _series_rollups(s, d, start, 3600)
            whole += _series_rollups(s, d, start, 86400)
        with engine.begin() as conn:
            _copy_rollups(conn, "rollup_1h", hours)
            _copy_rollups(conn, "rollup_1d", whole)
        report.rollup_rows += len(hours) + len(whole)
        if k % 120 == 0:
            say(f"rollups back to {day}")
    with engine.begin() as conn:
        conn.execute(text(weeks_backfill_sql()))
    analyze_retrying(engine, "rollup_1h", "rollup_1d", "rollup_1w")
    report.seconds["rollup_history"] = time.perf_counter() - t2
    return report
