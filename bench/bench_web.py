"""Web benchmark: server time per page and per API call, and first contentful paint.

On the store benchmark's synthetic dataset (``app.store.write.synthetic.generate``), served
by the real app (uvicorn on loopback, one worker thread pool as in production):

- server time: the app's own ``Server-Timing: app;dur=`` header (handler plus
  middleware, up to the response head), and the client's round trip over loopback;
  p50 / p95 / max over ``--iterations`` requests per URL, after one warm-up request;
- first contentful paint: headless Debian Chromium (Playwright), ``--fcp-runs`` loads
  per page: the first with an empty cache (cold), the rest warm; from
  ``performance.getEntriesByName('first-contentful-paint')``.

Usage (a throw-away PostgreSQL from Debian's binaries unless --url is given):

    .venv/bin/python bench/bench_web.py                  # 30 series, 7 days raw, 1 y rollups
    .venv/bin/python bench/bench_web.py --series 99 --days 14  # bigger
    .venv/bin/python bench/bench_web.py --url URL --reuse      # an existing dataset

With --reuse the database is only read (no migration, no VACUUM, nothing written), so
the store benchmark's shared dataset can be measured as it is. Every figure is printed;
nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2 as httpx
import numpy as np
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import migrate
from app.config import Settings
from app.demo.pgcluster import PgCluster, free_port
from app.secrets import Vault
from app.store.write.synthetic import generate
from app.web.app import create_app
from app.web.timerange import iso

RANGES = ("1h", "24h", "7d", "30d", "90d", "1y")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def urls(target: str, now: datetime) -> dict[str, list[str]]:
    t = quote(target)
    zoom_to = iso(now)
    zoom_from = iso(now.replace(microsecond=0) - (now - now.replace(minute=0, second=0)))
    pages = ["/", "/targets", "/agents", f"/targets/{t}/edit", "/docs"]
    pages += [f"/target/{t}?range={r}" for r in RANGES]
    pages += [f"/compare?target={t}&range={r}" for r in ("24h", "30d", "1y")]
    pages += ["/spikes?range=24h", "/spikes?range=7d", "/samples?range=1h"]
    # /healthz touches no database: the noise floor of the same run, for ratios
    api = ["/healthz", "/api/v1/overview", "/api/v1/targets", "/api/v1/agents", "/metrics"]
    api += [f"/api/v1/targets/{t}/timeseries?phase=logon&range={r}" for r in RANGES]
    api += [f"/api/v1/targets/{t}/timeseries?phase=logon&from={zoom_from}&to={zoom_to}"]
    api += [f"/api/v1/targets/{t}/breakdown?by=instance&range={r}" for r in ("1h", "24h", "7d")]
    api += [f"/api/v1/targets/{t}/breakdown?by=site&range={r}" for r in ("24h", "1y")]
    api += [f"/api/v1/compare?target={t}&range={r}" for r in ("24h", "7d", "30d", "1y")]
    api += [f"/api/v1/compare/daily?target={t}&range={r}" for r in ("7d", "90d", "1y")]
    api += [f"/api/v1/compare/sweep?target={t}&range=7d"]
    api += [f"/api/v1/incidents?range={r}" for r in ("24h", "7d")]
    api += [f"/api/v1/incidents?target={t}&range=30d"]
    api += [f"/api/v1/samples?target={t}&range=1h", "/api/v1/samples?status=failed&range=7d"]
    return {"pages": pages, "api": api}


def measure(client: httpx.Client, url: str, n: int) -> dict[str, float]:
    client.get(url)  # warm-up
    server: list[float] = []
    wall: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        res = client.get(url)
        wall.append((time.perf_counter_ns() - t0) / 1e6)
        if res.status_code != 200:
            raise SystemExit(f"{url}: HTTP {res.status_code}: {res.text[:300]}")
        timing = res.headers.get("server-timing", "app;dur=nan")
        server.append(float(timing.split("dur=")[1]))
    s = np.asarray(server)
    w = np.asarray(wall)
    return {
        "server_p50_ms": round(float(np.percentile(s, 50)), 1),
        "server_p95_ms": round(float(np.percentile(s, 95)), 1),
        "server_max_ms": round(float(s.max()), 1),
        "roundtrip_p95_ms": round(float(np.percentile(w, 95)), 1),
    }


def first_contentful_paint(base: str, pages: list[str], runs: int) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict[str, float]] = {}
    profile = tempfile.mkdtemp(prefix="connwatch-bench-chromium-")
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            profile,
            executable_path="/usr/bin/chromium",
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            page = ctx.new_page()
            for path in pages:
                fcps = []
                for i in range(runs):
                    if i == 0:
                        page.context.clear_cookies()
                        cdp = ctx.new_cdp_session(page)
                        cdp.send("Network.clearBrowserCache")
                        cdp.detach()
                    page.goto(base + path, wait_until="load")
                    page.wait_for_function(
                        "performance.getEntriesByName('first-contentful-paint').length > 0"
                    )
                    fcps.append(
                        float(
                            page.evaluate(
                                "performance.getEntriesByName('first-contentful-paint')[0]"
                                ".startTime"
                            )
                        )
                    )
                warm = fcps[1:] or fcps
                out[path] = {
                    "cold_ms": round(fcps[0], 1),
                    "warm_p50_ms": round(float(np.percentile(warm, 50)), 1),
                    "warm_max_ms": round(max(warm), 1),
                }
                print(f"  fcp {path}: {json.dumps(out[path])}", flush=True)
        finally:
            ctx.close()
            shutil.rmtree(profile, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="SQLAlchemy URL of a database to use (default: throw-away)")
    ap.add_argument("--reuse", action="store_true", help="measure the existing synthetic data")
    ap.add_argument("--series", type=int, default=30)
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--rollup-days", type=int, default=365)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--fcp-runs", type=int, default=5)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()

    cluster = None
    tmp = None
    if args.url:
        url = args.url
    else:
        tmp = Path(tempfile.mkdtemp(prefix="connwatch-bench-web-"))
        tmp.chmod(0o755)
        cluster = PgCluster(tmp / "pg")
        cluster.init()
        cluster.start()
        cluster.create_database("bench")
        url = cluster.url("bench")
    engine = create_engine(url, pool_size=8, max_overflow=4)
    results: dict[str, Any] = {"args": vars(args)}
    server = None
    thread = None
    try:
        if args.reuse:
            # read-only on a shared dataset: no migration, no VACUUM; just say if it lags
            head, current = migrate.head_revision(), migrate.current_revision(engine)
            if current != head:
                print(f"note: database at migration {current}, code expects {head}")
        else:
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
            results["dataset"] = {
                "series": args.series,
                "raw_samples": rep.raw_samples,
                "generate_s": round(time.perf_counter() - t, 1),
            }
            print("dataset:", json.dumps(results["dataset"]), flush=True)
        if not args.reuse:
            with engine.execution_options(isolation_level="AUTOCOMMIT").connect() as conn:
                for tbl in ("samples", "rollup_1m", "rollup_1h", "rollup_1d"):
                    conn.execute(text(f"vacuum (analyze) {tbl}"))
        with engine.connect() as conn:
            target = conn.execute(text("select min(name) from targets")).scalar_one()
            now = datetime.now(UTC)

        import uvicorn

        # loopback reads without login (as the demo): the figures are the pages' own cost
        app = create_app(
            engine,
            vault=Vault(Fernet.generate_key()),
            settings=Settings(anonymous_role="viewer", metrics_public=True),
        )
        port = free_port()
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port}"
        todo = urls(target, now)
        with httpx.Client(base_url=base, timeout=60) as client:
            for kind in ("pages", "api"):
                results[kind] = {}
                print(f"{kind}: server time over {args.iterations} requests", flush=True)
                for u in todo[kind]:
                    results[kind][u] = measure(client, u, args.iterations)
                    print(f"  {u}: {json.dumps(results[kind][u])}", flush=True)
        for kind in ("pages", "api"):
            worst = max(results[kind].items(), key=lambda kv: kv[1]["server_p95_ms"])
            print(f"worst {kind} server p95: {worst[1]['server_p95_ms']} ms ({worst[0]})")
        fcp_pages = ["/", f"/target/{quote(target)}?range=24h", f"/compare?target={quote(target)}"]
        fcp_pages += ["/spikes?range=7d", "/samples?range=1h", "/targets", "/agents"]
        print(f"first contentful paint, {args.fcp_runs} loads per page:", flush=True)
        results["fcp"] = first_contentful_paint(base, fcp_pages, args.fcp_runs)
        worst_fcp = max(v["cold_ms"] for v in results["fcp"].values())
        print(f"worst cold FCP: {worst_fcp} ms")
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    finally:
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)
        engine.dispose()
        if cluster is not None:
            cluster.stop(mode="immediate")
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
