"""Running the simulator in a thread (tests) and in a child process (benchmarks)."""

from __future__ import annotations

import oracledb
import pytest

from app.oraclesim import SimConfig
from app.oraclesim.tooling.runner import SimulatorProcess, SimulatorThread

from ._driver import code


def test_thread_runner_starts_serves_and_stops():
    with SimulatorThread(SimConfig.default(no_latency=True)) as sim:
        dsn = f"127.0.0.1:{sim.port}/FREEPDB1"
        with oracledb.connect(user="scott", password="tiger", dsn=dsn) as conn:
            conn.ping()
            assert sim.sessions()[0]["sid"] == conn.session_id
        port = sim.port
    with pytest.raises(oracledb.OperationalError):
        oracledb.connect(user="scott", password="tiger", dsn=f"127.0.0.1:{port}/FREEPDB1")


def test_process_runner_with_control_api(tmp_path):
    cfg = tmp_path / "sim.yaml"
    cfg.write_text("users: [{name: bench, password: pw}]\n")
    with SimulatorProcess(cfg) as proc:
        pid = proc.proc.pid if proc.proc else 0
        dsn = f"127.0.0.1:{proc.port}/FREEPDB1:pooled"
        with oracledb.connect(user="bench", password="pw", dsn=dsn) as conn:
            conn.ping()
        proc.control("POST", "/faults", {"kind": "refuse", "phase": "logon", "code": 1034})
        with pytest.raises(oracledb.OperationalError) as ei:
            oracledb.connect(user="bench", password="pw", dsn=dsn)
        assert code(ei.value) == "ORA-01034"
        assert proc.control("GET", "/health")["listening"] is True
    assert proc.proc is None and pid > 0


def test_process_runner_reports_a_bad_config(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("users: nope\n")
    with pytest.raises(RuntimeError, match="did not start"):
        SimulatorProcess(cfg).start()
