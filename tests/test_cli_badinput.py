"""Bad input on the command line costs nothing: one line naming file and place, exit 2,
no traceback, nothing stored (issue 12, item 8), on a real store.

``connwatch`` runs in this process (its ``main()``, argv and CONNWATCH_* set as a shell
would): a subprocess costs seconds of start-up on a loaded machine. One case runs as a
real subprocess, to show the same line comes out of the installed entry point.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text

from app import migrate
from app.cli.main import main
from app.demo.pgcluster import PgCluster
from tests.test_cli import assert_clean_failure, run_cli

TARGET = """targets:
  - name: t1
    kind: oracle
    dsn: dbhost:1521/S
    username: cw
    modes:
      - name: dedicated
        probes: [{probe: connping, interval: INTERVAL}]
"""


@pytest.fixture
def store(pg_cluster: PgCluster, pg_database: str, tmp_path: Path) -> dict[str, str]:
    url = pg_cluster.url(pg_database)
    engine = create_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    return {
        "CONNWATCH_DATABASE_URL": url,
        "CONNWATCH_DATA_DIR": str(tmp_path / "data"),
        "CONNWATCH_SECRET_KEY": Fernet.generate_key().decode(),
    }


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[..., Ran]:
    def run(*args: str, env: dict[str, str] | None = None) -> Ran:
        for key in [k for k in os.environ if k.startswith("CONNWATCH_")]:
            monkeypatch.delenv(key)
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "argv", ["connwatch", *args])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exited:  # anything else escaping is a traceback
            main()
        out, err = capsys.readouterr()
        return Ran(int(exited.value.code or 0), out, err)

    return run


def _count(env: dict[str, str], sql: str) -> int:
    engine = create_engine(env["CONNWATCH_DATABASE_URL"])
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(sql)).scalar_one())
    finally:
        engine.dispose()


def test_an_interval_beyond_the_column_fails_dry_run_and_import_alike(
    store: dict[str, str], tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(TARGET.replace("INTERVAL", "600h"))
    expected = "modes[0].probes[0].interval: 600h is longer than 24d, the longest the store keeps"
    assert_clean_failure(cli("targets", "import", "--dry-run", str(f)), expected)  # type: ignore[arg-type]
    assert_clean_failure(cli("targets", "import", str(f), env=store), expected)  # type: ignore[arg-type]
    assert _count(store, "select count(*) from targets") == 0


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "latin1.yaml"
    f.write_bytes(TARGET.replace("INTERVAL", "10s").replace("cw", "caf\xe9").encode("latin-1"))
    res = run_cli("targets", "import", "--dry-run", str(f))
    assert_clean_failure(res, f"{f}: line 5: not UTF-8 text (byte 0xe9 at offset")
    assert len(res.stderr.strip().splitlines()) == 1


def test_connping_csv_with_nan_or_year_5138_stores_nothing(
    store: dict[str, str], tmp_path: Path, cli: Callable[..., Ran]
) -> None:
    f = tmp_path / "t.yaml"
    f.write_text(TARGET.replace("INTERVAL", "10s"))
    assert cli("targets", "import", str(f), env=store).returncode == 0
    header = "# CONN OCI DUAL SID INST EPOCH\n"
    good = f"10.5 0.2 0.3 7 1 {int(time.time()) - 3600}\n"  # an hour ago
    cases = {
        "nan.csv": (good + "nan 0.2 0.3 7 1 1763700000\n", "line 3: CONN 'nan' is not a time"),
        "sid.csv": (good + "1.0 0.2 0.3 4294967303 1 1763700000\n", "line 3: SID 4294967303"),
        "y5138.csv": (good + "1.0 0.2 0.3 7 1 99999999999\n", "line 3: 5138-11-16 09:46:39 UTC"),
    }
    for name, (rows, expected) in cases.items():
        csv = tmp_path / name
        csv.write_text(header + rows)
        res = cli("import-connping", str(csv), "--target", "t1", "--mode", "dedicated",
                  env=store)  # fmt: skip
        assert_clean_failure(res, f"{csv}: {expected}")  # type: ignore[arg-type]
        assert len(res.stderr.strip().splitlines()) == 1
    assert _count(store, "select count(*) from samples") == 0
    assert _count(store, "select count(*) from pg_class where relname like 'samples_p5138%'") == 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[" * 20_000 + "]" * 20_000, "nested deeper than"),
        ("targets:\n  - params: " + '{"a": ' * 500 + "1" + "}" * 500 + "\n", "nested deeper than"),
    ],
)
def test_yaml_nested_too_deep_is_one_line(
    tmp_path: Path, cli: Callable[..., Ran], body: str, expected: str
) -> None:
    f = tmp_path / "deep.yaml"
    f.write_text(body)
    res = cli("targets", "import", "--dry-run", str(f))
    assert_clean_failure(res, expected)  # type: ignore[arg-type]
    assert len(res.stderr.strip().splitlines()) == 1
