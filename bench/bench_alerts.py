"""Alerting benchmark: evaluation cost per cycle, and detection latency end to end.

    .venv/bin/python bench/bench_alerts.py eval      # 1,000 rules x 1,000 series
    .venv/bin/python bench/bench_alerts.py latency   # fault on -> webhook received, p50/p95

``eval`` creates 1,000 connping series (334 targets x 3 modes, every 10 s) with 10 minutes
of raw samples (1 % failures), then times ``Evaluator.run_cycle`` (median of 5 cycles,
after one warm-up) for: no rules (the baseline: catalog, stored instances, silences,
windows), 1,000 latency rules over all 1,000 series each (10^6 instance evaluations, one
shared query), 1,000 rules of mixed kinds (latency with different windows and phases,
availability m-of-n and error rate, no data) over 3 series each, and the same with 5 %
of the series slow so that 50 rules fire and write.

``latency`` starts the Oracle Net simulator, a real ``connwatch agent`` process (connping
every 2 s, default evaluation interval 15 s) and an HTTP receiver, then per round switches
a fault on (600 ms slower logons, or a refusing listener), waits for the firing webhook,
switches it off and waits for the resolution. The figure is fault on -> webhook received.
Rules: latency p50 over 30 s > 350 ms, clear < 200 ms (pending 0; the fault adds 600 ms);
availability 3 of the last 5 runs failed.
Every figure is printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app import migrate  # noqa: E402
from app.alerts.engine.cycle import Evaluator  # noqa: E402
from app.alerts.rules import RuleSpec, upsert_rule  # noqa: E402
from app.demo.pgcluster import PgCluster  # noqa: E402
from app.samples import ErrorClass, Sample, SampleStatus  # noqa: E402
from app.store.write.ingest import write_samples  # noqa: E402


def _cluster() -> tuple[PgCluster, Path, str]:
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-alerts-"))
    tmp.chmod(0o755)
    cluster = PgCluster(tmp / "pg")
    cluster.init()
    cluster.start()
    cluster.create_database("bench")
    return cluster, tmp, cluster.url("bench")


def _series(engine: Engine, n: int) -> list[int]:
    ids: list[int] = []
    with engine.begin() as conn:
        for t in range((n + 2) // 3):
            tid = conn.execute(
                text(
                    "insert into targets (name, kind, dsn, username) values (:n, 'oracle', "
                    "'db:1521/s', 'u') returning id"
                ),
                {"n": f"t{t:04d}"},
            ).scalar_one()
            for mode in ("dedicated", "shared", "pooled"):
                if len(ids) >= n:
                    break
                mid = conn.execute(
                    text(
                        "insert into modes (target_id, name, kind) values (:t, :m, :m) returning id"
                    ),
                    {"t": tid, "m": mode},
                ).scalar_one()
                ids.append(
                    conn.execute(
                        text(
                            "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                            "values (:m, 'connping', 10000, 5000) returning id"
                        ),
                        {"m": mid},
                    ).scalar_one()
                )
    return ids


def _samples(engine: Engine, ids: list[int], now: datetime, slow: set[int]) -> None:
    rows = []
    for k, sid in enumerate(ids):
        for i in range(60):  # 10 minutes every 10 s
            at = now - timedelta(seconds=10 * i + (k % 10))
            if (i * 7 + k) % 100 == 0:
                rows.append(
                    Sample(
                        sid,
                        at,
                        at,
                        SampleStatus.ERROR,
                        error_class=ErrorClass.TNS,
                        error_code="TNS-12520",
                    )
                )
                continue
            ms = (400.0 if sid in slow else 50.0) + (i * 13 + k) % 20
            ns = int(ms * 1e6)
            rows.append(
                Sample(
                    sid,
                    at,
                    at,
                    SampleStatus.OK,
                    total_ns=ns + 3_000_000,
                    logon_ns=ns,
                    ping_ns=600_000,
                    query_ns=900_000,
                    logoff_ns=2_000_000,
                )
            )
    with engine.begin() as conn:
        write_samples(conn, rows)


def _time_cycles(ev: Evaluator, now: datetime, n: int = 5) -> dict[str, float]:
    first = ev.run_cycle(now)  # the first cycle: units built, the first transitions
    runs = []
    for k in range(n):
        r = ev.run_cycle(now + timedelta(seconds=k + 1))
        runs.append(
            (r.read_ms + r.write_ms, r.read_ms, r.write_ms, r.instances, len(r.transitions))
        )
    med = sorted(runs)[len(runs) // 2]
    return {
        "first_cycle_ms": round(first.read_ms + first.write_ms, 1),
        "first_transitions": len(first.transitions),
        "cycle_ms": med[0],
        "read_ms": med[1],
        "write_ms": med[2],
        "instances": med[3],
        "transitions": med[4],
    }


def _set_rules(engine: Engine, specs: list[RuleSpec]) -> None:
    with engine.begin() as conn:
        conn.execute(text("delete from alert_rules"))
        for s in specs:
            upsert_rule(conn, s)


def bench_eval(args: argparse.Namespace) -> None:
    cluster, tmp, url = _cluster()
    try:
        engine = create_engine(url)
        migrate.upgrade(engine)
        ids = _series(engine, args.series)
        now = datetime.now(UTC).replace(microsecond=0)
        _samples(engine, ids, now, slow=set())
        ev = Evaluator(engine, lease=None, base_url="http://bench")
        load = os.getloadavg()
        print(f"{len(ids)} series, {len(ids) * 60} raw samples; {args.rules} rules; load {load}")
        _set_rules(engine, [])
        print("no rules (baseline)           ", _time_cycles(ev, now))
        _set_rules(
            engine,
            [
                RuleSpec(
                    name=f"all{i:04d}",
                    kind="latency",
                    threshold_ms=1000 + i,
                    window="5m",
                    per="series",
                )
                for i in range(args.rules)
            ],
        )
        print("1000 latency rules x all series", _time_cycles(ev, now))
        mixed = []
        for i in range(args.rules):
            sel = {"targets": [f"t{i % 334:04d}"]}
            kind = i % 4
            if kind == 0:
                mixed.append(
                    RuleSpec(
                        name=f"r{i}",
                        kind="latency",
                        threshold_ms=200,
                        selector=sel,
                        window=["1m", "5m", "10m"][i % 3],
                        phase=["logon", "total"][i % 2],
                    )
                )
            elif kind == 1:
                mixed.append(RuleSpec(name=f"r{i}", kind="availability", m=3, n=5, selector=sel))
            elif kind == 2:
                mixed.append(
                    RuleSpec(
                        name=f"r{i}",
                        kind="availability",
                        error_rate_pct=20,
                        window="5m",
                        selector=sel,
                    )
                )
            else:
                mixed.append(RuleSpec(name=f"r{i}", kind="nodata", selector=sel, per="series"))
        _set_rules(engine, mixed)
        print("1000 mixed rules x 3 series   ", _time_cycles(ev, now))
        _samples(engine, ids[::20], now + timedelta(seconds=5), slow=set(ids[::20]))
        print("same, 5 % of series slow      ", _time_cycles(ev, now + timedelta(seconds=6)))
        engine.dispose()
    finally:
        cluster.stop(mode="immediate")
        shutil.rmtree(tmp, ignore_errors=True)


def _got(rx: Any, since: int, status: str, rule: str) -> bool:
    docs = [r.json() for r in rx.requests[since:]]
    return any(d["status"] == status and d["group"]["rule"] == rule for d in docs)


def bench_latency(args: argparse.Namespace) -> None:
    from app.notify.contacts import ContactPointSpec, upsert_contact_point
    from app.oraclesim import SimConfig
    from app.secrets import Vault
    from tests.agent.conftest import add_mode, add_series, add_target
    from tests.agent.procs import KEY
    from tests.fixtures.oraclesim import OracleSimHandle
    from tests.fixtures.receivers import free_port, run_http_receiver, wait_until

    cluster, tmp, url = _cluster()
    sim = OracleSimHandle(SimConfig.default(no_latency=True))
    sim.start()
    try:
        engine = create_engine(url)
        migrate.upgrade(engine)
        port = free_port()
        with engine.begin() as conn:
            t = add_target(
                conn,
                "sim",
                kind="oracle",
                dsn=f"{sim.host}:{sim.port}/FREEPDB1",
                username="scott",
                password_ref="env:CW_BENCH_SIM_PW",
            )
            add_series(conn, add_mode(conn, t, "dedicated"), interval_ms=2000, timeout_ms=1500)
            upsert_rule(
                conn,
                RuleSpec(
                    name="lat",
                    kind="latency",
                    window="30s",
                    percentile="p50",
                    threshold_ms=350,
                    clear_ms=200,
                    contact_points=["hook"],
                    group_wait="0s",
                ),
            )
            upsert_rule(
                conn,
                RuleSpec(
                    name="avail",
                    kind="availability",
                    m=3,
                    n=5,
                    contact_points=["hook"],
                    group_wait="0s",
                ),
            )
            hook = ContactPointSpec(name="hook", channel="webhook", url=f"http://127.0.0.1:{port}/")
            upsert_contact_point(conn, hook, Vault(KEY.encode()))
        with run_http_receiver(port) as rx:
            env = {
                **os.environ,
                "CONNWATCH_DATABASE_URL": url,
                "CONNWATCH_DATA_DIR": str(tmp / "agent"),
                "CONNWATCH_SECRET_KEY": KEY,
                "CW_BENCH_SIM_PW": "tiger",
                "CONNWATCH_LOG_LEVEL": "WARNING",
            }
            proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli.main", "agent"], cwd=ROOT, env=env
            )
            try:
                time.sleep(40)  # first samples, a quiet 30-second window
                for rule, fault in (
                    ("lat", ("slow", "logon", {"delay_ms": 600})),
                    ("avail", ("refuse", "accept", {"code": 12520})),
                ):
                    delays = []
                    for _ in range(args.rounds):
                        before = len(rx.requests)
                        t0 = time.monotonic()
                        f = sim.faults.add(fault[0], fault[1], **fault[2])  # type: ignore[arg-type]
                        ok = wait_until(
                            lambda b=before, r=rule: _got(rx, b, "firing", r), 120, 0.02
                        )
                        delays.append(time.monotonic() - t0)
                        sim.faults.remove(f.id)
                        if not ok:
                            print(f"{rule}: no firing within 120 s")
                            break
                        mid = len(rx.requests)
                        wait_until(lambda m=mid, r=rule: _got(rx, m, "resolved", r), 180, 0.05)
                    qs = statistics.quantiles(delays, n=20) if len(delays) > 1 else delays * 19
                    print(
                        f"{rule}: fault on -> webhook received over {len(delays)} rounds: "
                        f"p50 {statistics.median(delays):.1f} s, p95 {qs[18]:.1f} s, "
                        f"min {min(delays):.1f} s, max {max(delays):.1f} s; load {os.getloadavg()}"
                    )
            finally:
                proc.terminate()
                proc.wait(30)
        engine.dispose()
    finally:
        sim.stop()
        cluster.stop(mode="immediate")
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["eval", "latency"])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--rules", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    bench_eval(args) if args.what == "eval" else bench_latency(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
