"""The README's first command, end to end: `connwatch demo` fills the charts within 60 s.

A real subprocess with its own data directory: embedded PostgreSQL, two simulated
Oracle databases, a local PostgreSQL (+ pgbouncer), the agent and the web. On SIGTERM
everything it started must stop.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from app.pgcluster import free_port

ROOT = Path(__file__).resolve().parent.parent


def _get(url: str) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as res:
            doc: dict[str, object] = json.loads(res.read())
            return doc
    except OSError:
        return None


def _processes_mentioning(text: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if text in line and "ps -eo" not in line]


@pytest.mark.slow
def test_demo_fills_every_mode_within_60_seconds_and_stops_cleanly() -> None:
    # not under pytest's tmp_path (private to root): the servers run unprivileged
    base = Path(tempfile.mkdtemp(prefix="connwatch-test-demo-"))
    base.chmod(0o755)
    data = base / "demo-data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")}
    env.update({"CONNWATCH_DATA_DIR": str(data), "CONNWATCH_PORT": str(port)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wanted = {
        (db, mode) for db in ("sales-sim", "hr-sim") for mode in ("dedicated", "shared", "pooled")
    } | {("local-pg", "direct"), ("local-pg", "unix")}
    seen: set[tuple[str, str]] = set()
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60 and not wanted <= seen:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            doc = _get(f"http://127.0.0.1:{port}/api/v1/overview")
            if doc is not None:
                rows = doc["rows"]
                assert isinstance(rows, list)
                seen = {
                    (r["target"], r["mode"])
                    for r in rows
                    if r.get("logon_p50_ms") is not None and r.get("state") != "down"
                }
            time.sleep(1)
        assert wanted <= seen, f"after 60 s only {sorted(seen)}"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
    assert proc.returncode == 0, output
    assert "dashboard at http://127.0.0.1:" in output
    assert "Traceback" not in output
    deadline = time.monotonic() + 10
    while _processes_mentioning(str(data)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_mentioning(str(data)) == []
    shutil.rmtree(base, ignore_errors=True)
