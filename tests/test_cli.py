"""The command line, run as a real subprocess: help, clear one-line errors, nothing half-written."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from app.demo.pgcluster import PgCluster
from app.models import targets

ROOT = Path(__file__).resolve().parent.parent
ALL_COMMANDS = [
    "serve", "web", "agent", "migrate", "demo", "simulate", "connping", "ociping",
    "sweep", "targets", "import-connping",
]  # fmt: skip


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CONNWATCH_")}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def assert_clean_failure(res: subprocess.CompletedProcess[str], expected: str) -> None:
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    assert expected in res.stderr, res.stderr


@pytest.fixture
def store_env(pg_cluster: PgCluster, pg_database: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    yield {
        "CONNWATCH_DATABASE_URL": f"postgresql://{pg_cluster.user}@127.0.0.1:{pg_cluster.port}/{pg_database}",
        "CONNWATCH_DATA_DIR": str(tmp_path / "data"),
        # an external store never gets a generated key (app/secrets/vault.py)
        "CONNWATCH_SECRET_KEY": "0" * 43 + "=",
        # the allow lists targets.example.yaml's references need
        "CONNWATCH_SECRET_ENV_PREFIX": "CW_PW_",
        "CONNWATCH_SECRET_FILE_DIRS": "/run/secrets",
    }


def test_help_lists_every_command() -> None:
    res = run_cli("--help")
    assert res.returncode == 0
    for cmd in ALL_COMMANDS:
        assert f" {cmd} " in res.stdout, cmd
    sub = run_cli("targets", "--help")
    for cmd in ("import", "export", "list"):
        assert f" {cmd} " in sub.stdout
    flags = run_cli("targets", "import", "--help")  # a flag takes no value: no type shown
    assert "--dry-run" in flags.stdout and "<bool>" not in flags.stdout
    assert "<bool>" not in run_cli("connping", "--help").stdout


def test_wrong_database_url_is_one_line(tmp_path: Path) -> None:
    res = run_cli("migrate", env={"CONNWATCH_DATABASE_URL": "mysql://u:p@h/d"})
    assert_clean_failure(res, "must be a postgresql:// URL, not mysql://")
    res = run_cli(
        "migrate", env={"CONNWATCH_DATABASE_URL": "postgresql://u:topsecret@127.0.0.1:1/d"}
    )
    assert_clean_failure(res, "cannot reach PostgreSQL at postgresql+psycopg://u:***@127.0.0.1:1/d")
    assert "topsecret" not in res.stderr


def test_bad_setting_names_the_variable() -> None:
    res = run_cli("migrate", env={"CONNWATCH_PORT": "many"})
    assert_clean_failure(res, "setting CONNWATCH_PORT:")


def test_unusable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    res = run_cli("migrate", env={"CONNWATCH_DATA_DIR": str(blocker / "sub")})
    assert_clean_failure(res, f"cannot create data directory {blocker / 'sub' / 'pg'}")


def test_port_in_use(store_env: dict[str, str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = run_cli("web", "--port", str(port), env=store_env)
    assert_clean_failure(res, f"127.0.0.1:{port} is already in use")


def test_targets_import_export_list_and_bad_file_changes_nothing(
    store_env: dict[str, str], tmp_path: Path
) -> None:
    res = run_cli("targets", "import", str(ROOT / "targets.example.yaml"), env=store_env)
    assert res.returncode == 0, res.stderr
    assert "3 created, 0 updated, 0 unchanged, 0 removed" in res.stdout
    listed = run_cli("targets", "list", env=store_env)
    assert "sales-prod" in listed.stdout and "billing-pg" in listed.stdout
    # columns line up: every line has the DSN column (the last) where the header has it
    lines = listed.stdout.splitlines()
    series_end = lines[0].index("SERIES") + len("SERIES")
    assert all(line[series_end - 1].isdigit() for line in lines[1:]), listed.stdout
    assert len({line.index("  ", series_end - 1) for line in lines}) == 1, listed.stdout
    exported = run_cli("targets", "export", env=store_env)
    assert exported.returncode == 0
    out = tmp_path / "export.yaml"
    out.write_text(exported.stdout)
    again = run_cli("targets", "import", str(out), env=store_env)
    assert "0 created, 0 updated, 3 unchanged" in again.stdout  # nothing changed

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "targets:\n"
        "  - {name: new-one, kind: oracle, dsn: h/s, username: u, modes: [{name: dedicated}]}\n"
        "  - {name: broken, kind: oracle, dsn: h/s, username: u,\n"
        "     modes: [{name: pooled, transport: smoke}]}\n"
    )
    res = run_cli("targets", "import", str(bad), env=store_env)
    assert_clean_failure(res, f"{bad}: target #2 'broken': modes[0].transport:")
    engine = create_engine(
        store_env["CONNWATCH_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    )
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(targets)).scalar_one() == 3
    engine.dispose()

    missing = run_cli("targets", "import", str(tmp_path / "nope.yaml"), env=store_env)
    assert_clean_failure(missing, "nope.yaml: cannot read: No such file or directory")
