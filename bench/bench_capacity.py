"""Agent capacity curve: 1 worker process vs N, at 1x, 2x and 4x of a base demand.

Issue 16, item 3. Runs the real product, ``python -m app.cli.main agent --workers W``
(its own process tree: with W = 1 the single-process agent as it was before worker
processes, with W > 1 the host and its worker processes), against the Oracle Net
simulator (its own process, latency off) with sessionping series at 1 s spread over 20
targets, and a throw-away PostgreSQL store (fsync off). For each demand (``--base``
series times 1, 2 and 4) it runs W = 1 and W = ``--workers`` in turns, same series, same
simulator, same store:

- once 90 % of the series have run (the agent is up, its sessions logged on) and
  ``--warm`` seconds more, the samples whose ``scheduled_at``
  falls in the next ``--measure`` seconds are read back;
- *executed* = samples that ran (not SKIPPED) / instants due (from the series' phases);
  *runs/s* = executed / window; *lag p99* = ``started_at - scheduled_at`` of those (ms,
  nearest rank); *OVERLOAD* = SKIPPED samples with that code; *TIMEOUT* = timeout
  samples (the simulator answers at once: any TIMEOUT here would be the agent's own);
- *agent CPU* = user+system CPU of the agent's whole process tree over the window
  (``/proc``), in % of one core; *sim CPU* the same for the simulator, *store CPU* for
  the PostgreSQL server's processes; *load1* = the 1-minute load average at the start
  and end of the window.
- ``--quota Q`` caps each probing process (the single-process agent, or each worker
  process; not the light host process) at Q of one core with a cgroup (v1 ``cpu``,
  10 ms periods, needs root), once the agent is up: on a host whose cores the
  simulator and the store share, that is how "N workers against one" measures the
  agent rather than the host.

One worker's capacity is what W = 1 executes per second when overloaded (the 2x and
4x rows); "N workers / one" compares the runs/s of W = N with W = 1 at the same demand.
The simulator and the store share the machine's cores with the agent: on a 2-core host
two workers cannot reach twice one worker's runs (the simulator needs a good part of a
core at these rates); see docs/scaling.md.

    .venv/bin/python bench/bench_capacity.py                 # --base 1500 --workers 2
    .venv/bin/python bench/bench_capacity.py --base 2500 --workers 4 --multiples 1 2 4
    .venv/bin/python bench/bench_capacity.py --base 700 --multiples 1 2 4 --quota 0.4
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import due, proc_cpu_s, setup_series  # noqa: E402

from app import migrate  # noqa: E402
from app.agent.stats import percentile  # noqa: E402
from app.config import Settings  # noqa: E402
from app.demo.pgcluster import PgCluster  # noqa: E402
from app.oraclesim.tooling.runner import SimulatorProcess  # noqa: E402
from app.secrets import Vault  # noqa: E402


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc)."""
    parents: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(parents.get(p, []))
    return out


def tree_cpu_s(pids: list[int]) -> dict[int, float]:
    out = {}
    for p in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):  # ended meanwhile
            out[p] = proc_cpu_s(p)
    return out


CGROUP_CPU = Path("/sys/fs/cgroup/cpu")  # cgroup v1 cpu controller (cgroup v2: cpu.max)
QUOTA_PERIOD_US = 10_000  # short periods: a throttled worker waits at most a few ms


def cap_busy_processes(pids: list[int], quota: float, tag: str) -> list[Path]:
    """Give each process of ``pids`` that uses CPU (>= 10 % of a core over 2 s: the
    probing processes, not the host process of a worker agent) a cgroup of its own
    limited to ``quota`` of one core. Returns the cgroups (to remove afterwards)."""
    before = tree_cpu_s(pids)
    time.sleep(2.0)
    after = tree_cpu_s(pids)
    busy = [p for p in before if p in after and after[p] - before[p] >= 0.2]
    groups = []
    for p in busy:
        g = CGROUP_CPU / f"connwatch-bench-{tag}-{p}"
        g.mkdir(exist_ok=True)
        (g / "cpu.cfs_period_us").write_text(str(QUOTA_PERIOD_US))
        (g / "cpu.cfs_quota_us").write_text(str(int(quota * QUOTA_PERIOD_US)))
        (g / "cgroup.procs").write_text(str(p))
        groups.append(g)
    print(f"  capped {len(groups)} processes at {quota:g} core each", file=sys.stderr)
    return groups


def release(groups: list[Path]) -> None:
    for g in groups:
        with contextlib.suppress(OSError):
            for p in (g / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    (CGROUP_CPU / "cgroup.procs").write_text(p)
            g.rmdir()


def run_agent(
    url: str, data_dir: Path, key: str, workers: int, sim_pid: int, ids: list[int],
    engine: Engine, warm_s: float, measure_s: float, quota: float | None = None,
    pg_pid: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")}
    env.update(
        CONNWATCH_DATABASE_URL=url,
        CONNWATCH_DATA_DIR=str(data_dir),
        CONNWATCH_SECRET_KEY=key,
        CONNWATCH_AGENT_NAME=f"cap-w{workers}",
        CONNWATCH_AGENT_WORKERS=str(workers),
        CONNWATCH_AGENT_LOGONS_PER_S="2000",  # the first logon wave: not what is measured
        CONNWATCH_AGENT_TARGET_LOGONS_PER_S="200",
        CONNWATCH_ALERTS_ENABLED="false",
        CONNWATCH_LOG_LEVEL=os.environ.get("CW_BENCH_LOG_LEVEL", "WARNING"),
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir / "agent.log"  # a file: an unread pipe would fill and block the agent
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "agent"], cwd=ROOT, env=env,
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        started = datetime.now(UTC)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            with engine.connect() as conn:
                up = conn.execute(
                    text(
                        "select count(distinct series_id) from samples "
                        "where status = 'ok' and scheduled_at > :s"
                    ),
                    {"s": started},
                ).scalar_one()
            if up >= 0.9 * len(ids):  # started, (nearly) every session logged on
                break
            time.sleep(1.0)
        groups: list[Path] = []
        if quota:
            groups = cap_busy_processes(tree(proc.pid), quota, f"w{workers}")
        time.sleep(warm_s)
        pids = tree(proc.pid)
        cpu0, sim0, load0 = tree_cpu_s(pids), proc_cpu_s(sim_pid), os.getloadavg()[0]
        pg_pids = tree(pg_pid) if pg_pid else []
        pg0 = tree_cpu_s(pg_pids)
        t0 = datetime.now(UTC)
        time.sleep(measure_s)
        t1 = datetime.now(UTC)
        cpu1, sim1, load1 = tree_cpu_s(pids), proc_cpu_s(sim_pid), os.getloadavg()[0]
        pg1 = tree_cpu_s(pg_pids)
        if os.environ.get("CW_BENCH_DEBUG"):  # the writers' state at the window's end
            with engine.connect() as conn:
                for (st,) in conn.execute(text("select stats from agents")):
                    for w in (st or {}).get("workers", [st or {}]):
                        keys = ("written", "queued", "memory_backlog", "spool_samples")
                        print("  writer", {k: w.get(k) for k in keys}, file=sys.stderr)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if quota:
            release(groups)
    if proc.returncode != 0 or os.environ.get("CW_BENCH_DEBUG"):
        lines = log.read_text(errors="replace").splitlines()
        print("\n".join(lines[:20]), file=sys.stderr)
        print("\n".join([ln for ln in lines if " window " in ln][-40:]), file=sys.stderr)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select status, error_code, extract(epoch from started_at - scheduled_at) * 1000 "
                "from samples where scheduled_at >= :a and scheduled_at < :b"
            ),
            {"a": t0, "b": t1},
        ).all()
        if os.environ.get("CW_BENCH_DEBUG"):  # where the late starts are, 100 ms buckets
            for b in conn.execute(
                text(
                    "select status, error_code, count(*), min(error_message) from samples "
                    "where scheduled_at >= :a and scheduled_at < :b group by 1, 2"
                ),
                {"a": t0, "b": t1},
            ):
                print("  outcome", *b, file=sys.stderr)
            for b in conn.execute(
                text(
                    "select to_char(date_trunc('second', scheduled_at), 'MI:SS') "
                    "|| '.' || (extract(milliseconds from scheduled_at)::int % 1000 / 100), "
                    "count(*), count(*) filter (where status = 'skipped'), "
                    "max(extract(epoch from started_at - scheduled_at) * 1000) "
                    "filter (where status <> 'skipped') "
                    "from samples where scheduled_at >= :a and scheduled_at < :b "
                    "group by 1 having max(extract(epoch from started_at - scheduled_at) "
                    "* 1000) filter (where status <> 'skipped') > 20 order by 1"
                ),
                {"a": t0, "b": t1},
            ):
                print("  late bucket", *b, file=sys.stderr)
        conn.execute(text("delete from samples"))
        conn.commit()
    expected = due(ids, 1000, t0, t1)
    ran = [r for r in rows if r[0] != "skipped"]
    lags = sorted(float(r[2]) for r in ran)
    window = (t1 - t0).total_seconds()
    agent_cpu = sum(cpu1.get(p, 0.0) - cpu0.get(p, 0.0) for p in cpu0)
    return {
        "workers": workers,
        "series": len(ids),
        "due": expected,
        "executed_pct": round(100 * len(ran) / expected, 1) if expected else 0.0,
        "runs_per_s": round(len(ran) / window),
        "lag_p50_ms": round(percentile(lags, 50), 2),
        "lag_p99_ms": round(percentile(lags, 99), 2),
        "overload": sum(1 for r in rows if r[1] == "OVERLOAD"),
        "timeout": sum(1 for r in rows if r[0] == "timeout"),
        "other": sum(1 for r in rows if r[0] not in ("ok", "timeout") and r[1] != "OVERLOAD"),
        "missing": expected - len(rows),
        "agent_cpu_pct": round(100 * agent_cpu / window),
        "sim_cpu_pct": round(100 * (sim1 - sim0) / window),
        "store_cpu_pct": round(100 * sum(pg1.get(p, 0.0) - v for p, v in pg0.items()) / window),
        "load1": f"{load0:.1f}-{load1:.1f}",
        "quota": f"{quota:g}" if quota else "-",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=int, default=1500, help="series at 1 s for 1x")
    ap.add_argument("--workers", type=int, default=2, help="N, compared with 1")
    ap.add_argument("--multiples", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--warm", type=float, default=10.0)
    ap.add_argument("--measure", type=float, default=20.0)
    ap.add_argument(
        "--quota",
        type=float,
        help="cap each probing process at this share of one core (cgroup v1 cpu): "
        "shows how workers scale when the host's cores are not the limit",
    )
    ap.add_argument(
        "--only", type=int, nargs="+", help="run only these worker counts (default: 1 and N)"
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-capacity-"))
    tmp.chmod(0o755)
    cluster = PgCluster(tmp / "pg")
    cluster.init()
    cluster.start()
    key = Fernet.generate_key().decode()
    results: list[dict[str, Any]] = []
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores", flush=True)
    try:
        sim_cfg = tmp / "sim.yaml"
        sim_cfg.write_text("processes: 100000\n")  # no ORA-00020 at thousands of sessions
        with SimulatorProcess(sim_cfg, no_latency=True) as sim:
            assert sim.proc is not None
            for m in args.multiples:
                db = f"cap{m}"
                cluster.create_database(db)
                url = cluster.url(db)
                engine = create_engine(url, pool_pre_ping=True)
                migrate.upgrade(engine)
                vault = Vault.from_settings(
                    Settings(database_url=url, data_dir=tmp, secret_key=key)
                )
                ids = setup_series(engine, vault, sim.port, args.base * m, "sessionping", 1000, 900)
                for w in args.only or (1, args.workers):
                    r = run_agent(
                        url, tmp / f"d{m}-{w}", key, w, sim.proc.pid, ids, engine,
                        args.warm, args.measure, args.quota, cluster.running_pid(),
                    )  # fmt: skip
                    r["demand"] = f"{m}x"
                    results.append(r)
                    print(r, flush=True)
                engine.dispose()
    finally:
        cluster.stop(mode="immediate")
        shutil.rmtree(tmp, ignore_errors=True)
    cols = [
        "demand", "workers", "series", "executed_pct", "runs_per_s", "lag_p50_ms",
        "lag_p99_ms", "overload", "timeout", "other", "missing", "agent_cpu_pct",
        "sim_cpu_pct", "store_cpu_pct", "load1", "quota",
    ]  # fmt: skip
    print("\n| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in results:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    one = {r["demand"]: r["runs_per_s"] for r in results if r["workers"] == 1}
    for r in results:
        if r["workers"] != 1 and one.get(r["demand"]):
            ratio = r["runs_per_s"] / one[r["demand"]]
            print(f"{r['demand']}: {r['workers']} workers / one = {ratio:.2f}")


if __name__ == "__main__":
    main()
