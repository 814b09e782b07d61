"""Agent benchmarks: cadence under load, and the writer against a raw COPY loop.

Prints one table per part. Run from the repository root:

    uv run --frozen python bench/bench_agent.py            # all parts, default sizes
    uv run --frozen python bench/bench_agent.py --only writer

Parts:
- ``sessionping``: N sessionping series at 1 s against the Oracle Net simulator (its
  own process, latency off), spread over 20 targets; after a warm-up, counts the
  samples whose scheduled instant falls in the measuring window: executed share =
  (samples that ran) / (instants due), start lag = started_at - scheduled_at of
  those, CPU per run = agent process CPU in the window / runs in the window.
- ``connping``: M connping series at 10 s (a fresh logon every run), same figures.
- ``writer``: S synthetic samples (1,000 series, ~100 ms of instants per 100,000, so
  every batch touches 1,000 (series, minute) pairs) through
  :class:`app.agent.output.writer.Writer` (``write_samples``: binary COPY straight into
  ``samples`` in a savepoint plus one statement queueing the batch's (series, minute)
  pairs for the rollups; ``--write-batch`` per batch, ``--write-threads`` batches in
  flight, one transaction each) against a raw psycopg binary COPY loop straight into
  ``samples`` (same rows, same batch size, one commit per batch, no rollup queue),
  alternated ``--rounds`` times in the same run. Load averages (1 min) are printed
  before and after the part. ``--writer-baseline REV`` adds a third contender in every
  round: the same Writer with ``write_samples`` as it was at git revision REV (before
  and after side by side).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from cryptography.fernet import Fernet
from psycopg import sql
from psycopg.types.json import Jsonb
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import migrate  # noqa: E402
from app.agent.options import AgentOptions  # noqa: E402
from app.agent.output.spool import Spool  # noqa: E402
from app.agent.output.writer import Writer  # noqa: E402
from app.agent.scheduling.phase import phase_offset_ms  # noqa: E402
from app.agent.service import Agent  # noqa: E402
from app.agent.stats import percentile  # noqa: E402
from app.config import Settings  # noqa: E402
from app.demo.pgcluster import PgCluster  # noqa: E402
from app.oraclesim.tooling.runner import SimulatorProcess  # noqa: E402
from app.samples import Sample, SampleStatus  # noqa: E402
from app.secrets import Vault  # noqa: E402
from app.store.layout import COLUMNS, SAMPLE_TYPES  # noqa: E402


def setup_series(
    engine: Engine, vault: Vault, port: int, n: int, probe: str, interval_ms: int, timeout_ms: int
) -> list[int]:
    """n series over 20 Oracle targets (dedicated mode), password encrypted."""
    targets = 20
    ids: list[int] = []
    token = vault.encrypt("tiger")
    with engine.begin() as conn:
        tids = [
            conn.execute(
                text(
                    "insert into targets (name, kind, dsn, username, password_enc) "
                    "values (:n, 'oracle', :d, 'scott', :p) returning id"
                ),
                {"n": f"sim{t:02d}", "d": f"127.0.0.1:{port}/FREEPDB1", "p": token},
            ).scalar_one()
            for t in range(targets)
        ]
        for i in range(n):
            mid = conn.execute(
                text(
                    "insert into modes (target_id, name, kind) "
                    "values (:t, :n, 'dedicated') returning id"
                ),
                {"t": tids[i % targets], "n": f"ded{i:05d}"},
            ).scalar_one()
            ids.append(
                conn.execute(
                    text(
                        "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                        "values (:m, :p, :i, :t) returning id"
                    ),
                    {"m": mid, "p": probe, "i": interval_ms, "t": timeout_ms},
                ).scalar_one()
            )
    return ids


def due(ids: list[int], interval_ms: int, t0: datetime, t1: datetime) -> int:
    """Instants in [t0, t1) summed over the series."""
    a = -int(-t0.timestamp() * 1000 // 1)  # first whole ms at or after t0
    b = -int(-t1.timestamp() * 1000 // 1)
    total = 0
    for sid in ids:
        off = phase_offset_ms(sid, interval_ms)
        first = a + (off - a) % interval_ms
        if first < b:
            total += (b - 1 - first) // interval_ms + 1
    return total


def proc_cpu_s(pid: int) -> float:
    """User+system CPU seconds of process ``pid`` (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cadence(
    cluster: PgCluster,
    sim: SimulatorProcess,
    name: str,
    n: int,
    probe: str,
    interval_ms: int,
    timeout_ms: int,
    warm_s: float,
    measure_s: float,
    tmp: Path,
) -> dict[str, Any]:
    db = f"bench_{name}"
    cluster.create_database(db)
    engine = create_engine(cluster.url(db), pool_pre_ping=True)
    migrate.upgrade(engine)
    settings = Settings(
        database_url=cluster.url(db),
        data_dir=tmp / name,
        secret_key=Fernet.generate_key().decode(),
        agent_name=f"bench-{name}",
    )
    vault = Vault.from_settings(settings)
    ids = setup_series(engine, vault, sim.port, n, probe, interval_ms, timeout_ms)
    marks: dict[str, Any] = {}
    assert sim.proc is not None
    sim_pid = sim.proc.pid

    async def go() -> Agent:
        agent = Agent(engine, settings, AgentOptions())
        await agent.start()
        await asyncio.sleep(warm_s)
        marks["t0"] = datetime.now(UTC)
        marks["cpu0"], marks["runs0"] = time.process_time(), agent.stats.runs
        marks["sim0"], marks["load0"] = proc_cpu_s(sim_pid), os.getloadavg()[0]
        await asyncio.sleep(measure_s)
        marks["t1"] = datetime.now(UTC)
        marks["cpu1"], marks["runs1"] = time.process_time(), agent.stats.runs
        marks["sim1"], marks["load1"] = proc_cpu_s(sim_pid), os.getloadavg()[0]
        await agent.stop()
        return agent

    asyncio.run(go())
    t0, t1 = marks["t0"], marks["t1"]
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select status, error_code, extract(epoch from started_at - scheduled_at) * 1000 "
                "from samples where scheduled_at >= :a and scheduled_at < :b"
            ),
            {"a": t0, "b": t1},
        ).all()
    engine.dispose()
    expected = due(ids, interval_ms, t0, t1)
    ran = [r for r in rows if r[0] != "skipped"]
    lags = sorted(float(r[2]) for r in ran)
    by_status: dict[str, int] = {}
    for r in rows:
        key = r[0] if r[0] in ("ok", "timeout") else f"{r[0]}:{r[1]}"
        by_status[key] = by_status.get(key, 0) + 1
    runs = marks["runs1"] - marks["runs0"]
    return {
        "part": name,
        "series": n,
        "interval_s": interval_ms / 1000,
        "window_s": round((t1 - t0).total_seconds(), 1),
        "due": expected,
        "samples": len(rows),
        "executed_pct": round(100 * len(ran) / expected, 3) if expected else 0.0,
        "lag_p50_ms": round(percentile(lags, 50), 2),
        "lag_p95_ms": round(percentile(lags, 95), 2),
        "lag_p99_ms": round(percentile(lags, 99), 2),
        "lag_max_ms": round(lags[-1], 2) if lags else 0.0,
        "cpu_ms_per_run": round(1000 * (marks["cpu1"] - marks["cpu0"]) / runs, 3) if runs else None,
        "cpu_pct": round(100 * (marks["cpu1"] - marks["cpu0"]) / measure_s, 1),
        "sim_cpu_pct": round(100 * (marks["sim1"] - marks["sim0"]) / measure_s, 1),
        "sim_cpu_ms_per_run": (
            round(1000 * (marks["sim1"] - marks["sim0"]) / runs, 3) if runs else None
        ),
        "load1": [round(marks["load0"], 2), round(marks["load1"], 2)],
        "by_status": by_status,
    }


def make_samples(n: int, series_base: int) -> list[Sample]:
    at0 = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    out = []
    for i in range(n):
        at = at0 + timedelta(milliseconds=i // 1000)
        out.append(
            Sample(
                series_id=series_base + i % 1000,
                scheduled_at=at,
                started_at=at + timedelta(microseconds=700),
                status=SampleStatus.OK,
                total_ns=2_000_000 + i,
                logon_ns=1_500_000,
                ping_ns=100_000,
                query_ns=150_000,
                logoff_ns=200_000,
                round_trips=7,
                logon_phases={"tcp_connect": 100_000, "connect": 300_000, "auth2": 500_000},
                sid=100 + i % 50,
                serial=7,
                instance="FREE",
                service="FREEPDB1",
                server_type="DEDICATED",
                agent="bench",
                site="default",
                extra={},
            )
        )
    return out


def raw_copy(dsn: str, samples: list[Sample], batch: int) -> float:
    from operator import attrgetter

    get = attrgetter(*COLUMNS)
    stmt = sql.SQL("copy samples ({}) from stdin (format binary)").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS)
    )
    with psycopg.connect(dsn) as conn:
        t0 = time.perf_counter()
        for i in range(0, len(samples), batch):
            with conn.cursor() as cur, cur.copy(stmt) as cp:
                cp.set_types(list(SAMPLE_TYPES))
                for s in samples[i : i + batch]:
                    row = list(get(s))
                    row[3] = str(row[3])
                    for j in (12, 24):
                        if row[j] is not None:
                            row[j] = Jsonb(row[j])
                    cp.write_row(row)
            conn.commit()
        return time.perf_counter() - t0


def through_writer(
    engine: Engine, samples: list[Sample], tmp: Path, threads: int, batch: int = 1000
) -> float:
    opt = AgentOptions(batch_max=batch, flush_s=1.0, write_threads=threads)
    w = Writer(engine, Spool(tmp, 1 << 30), opt)
    w.start()
    t0 = time.perf_counter()
    for s in samples:
        w.submit(s)
    while w.handed < len(samples):
        time.sleep(0.001)
    elapsed = time.perf_counter() - t0
    w.stop()
    return elapsed


def ingest_at(rev: str) -> Callable[..., int]:
    """``write_samples`` as app/store/write/ingest.py had it at git revision ``rev``."""
    src = subprocess.run(
        ["git", "show", f"{rev}:app/store/write/ingest.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    mod = types.ModuleType(f"ingest_at_{rev}")
    exec(compile(src, f"{rev}:app/store/write/ingest.py", "exec"), mod.__dict__)
    fn: Callable[..., int] = mod.write_samples
    return fn


def writer_part(
    cluster: PgCluster,
    n: int,
    tmp: Path,
    threads: int,
    batch: int,
    rounds: int,
    baseline: str | None = None,
) -> dict[str, Any]:
    import app.agent.output.writer as writer_module

    current = writer_module.write_samples
    old = ingest_at(baseline) if baseline else None
    cluster.create_database("bench_writer")
    engine = create_engine(cluster.url("bench_writer"), pool_size=max(5, threads + 1))
    migrate.upgrade(engine)
    dsn = cluster.dsn("bench_writer")
    load0 = os.getloadavg()[0]
    results = []
    before: list[float] = []
    for k in range(rounds):
        raw_s = raw_copy(dsn, make_samples(n, 10_000 * (3 * k + 1)), batch)
        w_s = through_writer(
            engine, make_samples(n, 10_000 * (3 * k + 2)), tmp / f"w{k}", threads, batch
        )
        results.append((n / raw_s, n / w_s))
        if old is not None:
            writer_module.write_samples = old  # type: ignore[assignment]
            try:
                b_s = through_writer(
                    engine, make_samples(n, 10_000 * (3 * k + 3)), tmp / f"b{k}", threads, batch
                )
            finally:
                writer_module.write_samples = current
            before.append(n / b_s)
    load1 = os.getloadavg()[0]
    with engine.connect() as conn:
        stored = conn.execute(text("select count(*) from samples")).scalar_one()
    engine.dispose()
    return {
        "part": "writer",
        "samples_per_round": n,
        "write_threads": threads,
        "write_batch": batch,
        "raw_copy_per_s": [round(r) for r, _ in results],
        "writer_per_s": [round(w) for _, w in results],
        "ratio": [round(w / r, 3) for r, w in results],
        "writer_median_per_s": round(statistics.median(w for _, w in results)),
        "ratio_median": round(statistics.median(w / r for r, w in results), 3),
        "stored": stored,
        "expected_stored": (3 if old else 2) * rounds * n,
        "load1": [round(load0, 2), round(load1, 2)],
        **(
            {
                "baseline": baseline,
                "baseline_per_s": [round(b) for b in before],
                "baseline_ratio": [
                    round(b / r, 3) for b, (r, _) in zip(before, results, strict=True)
                ],
                "baseline_median_per_s": round(statistics.median(before)),
            }
            if old
            else {}
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["sessionping", "connping", "writer"], action="append")
    ap.add_argument("--sessionping-series", type=int, default=1000)
    ap.add_argument("--connping-series", type=int, default=200)
    ap.add_argument("--warm", type=float, default=15.0)
    ap.add_argument("--measure", type=float, default=30.0)
    ap.add_argument("--connping-measure", type=float, default=40.0)
    ap.add_argument("--writer-samples", type=int, default=100_000)
    ap.add_argument("--write-threads", type=int, default=AgentOptions().write_threads)
    ap.add_argument("--write-batch", type=int, default=AgentOptions().batch_max)
    ap.add_argument("--rounds", type=int, default=3, help="writer: raw/writer alternations")
    ap.add_argument("--writer-baseline", metavar="REV", help="writer: also run ingest.py at REV")
    args = ap.parse_args()
    parts = args.only or ["sessionping", "connping", "writer"]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if os.environ.get("CW_BENCH_DEBUG"):
        logging.getLogger("app.agent.scheduling.overload").setLevel(logging.DEBUG)
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-agent-"))
    tmp.chmod(0o755)
    cluster = PgCluster(tmp / "pg")
    cluster.init()
    cluster.start()
    results: list[dict[str, Any]] = []
    try:
        if "sessionping" in parts or "connping" in parts:
            sim_cfg = tmp / "sim.yaml"
            sim_cfg.write_text("processes: 100000\n")  # no ORA-00020 at thousands of sessions
            with SimulatorProcess(sim_cfg, no_latency=True) as sim:
                if "sessionping" in parts:
                    results.append(
                        cadence(
                            cluster,
                            sim,
                            "sessionping",
                            args.sessionping_series,
                            "sessionping",
                            1000,
                            900,
                            args.warm,
                            args.measure,
                            tmp,
                        )
                    )
                    print(results[-1], flush=True)
                if "connping" in parts:
                    results.append(
                        cadence(
                            cluster,
                            sim,
                            "connping",
                            args.connping_series,
                            "connping",
                            10_000,
                            5000,
                            min(args.warm, 12.0),
                            args.connping_measure,
                            tmp,
                        )
                    )
                    print(results[-1], flush=True)
        if "writer" in parts:
            results.append(
                writer_part(
                    cluster,
                    args.writer_samples,
                    tmp,
                    args.write_threads,
                    args.write_batch,
                    args.rounds,
                    args.writer_baseline,
                )
            )
            print(results[-1], flush=True)
    finally:
        cluster.stop(mode="immediate")
        shutil.rmtree(tmp, ignore_errors=True)
    print("\nsummary")
    for r in results:
        print("  " + ", ".join(f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
