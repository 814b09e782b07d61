"""The README's first command, end to end: `connwatch demo` fills the charts within 60 s;
and `demo --history`'s loader on its own (no demo processes).

A real subprocess with its own data directory: embedded PostgreSQL, two simulated
Oracle databases, a local PostgreSQL (+ pgbouncer), the agent and the web. A second
`connwatch demo` on the same port and data directory fails at once and changes nothing.
On Ctrl-C (SIGINT to the process group, as a terminal sends it) everything it started
must stop.
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
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.agent.scheduling.phase import phase_offset_ms
from app.config import Settings
from app.demo.pgbouncer import find_pgbouncer
from app.demo.pgcluster import free_port
from app.demo.run import (
    DemoOracle,
    DemoPostgres,
    _port_or_free,
    demo_document,
    history_series,
    load_demo_targets,
    load_history,
)
from app.targets.schema import parse_targets
from app.targets.sync import dump_yaml

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
        [sys.executable, "-m", "app.cli.main", "demo"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    wanted = {
        (db, mode) for db in ("sales-sim", "hr-sim") for mode in ("dedicated", "shared", "pooled")
    } | {("local-pg", "direct"), ("local-pg", "unix"), ("sales-sim", "dedicated-tls")}
    if find_pgbouncer():  # the README promises both pooling modes when pgbouncer is installed
        wanted |= {("local-pg", "pgbouncer_session"), ("local-pg", "pgbouncer_transaction")}
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
        _second_demo_changes_nothing(port, env)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
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


def _targets(port: int) -> object:
    return _get(f"http://127.0.0.1:{port}/api/v1/targets")


def _second_demo_changes_nothing(port: int, env: dict[str, str]) -> None:
    before = _targets(port)
    second = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = second.stdout + second.stderr
    assert second.returncode == 2, said
    assert f"127.0.0.1:{port} is already in use" in said
    lines = [ln for ln in said.splitlines() if ln.strip()]
    assert len(lines) == 1, said  # one line: no simulators, no PostgreSQL log, no targets
    assert _targets(port) == before  # the running demo's targets still point where they did


def test_a_port_in_time_wait_is_still_the_preferred_port() -> None:
    # a demo restarted right after Ctrl-C: its old listener's connections sit in TIME_WAIT
    import socket

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server side closes first: its end goes to TIME_WAIT
        time.sleep(0.1)
        client.close()
    assert _port_or_free(port) == port


def test_demo_history_backfills_every_demo_series_once(
    migrated_engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`demo --history` without starting the demo: its targets, then load_history."""
    settings = Settings(
        data_dir=tmp_path, secret_key=Fernet.generate_key().decode(), compact_after_days=1
    )
    oracles = [DemoOracle("sales", "SALES1", 1521, port=1521)]
    pg = DemoPostgres(5432, "/tmp/demo-sock", "postgres", {})
    doc = parse_targets(dump_yaml(demo_document(oracles, pg)), "<demo targets>")
    load_demo_targets(migrated_engine, settings, doc)
    series = history_series(migrated_engine)
    assert {(s.mode, s.probe) for s in series} == {
        ("dedicated", "connping"),
        ("dedicated", "sessionping"),
        ("dedicated", "commit"),
        ("shared", "connping"),
        ("pooled", "connping"),
        ("pooled", "poolacquire"),
        ("direct", "connping"),
        ("unix", "connping"),
    }
    unix = next(s for s in series if s.mode == "unix")
    assert unix.instances == ("/tmp/demo-sock:5432",)  # what the live probe reports
    assert all(s.offset_ms == phase_offset_ms(s.id, s.interval_ms) for s in series)
    started = datetime.now(UTC)
    load_history(migrated_engine, settings, raw_days=3, days=12)
    with migrated_engine.connect() as conn:
        per_series = dict(
            conn.execute(
                text(
                    "select series_id, count(*) from connwatch_samples("
                    "array(select id from series), '-infinity', 'infinity') "
                    "where agent = 'synthetic' and extra ->> 'synthetic' = 'true' "
                    "and scheduled_at < :t group by 1"
                ),
                {"t": started},
            ).all()
        )
        assert set(per_series) == {s.id for s in series}
        types = dict(
            conn.execute(
                text(
                    "select m.name, array_agg(distinct s.server_type) from samples s "
                    "join series se on se.id = s.series_id join modes m on m.id = se.mode_id "
                    "where s.status = 'ok' group by 1"
                )
            ).all()
        )
        assert types == {
            "dedicated": ["DEDICATED"],
            "shared": ["SHARED"],
            "pooled": ["POOLED"],
            "direct": ["DIRECT"],
            "unix": ["DIRECT/UNIX"],
        }
        # the closed raw day is packed, and still reads back as synthetic samples
        assert conn.execute(text("select count(*) from samples_packed_days")).scalar_one() >= 1
        assert conn.execute(text("select count(*) from rollup_1d")).scalar_one() == 12 * len(series)
        counts = conn.execute(
            text("select (select count(*) from samples), (select sum(n) from samples_packed)")
        ).one()
    assert "synthetic history:" in capsys.readouterr().out
    load_history(migrated_engine, settings, raw_days=3, days=12)
    assert "already loaded" in capsys.readouterr().out
    with migrated_engine.connect() as conn:
        again = conn.execute(
            text("select (select count(*) from samples), (select sum(n) from samples_packed)")
        ).one()
    assert again == counts
