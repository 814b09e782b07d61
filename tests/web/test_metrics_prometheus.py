"""Debian's real Prometheus scrapes connwatch's /metrics: its
``histogram_quantile(0.95, rate(connwatch_logon_duration_seconds_bucket[5m]))`` agrees
with the store's own p95 of the same window within the bucket resolution, and a restart
of the web process is no counter reset.

Lean by design: 1-second scrapes, a pre-filled store, and waits that poll. The store
holds an older batch (20-40 minutes ago, logons around 40 ms) before Prometheus starts;
then a batch scheduled within the last 4 minutes (around 55 ms) is written while it
scrapes. The increase over the last 5 minutes is that batch alone, and so is the store's
window: both p95s describe the same samples.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy.engine import Engine

from app.samples import Sample, SampleStatus
from app.secrets import Vault
from app.store.read.timeseries import summary
from app.store.read.totals import export_bounds_ns
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.app import create_app
from app.web.views.lookups import load_targets
from tests.fixtures.auth import bearer, web_settings

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus is not installed")

YAML = """
targets:
  - name: prom
    kind: oracle
    dsn: dbhost:1521/PROM
    username: connwatch
    modes:
      - name: shared
        probes: [{probe: connping, interval: 1s}]
"""
SELECT = '{target="prom",mode="shared",probe="connping",site="default"}'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _web(engine: Engine, port: int) -> Iterator[None]:
    """One web process (uvicorn in a thread) on ``port``; stopped on exit."""
    import uvicorn

    config = uvicorn.Config(
        create_app(engine, settings=web_settings()),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _until(lambda: server.started, "the web server did not start")
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(what)


def _samples(
    sid: int, times: list[datetime], median_ms: float, rng: np.random.Generator
) -> list[Sample]:
    logons = median_ms * 1e6 * np.exp(rng.normal(0.0, 0.25, len(times)))
    return [
        Sample(
            series_id=sid, scheduled_at=at, started_at=at, status=SampleStatus.OK,
            total_ns=int(v) + 3_000_000, logon_ns=int(v), ping_ns=900_000, agent="test",
            site="default",
        )
        for at, v in zip(times, logons, strict=True)
    ]  # fmt: skip


class Prom:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, expr: str) -> list[dict[str, Any]]:
        q = urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=5) as res:
                body = json.loads(res.read())
        except OSError:
            return []
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def scalar(self, expr: str) -> float | None:
        got = self.query(expr)
        return float(got[0]["value"][1]) if got else None


@contextlib.contextmanager
def _prometheus(tmp: Path, web_port: int, token: str) -> Iterator[Prom]:
    assert PROMETHEUS is not None
    port = _free_port()
    cfg = tmp / "prometheus.yml"
    cfg.write_text(
        "global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: connwatch\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{web_port}']}}]\n"
        # /metrics is not public by default: a read-scope API token, as a real setup uses
        f"    authorization: {{type: Bearer, credentials: '{token}'}}\n"
    )
    log = (tmp / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    prom = Prom(f"http://127.0.0.1:{port}")
    try:
        _until(lambda: prom.query("vector(1)"), "prometheus did not come up")
        yield prom
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_prometheus_reads_the_stores_p95(
    migrated_engine: Engine, vault: Vault, tmp_path: Path
) -> None:
    with migrated_engine.begin() as conn:
        import_targets(conn, parse_targets(YAML, "prom.yaml"), vault)
        (sid,) = [s.id for t in load_targets(conn) for m in t.modes for s in m.series]
    rng = np.random.default_rng(17)
    now = datetime.now(UTC).replace(microsecond=0)
    older = [now - timedelta(minutes=40) + timedelta(seconds=4 * i) for i in range(300)]
    with migrated_engine.begin() as conn:
        write_samples(conn, _samples(sid, older, 40.0, rng))
    roll_up_pending(migrated_engine)

    web_port = _free_port()
    count = f"connwatch_logon_duration_seconds_count{SELECT}"

    def scrapes(n: int) -> bool:
        return (prom.scalar(f"count_over_time({count}[1m])") or 0) >= n

    token = bearer(migrated_engine, "viewer", "read")
    with _prometheus(tmp_path, web_port, token) as prom:
        with _web(migrated_engine, web_port):
            _until(lambda: scrapes(2), "no scrapes")
            assert prom.scalar(count) == 300
            seen = prom.scalar(f"count_over_time({count}[1m])") or 0
        # the web process restarts: same store, same counters; Prometheus sees no reset
        with _web(migrated_engine, web_port):
            _until(lambda: scrapes(int(seen) + 2), "no scrapes after the restart")
            end = datetime.now(UTC)
            recent = [end - timedelta(seconds=240) + timedelta(seconds=0.4 * i) for i in range(600)]
            with migrated_engine.begin() as conn:
                write_samples(conn, _samples(sid, recent, 55.0, rng))
            roll_up_pending(migrated_engine)
            _until(lambda: prom.scalar(f"min_over_time({count}[3s])") == 900, "batch not scraped")
            quantile = (
                "histogram_quantile(0.95, "
                f"rate(connwatch_logon_duration_seconds_bucket{SELECT}[5m]))"
            )
            got = prom.scalar(quantile)
            resets = prom.scalar(f"resets({count}[10m])")
            increase = prom.scalar(f"increase({count}[5m])")
    with migrated_engine.connect() as conn:
        (point,) = summary(conn, [sid], end - timedelta(minutes=5), end, phase="logon").points
    assert point.count == 600 and point.p95_ms is not None  # the store's window: the batch
    store_p95 = point.p95_ms / 1000.0
    bounds = [b / 1e9 for b in export_bounds_ns()]
    j = next(i for i, le in enumerate(bounds) if store_p95 <= le)
    width = bounds[j] - bounds[j - 1]
    assert got is not None and math.isfinite(got)
    assert abs(got - store_p95) <= width, (got, store_p95, bounds[j - 1], bounds[j])
    assert bounds[j - 1] <= got <= bounds[j]  # Prometheus lands in the store p95's bucket
    assert resets == 0  # two web processes, one after the other: one monotonic counter
    assert increase is not None and increase >= 600  # the batch (rate() extrapolates)
