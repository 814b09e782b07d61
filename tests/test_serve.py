"""``connwatch serve --workers 2`` as a real process tree: two web processes share the port,
the agent probes in a process of its own, and a Ctrl-C (SIGINT to the whole process group,
as a terminal sends it) stops all of them, samples flushed."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from app.demo.pgcluster import PgCluster, free_port
from tests.agent.conftest import pg_target_series

ROOT = Path(__file__).resolve().parent.parent


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode()
    except OSError:
        return ""


def nice(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as res:
            return int(res.status)
    except OSError:
        return 0


def serving_pids(port: int, conns: list[socket.socket], pids: list[int]) -> list[int]:
    """Which of ``pids`` accepted each of ``conns`` (our connections to ``port``), from the
    server sides' socket inodes in /proc/net/tcp and the processes' descriptors."""
    ours = {c.getsockname()[1] for c in conns}
    inodes = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        local, remote = int(f[1].split(":")[1], 16), int(f[2].split(":")[1], 16)
        if local == port and remote in ours:
            inodes[f"socket:[{f[9]}]"] = remote
    owner = {}
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                if (link := os.readlink(fd)) in inodes:
                    owner[inodes[link]] = pid
    return [owner.get(c.getsockname()[1], 0) for c in conns]


def agent_row(engine: Any) -> Any:
    with engine.connect() as conn:
        return conn.execute(text("select pid, stats from agents where name = 'served'")).first()


def test_serve_runs_web_workers_and_the_agent_in_its_own_process(
    pg_cluster: PgCluster, pg_database: str, migrated_engine: Any, tmp_path: Path
) -> None:
    ids = pg_target_series(migrated_engine, pg_cluster, pg_database, 2, interval_ms=500)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")}
    env.update(
        CONNWATCH_DATABASE_URL=pg_cluster.url(pg_database),
        CONNWATCH_DATA_DIR=str(tmp_path / "data"),
        CONNWATCH_PORT=str(port),
        CONNWATCH_AGENT_NAME="served",
        CONNWATCH_AGENT_WORKERS="1",
        CONNWATCH_ANONYMOUS_ROLE="viewer",  # loopback reads the API without login
        CONNWATCH_SECRET_KEY="0" * 43 + "=",  # an external store never gets a generated key
    )
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "serve", "--workers", "2"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as in a terminal
    )
    engine = create_engine(pg_cluster.url(pg_database))
    try:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            row = agent_row(engine)
            if get(f"http://127.0.0.1:{port}/healthz") == 200 and row and row.stats.get("runs"):
                break
            time.sleep(0.5)
        else:
            raise AssertionError((tmp_path / "serve.log").read_text()[-3000:])
        kids = children(proc.pid)
        web = [k for k in kids if "multiprocessing" in cmdline(k) and "spawn_main" in cmdline(k)]
        agents = [k for k in kids if "app.cli.main agent" in cmdline(k)]
        assert len(web) == 2, [cmdline(k) for k in kids]
        assert len(agents) == 1 and agent_row(engine).pid == agents[0] != proc.pid
        # the web below the agent's CPU priority (CONNWATCH_WEB_NICE, 10): pages wait, probes don't
        assert [nice(k) for k in web] == [10, 10] and nice(agents[0]) == 0
        statuses = [get(f"http://127.0.0.1:{port}/api/v1/agents") for _ in range(6)]
        assert statuses == [200] * 6
        # 16 connections at once (a browser opens 6, a proxy keeps a pool): each worker
        # listens on its own socket and the kernel spreads them, never all on one
        conns = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(16)]
        try:
            deadline = time.monotonic() + 10
            while 0 in (held := serving_pids(port, conns, web)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert sorted(set(held)) == sorted(web), held
        finally:
            for c in conns:
                c.close()
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        assert proc.wait(90) == 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(Path(f"/proc/{k}").exists() for k in kids):
            time.sleep(0.2)
        left = [cmdline(k) for k in kids if Path(f"/proc/{k}").exists()]
        assert left == []  # nothing left behind
        row = agent_row(engine)
        assert row.stats["stopped"] is True  # the agent flushed and said goodbye
        with engine.connect() as conn:
            stored = conn.execute(
                text("select count(*) from samples where series_id = any(:i)"), {"i": ids}
            ).scalar_one()
        assert stored == row.stats["runs"] + row.stats["skipped"] > 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        engine.dispose()
