"""Store benchmark: synthetic history, query latency per range, bytes per sample, percentile error.

Usage (a throw-away PostgreSQL from Debian's binaries unless --url is given):

    .venv/bin/python bench/bench_store.py --series 100 --days 35 --rollup-days 365
    .venv/bin/python bench/bench_store.py --series 10 --days 7 --rollup-days 60   # quick

With --url and --reuse an existing synthetic dataset is measured again without
regenerating it. Every figure is printed; nothing is asserted.
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
from app.pgcluster import PgCluster
from app.samples import Sample, SampleStatus
from app.store.availability import availability
from app.store.compare import compare
from app.store.heatmap import heatmap
from app.store.hist import exact_quantiles
from app.store.incidents import outages, spikes
from app.store.ingest import write_samples
from app.store.merge import merged_sql
from app.store.samples import export_csv, read_samples
from app.store.synthetic import generate
from app.store.timeseries import timeseries
from app.store.weekly import weekly

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


def bytes_per_sample(conn: Connection) -> dict[str, float]:
    def size(parent: str) -> int:
        return int(
            conn.execute(
                text(
                    "select coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) "
                    "from pg_inherits i where i.inhparent = to_regclass(:p)"
                ),
                {"p": parent},
            ).scalar_one()
        )

    n = conn.execute(text("select count(*) from samples")).scalar_one()
    heap = int(
        conn.execute(
            text(
                "select coalesce(sum(pg_table_size(i.inhrelid)), 0) from pg_inherits i "
                "where i.inhparent = 'samples'::regclass"
            )
        ).scalar_one()
    )
    total = size("samples")
    r1m, r1h = size("rollup_1m"), size("rollup_1h")
    r1d = int(conn.execute(text("select pg_total_relation_size('rollup_1d')")).scalar_one())
    return {
        "samples": n,
        "bytes_per_sample_total": total / n if n else 0.0,
        "bytes_per_sample_heap": heap / n if n else 0.0,
        "bytes_per_sample_indexes": (total - heap) / n if n else 0.0,
        "rollup_1m_mb": r1m / 1e6,
        "rollup_1h_mb": r1h / 1e6,
        "rollup_1d_mb": r1d / 1e6,
        "rollup_1m_rows": conn.execute(text("select count(*) from rollup_1m")).scalar_one(),
        "rollup_1h_rows": conn.execute(text("select count(*) from rollup_1h")).scalar_one(),
    }


def percentile_error(
    conn: Connection, ids: list[int], now: datetime, rng: random.Random
) -> dict[str, float]:
    """Rollup-derived p50/p95/p99 vs exact percentile_disc over the same raw samples."""
    worst: dict[str, float] = {}
    raw_from = conn.execute(text("select min(scheduled_at) from samples")).scalar_one()
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
                        "select total_ns from samples where series_id = :s and status = 'ok' "
                        "and scheduled_at >= :a and scheduled_at < :b"
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
        with raw_eng.connect() as conn:
            conn.execute(text("vacuum (analyze) samples"))
            conn.execute(text("vacuum (analyze) rollup_1m"))
            conn.execute(text("vacuum (analyze) rollup_1h"))
            conn.execute(text("vacuum (analyze) rollup_1d"))
        with engine.connect() as conn:
            results["size"] = bytes_per_sample(conn)
            print("size:", json.dumps({k: round(v, 1) for k, v in results["size"].items()}))
            now = conn.execute(text("select max(scheduled_at) from samples")).scalar_one()
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
