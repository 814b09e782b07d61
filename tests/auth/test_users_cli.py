"""``connwatch users ...`` as a real subprocess on a real store: passwords never in argv,
clear one-line errors, the last admin protected, every change audited."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from app.auth import users
from app.demo.pgcluster import PgCluster
from tests.test_cli import assert_clean_failure

PW = "a long enough password 1"


@pytest.fixture
def env(pg_cluster: PgCluster, pg_database: str, tmp_path: Path) -> dict[str, str]:
    return {
        "CONNWATCH_DATABASE_URL": pg_cluster.url(pg_database).replace("+psycopg", ""),
        "CONNWATCH_DATA_DIR": str(tmp_path / "data"),
        "CONNWATCH_SECRET_KEY": "0" * 43 + "=",
    }


def _users(cmd: list[str], env: dict[str, str], stdin: str | None = None):  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    full = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")} | env
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", "users", *cmd],
        input=stdin,
        capture_output=True,
        text=True,
        env=full,
        cwd=Path(__file__).resolve().parents[2],
        timeout=60,
        check=False,
    )


def test_add_list_role_disable_reset(
    env: dict[str, str], pg_cluster: PgCluster, pg_database: str
) -> None:
    res = _users(["add", "alice", "--role", "admin", "--password-stdin"], env, PW + "\n")
    assert res.returncode == 0, res.stderr
    assert PW not in res.stdout + res.stderr
    assert _users(["add", "prom", "--service", "--role", "viewer"], env).returncode == 0
    assert_clean_failure(_users(["add", "carol"], env, "short\n"), "at least 12 characters")
    assert_clean_failure(_users(["disable", "alice"], env), "last enabled admin")
    res = _users(["reset-password", "alice"], env, "another good password\n")  # not a tty
    assert res.returncode == 0, res.stderr
    listing = _users(["list"], env).stdout
    assert "alice" in listing and "admin" in listing and "service" in listing
    engine = create_engine(pg_cluster.url(pg_database))
    with engine.connect() as conn:
        assert users.authenticate(conn, "alice", "another good password") is not None
        actions = conn.execute(text("select action, actor from audit_log order by id")).all()
        pw_hash = conn.execute(
            text("select password_hash from users where name = 'alice'")
        ).scalar_one()
    engine.dispose()
    assert pw_hash.startswith("$argon2id$")
    assert [a for a, _ in actions] == ["user.create", "user.create", "user.password"]
    assert all(actor.startswith("cli:") for _, actor in actions)


def test_a_fresh_serve_says_how_to_create_an_admin(env: dict[str, str]) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import os
    import subprocess
    import sys
    import time

    full = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")} | env
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "web", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        deadline = time.monotonic() + 60
        line = ""
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if "admin" in line or not line:
                break
        assert (
            "no admin account yet: create one with 'connwatch users add NAME --role admin'" in line
        )
    finally:
        proc.terminate()
        proc.wait(timeout=20)
