"""Agents as real processes (``python -m app.cli.main agent``) for the process-level tests:
start, kill, stop them, and read what they stored and reported."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
KEY = Fernet.generate_key().decode()


class AgentProcs:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        url: str,
        name: str,
        data_dir: Path | None = None,
        site: str = "default",
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        data_dir = data_dir or self.tmp_path / name
        data_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "CONNWATCH_DATABASE_URL": url,
            "CONNWATCH_DATA_DIR": str(data_dir),
            "CONNWATCH_SECRET_KEY": KEY,
            "CONNWATCH_AGENT_NAME": name,
            "CONNWATCH_SITE": site,
            "CONNWATCH_LOG_LEVEL": os.environ.get("CW_AGENT_LOG", "INFO"),
            "CONNWATCH_AGENT_WORKERS": "1",  # one process unless a test asks for workers
            **(env or {}),
        }
        log = (data_dir / "agent.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "agent"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)


def wait_for(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def term(proc: subprocess.Popen[bytes], timeout: float = 30) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


def agent_stats(engine: Engine, name: str) -> dict[str, Any]:
    with engine.connect() as conn:
        row = conn.execute(text("select stats from agents where name = :n"), {"n": name}).first()
    return dict(row[0]) if row else {}


def count_samples(engine: Engine, ids: list[int]) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("select count(*) from samples where series_id = any(:ids)"), {"ids": ids}
            ).scalar_one()
        )


def by_series(rows: list[Any]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for r in rows:
        out.setdefault(r.series_id, []).append(r)
    return out
