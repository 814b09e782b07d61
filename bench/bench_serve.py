"""The web under load while the agent probes beside it: ``connwatch serve --workers W``.

Issue 16, item 4. Runs the real product, ``python -m app.cli.main serve --workers W``
(W web processes sharing the port, the agent in a process of its own, one agent worker),
against the Oracle Net simulator (its own process, latency off) with ``--series``
sessionping series at 1 s over 20 targets, and a throw-away PostgreSQL store. For W = 1
and W = ``--workers`` in turns:

- *idle*: ``--window`` seconds without web traffic: the agent's start lag p99
  (``started_at - scheduled_at`` of the runs whose instant falls in the window, from the
  stored samples, nearest rank);
- *load*: Debian's ``wrk`` (``-t2 -c--connections -d--window``, ``--latency``) over a
  mix of pages, API calls and ``/metrics`` (round robin, below); requests/s, latency
  p50/p99 as wrk reports them, non-2xx responses; and the agent's start lag p99 over
  the same seconds.

The mix: the overview (``/``), a target page, its timeseries API call, the compare page
and API call, the Agents page, the Samples page and ``/metrics``. Every URL is checked
to answer 200 before the run. Load averages (1 min) are printed at the start and end
of each window, and how wrk's connections were spread over the web processes. Needs
``wrk`` (``apt-get install wrk``).

``--demo`` runs the product as the README's first command does (``connwatch demo``: its
embedded PostgreSQL, two simulated Oracle databases with their latency, a local
PostgreSQL, the demo targets: 3 targets, 11 modes, 19 series) instead of the
``--series`` sessionping series; the issue's own setting ("the demo on 2 cores").
``--rate R`` offers about R requests/s (each connection pauses ``connections / R``
seconds before its next request, wrk's ``delay()``) instead of as many as the server
answers: the latency of serving R, not of saturation. ``--reads-cache S`` sets
``CONNWATCH_READS_CACHE_S`` (and the overview's and ``/metrics``' reuse) for the served
product: 0 reads the store for every request.

    .venv/bin/python bench/bench_serve.py                  # --series 300 --workers 2
    .venv/bin/python bench/bench_serve.py --demo --repeat 3
    .venv/bin/python bench/bench_serve.py --demo --rate 200 --workers 2
    .venv/bin/python bench/bench_serve.py --connections 64 --window 30
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_agent import setup_series  # noqa: E402

from app import migrate  # noqa: E402
from app.agent.stats import percentile  # noqa: E402
from app.config import Settings  # noqa: E402
from app.demo.pgcluster import PgCluster, free_port  # noqa: E402
from app.oraclesim.tooling.runner import SimulatorProcess  # noqa: E402
from app.secrets import Vault  # noqa: E402

DEMO_MIX = [
    "/",
    "/target/sales-sim?range=1h",
    "/api/v1/targets/sales-sim/timeseries?phase=logon&range=1h",
    "/compare?target=hr-sim&range=24h",
    "/api/v1/compare?target=hr-sim&range=24h",
    "/agents",
    "/samples?target=hr-sim",
    "/metrics",
]
MIX = [
    "/",
    "/target/sim00?range=1h",
    "/api/v1/targets/sim00/timeseries?phase=logon&range=1h",
    "/compare?target=sim01&range=24h",
    "/api/v1/compare?target=sim01&range=24h",
    "/agents",
    "/samples?target=sim02",
    "/metrics",
]


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return int(res.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except OSError:
        return 0


def lag_p99(engine: Engine, t0: datetime, t1: datetime) -> tuple[float, int]:
    with engine.connect() as conn:
        lags = sorted(
            float(r[0])
            for r in conn.execute(
                text(
                    "select extract(epoch from started_at - scheduled_at) * 1000 from samples "
                    "where scheduled_at >= :a and scheduled_at < :b and status <> 'skipped'"
                ),
                {"a": t0, "b": t1},
            )
        )
    return round(percentile(lags, 99), 2), len(lags)


def wrk(port: int, script: Path, connections: int, seconds: float) -> dict[str, Any]:
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{int(seconds)}s", "--latency", "-s", str(script),
         f"http://127.0.0.1:{port}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip

    def ms(label: str) -> float:
        m = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\b", out, re.M)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors:.*", out)
    return {
        "rps": float(rps.group(1)) if rps else 0.0,
        "p50_ms": ms("50%"),
        "p99_ms": ms("99%"),
        "non_2xx": int(bad.group(1)) if bad else 0,
        "socket_errors": errors.group(0) if errors else "",
    }


def spread(port: int) -> str:
    """wrk's connections per web process ("13+19"), from ``ss``."""
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True).stdout  # fmt: skip
    counts: dict[str, int] = {}
    for pid in re.findall(r"pid=(\d+)", out):
        counts[pid] = counts.get(pid, 0) + 1
    return "+".join(str(n) for n in sorted(counts.values())) or "?"


def one(
    workers: int, url: str, tmp: Path, key: str, engine: Engine | None, script: Path, args: Any
) -> dict[str, Any]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")}
    cache = str(args.reads_cache)
    env.update(
        CONNWATCH_PORT=str(port),
        CONNWATCH_WEB_WORKERS=str(workers),
        CONNWATCH_LOG_LEVEL="WARNING",
        CONNWATCH_READS_CACHE_S=cache,
        CONNWATCH_OVERVIEW_CACHE_S=cache,
        CONNWATCH_METRICS_CACHE_S=cache,
        # loopback reads without login, /metrics without a token: the pages' own cost
        CONNWATCH_ANONYMOUS_ROLE="viewer",
        CONNWATCH_METRICS_PUBLIC="true",
    )
    if args.demo:
        data = tmp / f"demo-{workers}-{time.monotonic_ns()}"
        env.update(CONNWATCH_DATA_DIR=str(data))
        command = [sys.executable, "-m", "app.cli.main", "demo"]
    else:
        env.update(
            CONNWATCH_DATABASE_URL=url,
            CONNWATCH_DATA_DIR=str(tmp / f"serve-{workers}"),
            CONNWATCH_SECRET_KEY=key,
            CONNWATCH_AGENT_NAME=f"serve-w{workers}",
            CONNWATCH_AGENT_WORKERS="1",
        )
        command = [sys.executable, "-m", "app.cli.main", "serve", "--workers", str(workers)]
    log = tmp / f"serve-{workers}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    mix = DEMO_MIX if args.demo else MIX
    own_engine = None
    try:
        deadline = time.monotonic() + 300
        while status(base + "/healthz") != 200:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(log.read_text()[-3000:])
            time.sleep(1)
        if engine is None:  # the demo's embedded store, through its socket
            engine = own_engine = create_engine(
                f"postgresql+psycopg://postgres@/connwatch?host={data / 'pg'}"
            )
        started = datetime.now(UTC)
        with engine.connect() as conn:  # (nearly) every enabled series has answered
            enabled = conn.execute(text("select count(*) from series where enabled")).scalar_one()
        expected = 0.9 * enabled
        while True:  # the agent is up and (nearly) every session logged on
            with engine.connect() as conn:
                up = conn.execute(
                    text(
                        "select count(distinct series_id) from samples "
                        "where status = 'ok' and scheduled_at > :s"
                    ),
                    {"s": started},
                ).scalar_one()
            if up >= expected:
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(log.read_text()[-3000:])
            time.sleep(1)
        time.sleep(args.warm)
        codes = {p: status(base + p) for p in mix}
        alone = {}  # each path on its own, no other traffic: median of 3 (ms)
        for p in mix:
            took = []
            for _ in range(3):
                t = time.perf_counter_ns()
                status(base + p)
                took.append((time.perf_counter_ns() - t) / 1e6)
            alone[p] = round(sorted(took)[1], 1)
        print(f"  alone (ms): {alone}", flush=True)
        bad = {p: c for p, c in codes.items() if c != 200}
        if bad:
            print(f"not 200, left in the mix anyway: {bad}", flush=True)
        load0 = os.getloadavg()[0]
        t0 = datetime.now(UTC)
        time.sleep(args.window)
        t1 = datetime.now(UTC)
        idle = lag_p99(engine, t0, t1)
        load1 = os.getloadavg()[0]
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(wrk, port, script, args.connections, args.window)
            time.sleep(min(3.0, args.window / 2))
            split = spread(port)
            w = running.result()
        t2 = datetime.now(UTC)
        load2 = os.getloadavg()[0]
        busy = lag_p99(engine, t1, t2)
    finally:
        if own_engine is not None:
            own_engine.dispose()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return {
        "web_workers": workers,
        "rps": w["rps"],
        "p50_ms": w["p50_ms"],
        "p99_ms": w["p99_ms"],
        "non_2xx": w["non_2xx"],
        "socket_errors": w["socket_errors"],
        "lag_p99_idle_ms": idle[0],
        "lag_p99_load_ms": busy[0],
        "runs_idle": idle[1],
        "runs_load": busy[1],
        "connections": split,
        "load1": f"{load0:.1f}/{load1:.1f}/{load2:.1f}",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2, help="web processes, compared with 1")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--window", type=float, default=20.0)
    ap.add_argument("--warm", type=float, default=15.0)
    ap.add_argument("--demo", action="store_true", help="serve the demo (connwatch demo)")
    ap.add_argument("--reads-cache", type=float, default=1.0, help="CONNWATCH_*_CACHE_S")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each worker count")
    ap.add_argument("--rate", type=float, default=0.0, help="offer about this many requests/s")
    args = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-serve-"))
    tmp.chmod(0o755)
    key = Fernet.generate_key().decode()
    script = tmp / "mix.lua"
    paths = ", ".join(f'"{p}"' for p in (DEMO_MIX if args.demo else MIX))
    pause = ""
    if args.rate:  # each connection waits before its next request: about --rate in all
        pause = f"delay = function()\n  return {1000 * args.connections / args.rate:.0f}\nend\n"
    script.write_text(
        f"local paths = {{{paths}}}\nlocal i = 0\n"
        "request = function()\n  i = i % #paths + 1\n  return wrk.format('GET', paths[i])\nend\n"
        + pause
    )
    results = []
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores", flush=True)
    runs = [w for _ in range(args.repeat) for w in (1, args.workers)]
    if args.demo:
        try:
            for w in runs:
                results.append(r := one(w, "", tmp, key, None, script, args))
                print(r, flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        cluster = PgCluster(tmp / "pg")
        cluster.init()
        cluster.start()
        try:
            sim_cfg = tmp / "sim.yaml"
            sim_cfg.write_text("processes: 100000\n")
            with SimulatorProcess(sim_cfg, no_latency=True) as sim:
                cluster.create_database("serve")
                url = cluster.url("serve")
                engine = create_engine(url, pool_pre_ping=True)
                migrate.upgrade(engine)
                settings = Settings(database_url=url, data_dir=tmp, secret_key=key)
                setup_series(engine, Vault.from_settings(settings), sim.port, args.series,
                             "sessionping", 1000, 900)  # fmt: skip
                for w in runs:
                    results.append(r := one(w, url, tmp, key, engine, script, args))
                    print(r, flush=True)
                engine.dispose()
        finally:
            cluster.stop(mode="immediate")
            shutil.rmtree(tmp, ignore_errors=True)
    cols = list(results[0]) if results else []
    print("\n| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in results:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")


if __name__ == "__main__":
    main()
