"""Store benchmark: synthetic history, query latency per range, bytes per sample, percentile error.

Usage (a throw-away PostgreSQL from Debian's binaries unless --url is given):

    .venv/bin/python bench/bench_store.py --series 100 --days 35 --rollup-days 365
    .venv/bin/python bench/bench_store.py --series 10 --days 7 --rollup-days 60   # quick

With --url and --reuse an existing synthetic dataset is measured again without
regenerating it. After generating, every day that ended --compact-after-days ago is
compacted (packed form, app/store/write/packed.py) unless --no-compact; bytes per sample are
reported for both forms, and the raw reads inside those days before and after.
Every figure is printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import migrate
from app.demo.pgcluster import PgCluster
from app.samples import Sample, SampleStatus
from app.store.histogram.buckets import exact_quantiles
from app.store.histogram.sql_merge import merged_sql
from app.store.read.availability import availability
from app.store.read.compare import compare
from app.store.read.heatmap import heatmap
from app.store.read.incidents import outages, spikes
from app.store.read.samples import export_csv, read_samples, samples_around
from app.store.read.timeseries import timeseries
from app.store.read.weekly import weekly
from app.store.write.ingest import write_samples
from app.store.write.packed import compact_pending
from app.store.write.synthetic import generate

RANGES = {
    "1h": timedelta(hours=1),
    "1d": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
    "1y": timedelta(days=365),
}


def p95(xs: list[float]) -> float:
    return float(np.percentile(np.asarray(xs), 95))


def _parts_size(conn: Connection, parent: str) -> tuple[int, int]:
    """(heap + TOAST, indexes) in bytes over all partitions of ``parent``."""
    heap, total = conn.execute(
        text(
            "select coalesce(sum(pg_table_size(i.inhrelid)), 0), "
            "coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) "
            "from pg_inherits i where i.inhparent = to_regclass(:p)"
        ),
        {"p": parent},
    ).one()
    return int(heap), int(total) - int(heap)


def bytes_per_sample(conn: Connection) -> dict[str, float]:
    """Bytes on disk per raw sample: row form (``samples``), packed form
    (``samples_packed``, plus ``samples_packed_days``) and both together."""

    def size(parent: str) -> int:
        return sum(_parts_size(conn, parent))

    n_row = int(conn.execute(text("select count(*) from samples")).scalar_one())
    n_packed = int(
        conn.execute(text("select coalesce(sum(n), 0) from samples_packed")).scalar_one()
    )
    row_heap, row_idx = _parts_size(conn, "samples")
    pk_heap, pk_idx = _parts_size(conn, "samples_packed")
    pk_idx += int(
        conn.execute(text("select pg_total_relation_size('samples_packed_days')")).scalar_one()
    )
    n = n_row + n_packed
    r1m, r1h = size("rollup_1m"), size("rollup_1h")
    r1d = int(conn.execute(text("select pg_total_relation_size('rollup_1d')")).scalar_one())

    def per(x: int, k: int) -> float:
        return x / k if k else 0.0

    return {
        "samples": n,
        "samples_row_form": n_row,
        "samples_packed": n_packed,
        "bytes_per_sample_total": per(row_heap + row_idx + pk_heap + pk_idx, n),
        "row_form_heap": per(row_heap, n_row),
        "row_form_indexes": per(row_idx, n_row),
        "row_form_total": per(row_heap + row_idx, n_row),
        "packed_heap_toast": per(pk_heap, n_packed),
        "packed_indexes": per(pk_idx, n_packed),
        "packed_total": per(pk_heap + pk_idx, n_packed),
        "row_form_mb": (row_heap + row_idx) / 1e6,
        "packed_mb": (pk_heap + pk_idx) / 1e6,
        "rollup_1m_mb": r1m / 1e6,
        "rollup_1h_mb": r1h / 1e6,
        "rollup_1d_mb": r1d / 1e6,
        "rollup_1m_rows": conn.execute(text("select count(*) from rollup_1m")).scalar_one(),
        "rollup_1h_rows": conn.execute(text("select count(*) from rollup_1h")).scalar_one(),
    }


def compact_all(engine: Engine, after_days: int, now: datetime) -> dict[str, float]:
    """Compact every due day through maintenance's own function, one day per call."""
    t = time.perf_counter()
    days = samples = 0
    while True:
        reps = compact_pending(engine, after_days=after_days, now=now, max_days=1)
        if not reps:
            break
        for r in reps:
            days += 1
            samples += r.samples
            print(f"  compacted {r.day}: {r.samples} samples in {r.seconds:.1f}s", flush=True)
    secs = time.perf_counter() - t
    return {
        "days": days,
        "samples": samples,
        "seconds": round(secs, 1),
        "samples_per_s": round(samples / secs) if samples else 0.0,
    }


def raw_window_latencies(
    engine: Engine, iterations: int, rng: random.Random, first: datetime, last: datetime
) -> dict[str, dict[str, float]]:
    """p95 ms of the raw-sample reads over windows inside ``[first, last)`` (the days that
    get compacted): measured before compaction (row form) and after (packed form)."""
    with engine.connect() as conn:
        series_ids = conn.execute(text("select id from series order by id")).scalars().all()
        targets = conn.execute(text("select id from targets order by id")).scalars().all()
    queries: dict[str, Callable[[Connection, datetime, datetime], Any]] = {
        "read_samples": lambda c, a, b: read_samples(
            c, target_id=rng.choice(targets), start=a, end=b, limit=100
        ),
        "read_samples_oldest": lambda c, a, b: read_samples(
            c, target_id=rng.choice(targets), start=a, end=b, limit=100, newest_first=False
        ),
        "read_errors": lambda c, a, b: read_samples(
            c, target_id=rng.choice(targets), statuses=["error", "timeout"], start=a, end=b
        ),
        # no time bounds: the newest page of a target, walking back through packed days
        "read_newest": lambda c, a, b: read_samples(c, target_id=rng.choice(targets), limit=100),
        "read_errors_newest": lambda c, a, b: read_samples(
            c, target_id=rng.choice(targets), statuses=["error", "timeout"], limit=100
        ),
        "samples_around": lambda c, a, b: samples_around(
            c, [(rng.choice(series_ids), a, min(b, a + timedelta(minutes=10)))] * 5
        ),
        "timeseries_raw": lambda c, a, b: timeseries(c, [rng.choice(series_ids)], a, b),
        "timeseries_raw_3": lambda c, a, b: timeseries(c, rng.sample(series_ids, 3), a, b),
        "outages": lambda c, a, b: outages(c, [rng.choice(series_ids)], a, b),
        "spikes": lambda c, a, b: spikes(c, [rng.choice(series_ids)], a, b),
        "csv_first_chunk": lambda c, a, b: next(
            iter(export_csv(engine, series_ids=[rng.choice(series_ids)], start=a, end=b)), b""
        ),
    }
    spans = {"1h": timedelta(hours=1), "1d": timedelta(days=1), "2d": timedelta(days=2)}
    out: dict[str, dict[str, float]] = {}
    with engine.connect() as conn:
        for name, fn in queries.items():
            out[name] = {}
            for label, span in spans.items():
                if last - first < span:
                    continue
                times: list[float] = []
                for _ in range(iterations):
                    a = first + (last - first - span) * rng.random()
                    a = a.replace(second=0, microsecond=0)
                    t = time.perf_counter()
                    fn(conn, a, a + span)
                    times.append((time.perf_counter() - t) * 1000)
                    conn.rollback()
                out[name][label] = round(p95(times), 1)
            print(f"  {name:20s} " + "  ".join(f"{k}={v:6.1f}" for k, v in out[name].items()))
    return out


def percentile_error(
    conn: Connection, ids: list[int], now: datetime, rng: random.Random
) -> dict[str, float]:
    """Rollup-derived p50/p95/p99 vs exact percentile_disc over the same raw samples."""
    worst: dict[str, float] = {}
    raw_from = conn.execute(
        text(
            "select least((select min(scheduled_at) from samples), "
            "(select min(hour) from samples_packed))"
        )
    ).scalar_one()
    for label, span, table in (
        ("1h from 1m", timedelta(hours=1), "rollup_1m"),
        ("1d from 1h", timedelta(days=1), "rollup_1h"),
        ("7d from 1h", timedelta(days=7), "rollup_1h"),
        ("30d from 1d", timedelta(days=30), "rollup_1d"),
    ):
        errs: list[float] = []
        for _ in range(8):
            sid = rng.choice(ids)
            unit = timedelta(days=1) if table == "rollup_1d" else timedelta(hours=1)
            latest = now.replace(minute=0, second=0, microsecond=0) - span
            if table == "rollup_1d":
                latest = latest.replace(hour=0)
            earliest = raw_from + unit
            if latest <= earliest:
                continue
            a = earliest + (latest - earliest) * rng.random()
            a = a.replace(minute=0, second=0, microsecond=0)
            if table == "rollup_1d":
                a = a.replace(hour=0)
            b = a + span
            src = (
                f"select series_id, total_n, total_min, total_max, total_sum, total_hi, "
                f"total_hc, n, n_ok, n_error, n_timeout, n_skipped from {table} "
                "where series_id = :s and bucket >= :a and bucket < :b"
            )
            m = merged_sql(
                src, ["series_id"], raw=False, phases=("total",), errors=False, hist=False
            )
            got = conn.execute(
                text(f"select total_p50, total_p95, total_p99 from ({m}) x"),
                {"s": sid, "a": a, "b": b},
            ).one()
            vals = (
                conn.execute(
                    text(
                        "select total_ns from connwatch_samples(array[:s], :a, :b) "
                        "where status = 'ok'"
                    ),
                    {"s": sid, "a": a, "b": b},
                )
                .scalars()
                .all()
            )
            want = exact_quantiles(vals)
            errs += [abs(g - w) / w for g, w in zip(got, want, strict=True)]
        if errs:
            worst[label] = max(errs) * 100
    return worst


def write_throughput(engine: Engine, n: int) -> dict[str, float]:
    with engine.begin() as conn:
        sid = conn.execute(text("select min(id) from series")).scalar_one()
    t0 = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    # distinct instants in the past two days that the generator did not use (odd ms)
    batch = [
        Sample(
            series_id=sid,
            scheduled_at=t0 + timedelta(seconds=i, milliseconds=1),
            started_at=t0 + timedelta(seconds=i, milliseconds=2),
            status=SampleStatus.OK,
            total_ns=61_000_000 + i,
            logon_ns=52_000_000,
            logoff_ns=8_000_000,
            round_trips=7,
            sid=123,
            serial=456,
            instance="ORCL1",
            server_type="DEDICATED",
            agent="bench",
        )
        for i in range(n)
    ]
    t = time.perf_counter()
    with engine.begin() as conn:
        new = write_samples(conn, batch)
    first = time.perf_counter() - t
    t = time.perf_counter()
    with engine.begin() as conn:
        again = write_samples(conn, batch)
    second = time.perf_counter() - t
    # baseline: plain COPY of the same rows straight into the table, no staging, no dedup
    with engine.begin() as conn:
        conn.execute(
            text("delete from samples where series_id = :s and agent = 'bench'"), {"s": sid}
        )
        conn.execute(text("delete from rollup_dirty"))
    raw = engine.raw_connection()
    try:
        cur = raw.driver_connection.cursor()  # type: ignore[union-attr]
        t = time.perf_counter()
        with cur.copy(
            "copy samples (series_id, scheduled_at, started_at, status, total_ns, logon_ns, "
            "logoff_ns, round_trips, sid, serial, instance, server_type, agent) from stdin"
        ) as cp:
            for s in batch:
                cp.write_row(
                    (s.series_id, s.scheduled_at, s.started_at, "ok", s.total_ns, s.logon_ns,
                     s.logoff_ns, 7, 123, 456, "ORCL1", "DEDICATED", "bench")
                )  # fmt: skip
        raw.commit()
        base = time.perf_counter() - t
    finally:
        raw.close()
    with engine.begin() as conn:
        conn.execute(
            text("delete from samples where series_id = :s and agent = 'bench'"), {"s": sid}
        )
    return {
        "batch": n,
        "new": new,
        "duplicates_skipped_on_rewrite": n - again,
        "write_samples_per_s": n / first,
        "rewrite_samples_per_s": n / second,
        "plain_copy_per_s": n / base,
        "ratio_vs_plain_copy": (n / first) / (n / base),
    }


def query_latencies(
    engine: Engine, iterations: int, rng: random.Random, now: datetime
) -> dict[str, dict[str, float]]:
    with engine.connect() as conn:
        series_ids = conn.execute(text("select id from series order by id")).scalars().all()
        targets = conn.execute(text("select id from targets order by id")).scalars().all()
    out: dict[str, dict[str, float]] = {}
    queries: dict[str, Callable[[Connection, datetime, datetime], Any]] = {
        "timeseries": lambda c, a, b: timeseries(c, [rng.choice(series_ids)], a, b),
        "timeseries_3": lambda c, a, b: timeseries(c, rng.sample(series_ids, 3), a, b),
        "compare": lambda c, a, b: compare(c, rng.choice(targets), a, b),
        "heatmap": lambda c, a, b: heatmap(c, [rng.choice(series_ids)], a, b),
        "spikes": lambda c, a, b: spikes(c, [rng.choice(series_ids)], a, b),
        "outages": lambda c, a, b: outages(c, [rng.choice(series_ids)], a, b),
        "availability": lambda c, a, b: availability(c, rng.sample(series_ids, 3), a, b),
        "weekly_all": lambda c, a, b: weekly(c, a, b),
        "weekly_target": lambda c, a, b: weekly(c, a, b, target_ids=[rng.choice(targets)]),
        "read_samples": lambda c, a, b: read_samples(
            c, target_id=rng.choice(targets), start=a, end=b, limit=100
        ),
        "read_errors": lambda c, a, b: read_samples(
            c, target_id=rng.choice(targets), statuses=["error", "timeout"], start=a, end=b
        ),
        "csv_first_chunk": lambda c, a, b: next(
            iter(export_csv(engine, series_ids=[rng.choice(series_ids)], start=a, end=b)), b""
        ),
    }
    with engine.connect() as conn:
        for name, fn in queries.items():
            out[name] = {}
            for label, span in RANGES.items():
                times: list[float] = []
                for _ in range(iterations):
                    b = now - timedelta(seconds=rng.randrange(0, 3600))
                    a = b - span
                    t = time.perf_counter()
                    fn(conn, a, b)
                    times.append((time.perf_counter() - t) * 1000)
                    conn.rollback()
                out[name][label] = round(p95(times), 1)
            print(f"  {name:16s} " + "  ".join(f"{k}={v:6.1f}" for k, v in out[name].items()))
    return out


def _fmt(d: dict[str, Any]) -> str:
    return json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in d.items()})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="SQLAlchemy URL of a database to use (default: throw-away)")
    ap.add_argument("--reuse", action="store_true", help="measure the existing synthetic data")
    ap.add_argument("--series", type=int, default=100)
    ap.add_argument("--days", type=int, default=35)
    ap.add_argument("--rollup-days", type=int, default=365)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--write-batch", type=int, default=50_000)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument(
        "--compact-after-days",
        type=int,
        default=2,
        help="compact days that ended this long ago (CONNWATCH_COMPACT_AFTER_DAYS)",
    )
    ap.add_argument("--no-compact", action="store_true", help="leave every day in row form")
    args = ap.parse_args()

    cluster = None
    tmp = None
    if args.url:
        url = args.url
    else:
        tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-"))
        tmp.chmod(0o755)
        cluster = PgCluster(tmp / "pg")
        cluster.init()
        cluster.start()
        cluster.create_database("bench")
        url = cluster.url("bench")
    engine = create_engine(url)
    results: dict[str, Any] = {"args": vars(args)}
    try:
        migrate.upgrade(engine)
        if not args.reuse:
            t = time.perf_counter()
            rep = generate(
                engine,
                series=args.series,
                days=args.days,
                rollup_days=args.rollup_days,
                progress=lambda m: print("  " + m, flush=True),
            )
            results["generate"] = {
                "raw_samples": rep.raw_samples,
                "rollup_rows_history": rep.rollup_rows,
                "seconds": {k: round(v, 1) for k, v in rep.seconds.items()},
                "raw_copy_samples_per_s": round(rep.raw_samples / rep.seconds["raw"]),
                "rollup_samples_per_s": round(
                    rep.raw_samples / max(rep.seconds["rollup_raw"], 1e-9)
                ),
                "total_s": round(time.perf_counter() - t, 1),
            }
            print("generate:", json.dumps(results["generate"]))
        raw_eng = engine.execution_options(isolation_level="AUTOCOMMIT")

        def vacuum() -> None:
            with raw_eng.connect() as conn:
                for tbl in ("samples", "samples_packed", "rollup_1m", "rollup_1h", "rollup_1d"):
                    conn.execute(text(f"vacuum (analyze) {tbl}"))

        vacuum()
        with engine.connect() as conn:
            now = conn.execute(
                text(
                    "select greatest((select max(scheduled_at) from samples), "
                    "(select max(hour) + interval '1 hour' from samples_packed))"
                )
            ).scalar_one()
            first = conn.execute(
                text(
                    "select least((select min(scheduled_at) from samples), "
                    "(select min(hour) from samples_packed))"
                )
            ).scalar_one()
        # the days compaction rewrites (ended compact_after_days ago), as a time range
        last = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(
            days=args.compact_after_days
        )
        with engine.connect() as conn:
            results["size_before"] = bytes_per_sample(conn)
        print("size before compaction:", _fmt(results["size_before"]))
        if not args.no_compact and last > first:
            print(f"raw reads inside {first:%Y-%m-%d}..{last:%Y-%m-%d}, row form, p95 ms:")
            results["raw_p95_ms_row_form"] = raw_window_latencies(
                engine, args.iterations, random.Random(5), first, last
            )
            results["compaction"] = compact_all(engine, args.compact_after_days, now)
            print("compaction:", json.dumps(results["compaction"]))
            vacuum()
            print("same reads, packed form, p95 ms:")
            results["raw_p95_ms_packed"] = raw_window_latencies(
                engine, args.iterations, random.Random(5), first, last
            )
        with engine.connect() as conn:
            results["size"] = bytes_per_sample(conn)
            print("size:", _fmt(results["size"]))
            ids = conn.execute(text("select id from series")).scalars().all()
            results["percentile_error_pct"] = percentile_error(conn, ids, now, random.Random(3))
            print("max percentile error %:", json.dumps(results["percentile_error_pct"]))
        results["write"] = write_throughput(engine, args.write_batch)
        print("write:", json.dumps({k: round(v, 2) for k, v in results["write"].items()}))
        print(f"query p95 ms over {args.iterations} runs (range ends within the last hour):")
        results["query_p95_ms"] = query_latencies(engine, args.iterations, random.Random(7), now)
        worst = max(v for q in results["query_p95_ms"].values() for v in q.values())
        print(f"worst query p95: {worst:.1f} ms")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    finally:
        engine.dispose()
        if cluster is not None:
            cluster.stop(mode="immediate")
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
