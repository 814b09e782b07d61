"""Server stats benchmark: what the readings cost the writer, and the server charts' reads.

Usage (a throw-away PostgreSQL from Debian's binaries unless --url is given):

    .venv/bin/python bench/bench_serverstats.py                  # --targets 20 --days 30
    .venv/bin/python bench/bench_serverstats.py --targets 5 --days 7   # quick

1. Writer overhead on ordinary batches: write_samples of 1000 connping samples per batch
   (no readings), against the same batches with the readings step taken out
   (split_server_stats alone, timed per sample), so the cost the serverstats path adds
   to every batch is read as a share of a batch.
2. Readings: ``--targets`` serverstats series x 2 instances, one reading a minute for
   ``--days`` days, written in batches as an agent would (one reading per series per
   batch minute); rows per second including the hourly recompute.
3. Reads, p50/p95 of 15 runs each: ``server_series`` for one target at 1 h, 24 h, 7 d,
   30 d and 1 y (the latency charts' ranges) and ``server_window`` for a 15-minute
   incident window; baseline in the same run: the latency chart's own read
   (``timeseries`` of one connping series, same ranges, on the same database).

Every figure is printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import migrate
from app.demo.pgcluster import PgCluster
from app.samples import Sample, SampleStatus
from app.store.read.serverstats import server_series, server_window
from app.store.read.timeseries import timeseries
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.store.write.serverstats import split_server_stats

RANGES = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "1y": timedelta(days=365),
}


def _series(engine: Engine, targets: int) -> tuple[list[int], list[int]]:
    """(serverstats series ids, connping series ids), one of each per target."""
    stats, pings = [], []
    with engine.begin() as conn:
        for i in range(targets):
            tid = conn.execute(
                text(
                    "insert into targets (name, kind, dsn, username) "
                    "values (:n, 'oracle', 'db:1521/S', 'u') returning id"
                ),
                {"n": f"t{i}"},
            ).scalar_one()
            mid = conn.execute(
                text(
                    "insert into modes (target_id, name, kind) values (:t, 'dedicated', "
                    "'dedicated') returning id"
                ),
                {"t": tid},
            ).scalar_one()
            for probe, out in (("serverstats", stats), ("connping", pings)):
                out.append(
                    conn.execute(
                        text(
                            "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                            "values (:m, :p, 60000, 10000) returning id"
                        ),
                        {"m": mid, "p": probe},
                    ).scalar_one()
                )
    return stats, pings


def reading(sid: int, at: datetime, k: int) -> Sample:
    def metrics(inst: int) -> dict[str, float]:
        wave = (k % 60) / 60
        return {
            "logons_per_s": 2 + wave,
            "logons_current": 60.0 + inst,
            "cm_ms_per_logon": 8 + 4 * wave,
            "cm_s_per_s": 0.02,
            "processes": 90.0,
            "processes_max": 120.0,
            "processes_limit": 300.0,
            "processes_pct": 30.0,
            "sessions": 70.0,
            "sessions_max": 100.0,
            "sessions_limit": 472.0,
            "sessions_pct": 14.8,
            "pool_open": 20.0,
            "pool_busy": 5.0 + 10 * wave,
            "pool_auth": 1.0,
            "pool_max": 40.0,
            "pool_busy_pct": 12.5 + 25 * wave,
            "pool_historic_max": 30.0,
            "pool_requests_per_s": 3.0,
            "pool_hits_per_s": 2.5,
            "pool_misses_per_s": 0.5,
            "pool_waits_per_s": 0.1 * wave,
            "pool_timeouts_per_s": 0.0,
            "pool_purged_per_s": 0.0,
            "pool_hit_pct": 83.3,
            "pool_wait_pct": 3.3 * wave,
            "dispatcher_busy_pct": 4 + 20 * wave,
            "dispatcher_busy_max_pct": 6 + 20 * wave,
            "dispatchers": 1.0,
            "circuits": 12.0,
            "common_wait_ms": 0.3,
            "dispatcher_wait_ms": 0.1,
            "common_queued": 0.0,
            "shared_servers_highwater": 4.0,
            "shared_servers_max": 20.0,
            "circuits_highwater": 30.0,
        }

    return Sample(
        series_id=sid,
        scheduled_at=at,
        started_at=at,
        status=SampleStatus.OK,
        query_ns=3_000_000,
        extra={
            "serverstats": {
                "source": "GV$",
                "instances": [
                    {
                        "inst_id": i,
                        "instance": f"DB{i}",
                        "startup": "2026-01-01 00:00:00",
                        "interval_s": 60.0,
                        "reset": False,
                        "metrics": metrics(i),
                        "classes": {"APP.CW": {"requests_per_s": 3.0, "waits_per_s": 0.1}},
                    }
                    for i in (1, 2)
                ],
                "unavailable": {},
            }
        },
    )


def ping(sid: int, at: datetime, k: int) -> Sample:
    ns = 40_000_000 + (k % 17) * 1_000_000
    return Sample(
        series_id=sid,
        scheduled_at=at,
        started_at=at,
        status=SampleStatus.OK,
        total_ns=ns + 5_000_000,
        logon_ns=ns,
        ping_ns=1_000_000,
        query_ns=1_500_000,
        logoff_ns=3_000_000,
        instance="DB1",
        extra={"instance_number": 1},
    )


def timed(fn: Callable[[], Any], runs: int = 15) -> tuple[float, float]:
    xs = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1000)
    xs.sort()
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.95 * len(xs)))]


def writer_overhead(engine: Engine, pings: list[int]) -> None:
    now = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(days=40)
    batches = [
        [
            ping(pings[(b * 1000 + i) % len(pings)], now + timedelta(seconds=b * 1000 + i), i)
            for i in range(1000)
        ]
        for b in range(20)
    ]
    t0 = time.perf_counter()
    for batch in batches:
        with engine.begin() as conn:
            write_samples(conn, batch)
    total = (time.perf_counter() - t0) / 20000 * 1e9
    t0 = time.perf_counter_ns()
    for batch in batches:
        split_server_stats(batch)
    split = (time.perf_counter_ns() - t0) / 20000
    print(
        f"writer, 20 batches of 1000 connping samples: {total:,.0f} ns per sample in all, "
        f"of which the serverstats split {split:,.0f} ns ({100 * split / total:.2f} %)"
    )


def load_readings(engine: Engine, stats: list[int], pings: list[int], days: int) -> datetime:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    start = end - timedelta(days=days)
    minutes = days * 1440
    t0 = time.perf_counter()
    rows = 0
    for m0 in range(0, minutes, 60):  # an hour of readings per batch: 60 x targets samples
        batch = []
        for m in range(m0, min(m0 + 60, minutes)):
            at = start + timedelta(minutes=m)
            batch += [reading(sid, at, m) for sid in stats]
            batch += [ping(sid, at, m) for sid in pings]
        with engine.begin() as conn:
            write_samples(conn, batch)
        rows += 2 * len(stats) * (min(m0 + 60, minutes) - m0)
    dt = time.perf_counter() - t0
    print(
        f"readings: {rows:,} server_stats rows ({len(stats)} series x 2 instances x {minutes:,}"
        f" minutes) with as many connping samples, {dt:.1f} s, {rows / dt:,.0f} rows/s"
    )
    t0 = time.perf_counter()
    while roll_up_pending(engine, budget_s=60).more_pending:
        pass
    print(f"latency rollups for the same span: {time.perf_counter() - t0:.1f} s")
    return end


def reads(
    engine: Engine, stats: list[int], pings: list[int], end: datetime, explain: bool = False
) -> None:
    print("range | server_series p50 / p95 ms | timeseries (latency chart) p50 / p95 ms")
    for name, span in RANGES.items():
        a = end - span
        with engine.connect() as conn:
            s50, s95 = timed(
                lambda a=a: server_series(conn, [stats[0]], a, end, min_step=timedelta(minutes=1))
            )
            t50, t95 = timed(lambda a=a: timeseries(conn, [pings[0]], a, end, phase="logon"))
        print(f"{name:>4} | {s50:7.1f} / {s95:7.1f} | {t50:7.1f} / {t95:7.1f}")
    if explain:
        from app.store.read.serverstats import CHART_METRICS, _metric_sql

        with engine.connect() as conn:
            plan = conn.execute(
                text("explain (analyze, buffers) " + _metric_sql(CHART_METRICS, "raw")),
                {
                    "step": "300 seconds",
                    "ids": [stats[0]],
                    "start": end - RANGES["24h"],
                    "end": end,
                },
            ).scalars()
            print("\n".join(plan))
    with engine.connect() as conn:
        w50, w95 = timed(
            lambda: server_window(
                conn, [stats[0]], end - timedelta(hours=5), end - timedelta(hours=4, minutes=45)
            )
        )
    print(f"server_window, a 15-minute incident: {w50:.1f} / {w95:.1f} ms (p50 / p95)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", help="SQLAlchemy URL of a database to use (default: throw-away)")
    ap.add_argument("--targets", type=int, default=20)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--explain", action="store_true", help="print the 24 h read's query plan")
    args = ap.parse_args()
    # a kill (SIGTERM) stops the throw-away PostgreSQL too, as Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-serverstats-"))
    cluster = None
    try:
        if args.url:
            url = args.url
        else:
            cluster = PgCluster(tmp / "pg")
            cluster.init()
            cluster.start()
            cluster.create_database("bench")
            url = cluster.url("bench")
        engine = create_engine(url)
        migrate.upgrade(engine)
        stats, pings = _series(engine, args.targets)
        writer_overhead(engine, pings)
        end = load_readings(engine, stats, pings, args.days)
        reads(engine, stats, pings, end, args.explain)
        engine.dispose()
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
