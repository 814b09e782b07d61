"""The ad-hoc commands, run as real subprocesses against a real PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.demo.pgcluster import PgCluster
from tests.fixtures.oraclesim import OracleSimHandle

CONNPING_LINE = re.compile(
    r"^connect:\d+\.\d{2} ms, ociping:\d+\.\d{3} ms, dualping:\d+\.\d{3} ms,"
    r" sid=\d+, inst#=\d+, time=\d+\.\d$"
)
SUMMARY = re.compile(
    r"^(connect|ociping|dualping) mean=\d+\.\d\d, stddev=\d+\.\d\d, min=\d+\.\d\d, max=\d+\.\d\d$"
)
OCIPING_LINE = re.compile(r"^\d+\.\d{3} \d+\.\d$")
OCIPING_SUMMARY = re.compile(
    r"^ociping mean=\d+\.\d{3}, stddev=\d+\.\d{3}, min=\d+\.\d{3}, max=\d+\.\d{3}$"
)


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.probes.adhoc.commands", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).resolve().parents[2],
    )


def _dsn(pg: PgCluster) -> str:
    return f"postgresql://{pg.user}@127.0.0.1:{pg.port}/postgres"


def test_connping_output_matches_connping_line_for_line(
    pg_cluster: PgCluster, tmp_path: Path
) -> None:
    csv = tmp_path / "out.csv"
    res = _run(
        "connping", "-l", _dsn(pg_cluster), "--period=1", "--interval=0.25", f"--csvoutput={csv}"
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # 4 iterations (0, .25, .5, .75); the first is connping's discarded one
    assert len(lines) == 3 + 3, res.stdout
    for line in lines[:3]:
        assert CONNPING_LINE.match(line), line
    assert [SUMMARY.match(x) is not None for x in lines[3:]] == [True, True, True]
    assert [x.split()[0] for x in lines[3:]] == ["connect", "ociping", "dualping"]
    times = [float(x.rsplit("time=", 1)[1]) for x in lines[:3]]
    assert times == sorted(times) and 0.2 <= times[0] <= 0.4
    rows = csv.read_text().splitlines()
    assert rows[0] == "# CONN OCI DUAL SID INST TIME"
    assert all(
        re.match(r"^\d+\.\d{3} \d+\.\d{3} \d+\.\d{3} \d+ \d+ \d+\.\d{2}$", r) for r in rows[1:]
    )
    assert len(rows) == 4


def test_connping_time_options(pg_cluster: PgCluster, tmp_path: Path) -> None:
    csv = tmp_path / "x.csv"
    res = _run(
        "connping",
        "-l",
        _dsn(pg_cluster),
        "--period=0.4",
        "--interval=0.2",
        "--no-timestamp",
        "--csvexcel",
        f"--csvoutput={csv}",
    )
    assert res.returncode == 0, res.stderr
    assert re.match(
        r"^connect:\S+ ms, ociping:\S+ ms, dualping:\S+ ms, sid=\d+, inst#=\d+$",
        res.stdout.splitlines()[0],
    )
    raw = csv.read_bytes()
    assert raw.startswith(b"CONN;OCI;DUAL;SID;INST\r\n") and raw.count(b"\r\n") == 2
    res = _run(
        "connping",
        "-l",
        _dsn(pg_cluster),
        "--period=0.4",
        "--interval=0.2",
        "--utctime",
        "--unixepoch",
        "--utcformat=YYYY/MM/DD HH24:MI:SS",
    )
    assert "--unixepoch has been turned of as --utctime is set" in res.stderr
    assert re.search(r", time=\d{4}/\d\d/\d\d \d\d:\d\d:\d\d$", res.stdout.splitlines()[0])
    res = _run("connping", "-l", _dsn(pg_cluster), "--period=0.4", "--interval=0.2", "--unixepoch")
    epoch = float(res.stdout.splitlines()[0].rsplit("time=", 1)[1])
    assert abs(epoch - time.time()) < 60


def test_connping_json(pg_cluster: PgCluster) -> None:
    res = _run("connping", "-l", _dsn(pg_cluster), "--period=0.6", "--interval=0.2", "--json")
    assert res.returncode == 0, res.stderr
    objs = [json.loads(x) for x in res.stdout.splitlines()]
    assert len(objs) == 3
    assert all(o["status"] == "ok" and o["logon_ns"] > 0 for o in objs[:2])
    assert objs[2]["summary"]["connect"]["n"] == 2


def test_ociping_output(pg_cluster: PgCluster, tmp_path: Path) -> None:
    csv = tmp_path / "p.csv"
    res = _run(
        "ociping", "-l", _dsn(pg_cluster), "--period=0.6", "--interval=0.2", f"--csvoutput={csv}"
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 3 + 1
    assert all(OCIPING_LINE.match(x) for x in lines[:3]), lines
    assert OCIPING_SUMMARY.match(lines[3])
    assert csv.read_text().splitlines()[0] == "# PING TIME"


def test_ctrl_c_prints_the_summary(pg_cluster: PgCluster) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.probes.adhoc.commands",
            "connping",
            "-l",
            _dsn(pg_cluster),
            "--period=60",
            "--interval=0.1",
            "--flush-output",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert CONNPING_LINE.match(first.rstrip("\n")), first
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # say why before it dies: faulthandler (PYTHONFAULTHANDLER) prints every
            # thread's stack on SIGABRT
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate(timeout=30)
            pytest.fail(f"no exit within 60 s of Ctrl-C; its threads:\n{err[-6000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    tail = out.splitlines()[-3:]
    assert [SUMMARY.match(x) is not None for x in tail] == [True, True, True], out + err
    assert "Traceback" not in err


def test_bad_input_is_a_clear_error() -> None:
    res = _run("connping", "-l", "nonsense")
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "connping: error: -l must be user/password@connect (or a PostgreSQL DSN)"
    )
    res = _run("connping", "-l", "a/b@h/s", "--interval=0")
    assert res.returncode == 2 and "--interval must be a positive" in res.stderr
    res = _run("connping", "-l", "a/b@h/s", "--csvoutput=/nonexistent-dir/x.csv")
    assert res.returncode == 2
    assert "connping: error: --csvoutput: cannot write /nonexistent-dir/x.csv" in res.stderr
    res = _run("sweep", "-l", "a/b@h/s", "--levels=1,x")
    assert res.returncode == 2 and "--levels must be a comma-separated list" in res.stderr
    assert "Traceback" not in res.stderr


def test_unreachable_target_exits_1_without_password_in_output() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = _run("connping", "-l", f"scott/Secr3tPw@127.0.0.1:{port}/FREEPDB1", "--period=1")
    assert res.returncode == 1
    assert "NET-ECONNREFUSED" in res.stderr and "Secr3tPw" not in res.stderr + res.stdout


def test_password_is_prompted_when_omitted() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.probes.adhoc.commands",
            "connping",
            "-l",
            f"scott@127.0.0.1:{port}/FREEPDB1",
            "--period=1",
        ],
        input="typed-secret\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert "Password for scott" in res.stderr
    assert res.returncode == 1 and "typed-secret" not in res.stderr + res.stdout
    # read from a pipe: the first line, quietly (no GetPassWarning fragment)
    assert "Warning" not in res.stderr and "echo" not in res.stderr, res.stderr


def test_connect_string_mistakes_are_one_line_and_exit_2() -> None:
    res = _run("connping", "-l", "scott/tiger@127.0.0.1:15x21/FREEPDB1", "--period=1")
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "connping: error: -l: port '15x21' in '127.0.0.1:15x21/FREEPDB1' must be a number "
        "from 1 to 65535"
    )
    res = _run("connping", "-l", "scott/tiger@127.0.0.1:1521/FREEPDB1:drcp", "--period=1")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "must be one of dedicated, shared, pooled" in res.stderr
    assert "DPY-" not in res.stderr


def test_an_unresolvable_host_is_named_as_such() -> None:
    res = _run("connping", "-l", "scott/tiger@no-such-host.invalid:1521/FREEPDB1", "--period=1")
    assert res.returncode == 1
    assert "NET-EAI_NONAME" in res.stderr and "NET--" not in res.stderr, res.stderr


def test_a_period_without_a_successful_run_prints_no_nan() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = _run("ociping", "-l", f"scott/x@127.0.0.1:{port}/FREEPDB1", "--period=1")
    assert "nan" not in res.stdout + res.stderr


def test_sweep_table(pg_cluster: PgCluster) -> None:
    res = _run("sweep", "-l", _dsn(pg_cluster), "--levels=1,2", "--logons=3")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].split()[:4] == ["mode", "level", "logons", "errors"]
    rows = [x.split() for x in lines[2:4]]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("direct", "1", "3", "0"),
        ("direct", "2", "6", "0"),
    ]
    assert "6/" not in res.stdout  # the progress bar goes to stderr
    assert "9/9" in res.stderr


def test_connping_against_oracle_every_mode(oraclesim: OracleSimHandle) -> None:
    host, port = oraclesim.host, oraclesim.port
    for mode in ("dedicated", "shared", "pooled"):
        res = _run(
            "connping",
            "-l",
            f"scott/tiger@{host}:{port}/FREEPDB1:{mode}",
            "--period=0.6",
            "--interval=0.2",
            "--phases",
        )
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        assert len(lines) == 2 + 3
        for line in lines[:2]:
            main, _, phases = line.partition(", phases: ")
            assert CONNPING_LINE.match(main), line
            assert ", inst#=1, " in main
            assert phases.startswith("tcp_connect=") and phases.endswith("round_trips=5")


def test_ociping_against_oracle(oraclesim: OracleSimHandle) -> None:
    host, port = oraclesim.host, oraclesim.port
    res = _run(
        "ociping",
        "-l",
        f"scott/tiger@{host}:{port}/FREEPDB1",
        "--period=0.6",
        "--interval=0.2",
        "--utctime",
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 4
    assert all(
        re.match(r"^\d+\.\d{3} \d{4}\.\d\d\.\d\d\.\d\d:\d\d:\d\d\.\d\d$", x) for x in lines[:3]
    )
    assert OCIPING_SUMMARY.match(lines[3])


def test_connping_bad_password_exits_1(oraclesim: OracleSimHandle) -> None:
    host, port = oraclesim.host, oraclesim.port
    res = _run("connping", "-l", f"scott/wrongpw@{host}:{port}/FREEPDB1", "--period=1")
    assert res.returncode == 1
    assert res.stderr.startswith("connping: ORA-01017 during logon:auth2:")
    assert "wrongpw" not in res.stderr


def test_sweep_oracle_modes_table(oraclesim: OracleSimHandle) -> None:
    host, port = oraclesim.host, oraclesim.port
    res = _run(
        "sweep",
        "-l",
        f"scott/tiger@{host}:{port}/FREEPDB1",
        "--levels=1,2",
        "--logons=2",
        "--cclass=CW",
    )
    assert res.returncode == 0, res.stderr
    rows = [x.split()[:4] for x in res.stdout.splitlines()[2:8]]
    assert rows == [
        [m, lv, str(2 * int(lv)), "0"]
        for m in ("dedicated", "shared", "pooled")
        for lv in ("1", "2")
    ]


def test_wired_into_the_connwatch_cli(pg_cluster: PgCluster) -> None:
    from typer.testing import CliRunner

    from app.cli.main import cli

    runner = CliRunner()
    res = runner.invoke(cli, ["connping", "-l", _dsn(pg_cluster), "--period=0.4", "--interval=0.2"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert CONNPING_LINE.match(lines[0]) and SUMMARY.match(lines[-1])
    for cmd in ("connping", "ociping", "sweep"):
        res = runner.invoke(cli, [cmd, "--help"])
        assert res.exit_code == 0 and "--logon" in res.output, res.output
