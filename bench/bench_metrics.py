"""/metrics benchmark: what the cumulative counters and histograms cost per scrape.

On the store benchmark's synthetic dataset (``app.store.write.synthetic.generate``: raw
samples for ``--days``, 1-hour/1-day/1-week rollups for ``--rollup-days``), served by
the real app (uvicorn on loopback). Per request the app's own ``Server-Timing`` header,
p50 / p95 / max over ``--iterations`` after one warm-up; side by side in the same run:

- ``/metrics``: everything (cumulative figures per series, the overview's gauges,
  agents, alerts);
- ``/api/v1/overview``: the baseline, the overview's data /metrics also reads;
- the store call alone, ``app.store.read.totals.totals`` for every series (in-process,
  wall time around the call).

Usage (a throw-away PostgreSQL from Debian's binaries):

    .venv/bin/python bench/bench_metrics.py                        # 30 series, a year
    .venv/bin/python bench/bench_metrics.py --series 100 --rollup-days 365

Prints every figure; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import numpy as np
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import migrate
from app.config import Settings
from app.demo.pgcluster import PgCluster, free_port
from app.secrets import Vault
from app.store.read.totals import totals
from app.store.write.synthetic import generate
from app.web.app import create_app


def _stats(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 1),
        "p95_ms": round(float(np.percentile(a, 95)), 1),
        "max_ms": round(float(a.max()), 1),
    }


def _server_time(client: httpx.Client, url: str, n: int) -> tuple[dict[str, float], int]:
    client.get(url)
    out, size = [], 0
    for _ in range(n):
        res = client.get(url)
        res.raise_for_status()
        size = len(res.content)
        out.append(float(res.headers["server-timing"].split("dur=")[1]))
    return _stats(out), size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=30)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--rollup-days", type=int, default=365)
    ap.add_argument("--iterations", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-metrics-"))
    tmp.chmod(0o755)
    cluster = PgCluster(tmp / "pg")
    cluster.init()
    cluster.start()
    results: dict[str, Any] = {"args": vars(args)}
    try:
        cluster.create_database("bench")
        engine = create_engine(cluster.url("bench"), pool_size=8, max_overflow=4)
        migrate.upgrade(engine)
        t = time.perf_counter()
        rep = generate(engine, series=args.series, days=args.days, rollup_days=args.rollup_days)
        with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
            for tbl in ("samples", "rollup_1m", "rollup_1h", "rollup_1d", "rollup_1w"):
                conn.execute(text(f"vacuum (analyze) {tbl}"))
            weeks = conn.execute(text("select count(*) from rollup_1w")).scalar_one()
            ids = list(conn.execute(text("select id from series order by id")).scalars())
        results["dataset"] = {
            "series": args.series,
            "raw_samples": rep.raw_samples,
            "weekly_rows": weeks,
            "generate_s": round(time.perf_counter() - t, 1),
        }
        print("dataset:", json.dumps(results["dataset"]), flush=True)
        calls = []
        with engine.connect() as conn:
            totals(conn, ids)
            for _ in range(args.iterations):
                t0 = time.perf_counter()
                totals(conn, ids)
                calls.append((time.perf_counter() - t0) * 1000)
        results["totals_store_call"] = _stats(calls)
        print("totals() store call:", json.dumps(results["totals_store_call"]), flush=True)

        import uvicorn

        # loopback reads without login (as the demo does) and /metrics without a token:
        # the figures are the endpoints' own cost, not the login's
        settings = Settings(anonymous_role="viewer", metrics_public=True)
        app = create_app(engine, vault=Vault(Fernet.generate_key()), settings=settings)
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for url in ("/metrics", "/api/v1/overview", "/healthz"):
                figures, size = _server_time(client, url, args.iterations)
                results[url] = {**figures, "bytes": size}
                print(f"{url}: {json.dumps(results[url])}", flush=True)
        server.should_exit = True
        thread.join(timeout=10)
        engine.dispose()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
