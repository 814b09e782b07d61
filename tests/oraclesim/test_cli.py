"""`connwatch simulate`: zero-config defaults, bad input, signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import oracledb
import pytest
from typer.testing import CliRunner

from app.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]


def test_bad_config_file_is_a_one_line_error_and_exit_2(tmp_path):
    bad = tmp_path / "sim.yaml"
    bad.write_text("services: [{name: X, modes: [warp]}]\n")
    result = CliRunner().invoke(cli, ["simulate", "--config", str(bad)])
    assert result.exit_code == 2
    assert f"{bad}: services[0].modes: unknown mode 'warp'" in result.output
    assert "Traceback" not in result.output


def test_bad_port_is_exit_2():
    result = CliRunner().invoke(cli, ["simulate", "--port", "70000"])
    assert result.exit_code == 2
    assert "--port/--control-port must be 0..65535" in result.output


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serves_the_defaults_until_a_signal(sig):
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.oraclesim.tooling.cli", "--port", "0", "--no-latency"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("oraclesim listening on 127.0.0.1:")
        assert "FREEPDB1: dedicated, shared, pooled; DEDONLY: dedicated" in line
        port = int(line.split()[3].split(":")[1])
        dsn = f"127.0.0.1:{port}/FREEPDB1:shared"
        with oracledb.connect(user="scott", password="tiger", dsn=dsn) as conn:
            conn.ping()
        proc.send_signal(sig)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_port_in_use_is_a_one_line_error():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = CliRunner().invoke(cli, ["simulate", "--port", str(port)])
    assert result.exit_code == 2
    assert "connwatch simulate: error: cannot listen on 127.0.0.1:" in result.output
    assert "Traceback" not in result.output
