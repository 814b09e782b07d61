"""import-connping: a real connping run's CSV (our rwloadsim-compatible command against the
simulator) lands in the store once, however often it is imported."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from app import migrate
from app.demo.pgcluster import PgCluster
from app.secrets import Vault
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from tests.fixtures.oraclesim import OracleSimHandle
from tests.test_cli import run_cli

# these runs keep the 2-minute allowance they had (run_cli's default is one minute)
_cli = partial(run_cli, timeout=120)


@pytest.fixture
def store_env(pg_cluster: PgCluster, pg_database: str, tmp_path: Path) -> dict[str, str]:
    url = pg_cluster.url(pg_database)
    engine = create_engine(url)
    migrate.upgrade(engine)
    doc = parse_targets(
        "targets:\n  - {name: sim, kind: oracle, dsn: h/s, username: scott,"
        " modes: [{name: dedicated}, {name: pooled, probes: []}]}\n",
        "t",
    )
    with engine.begin() as conn:
        import_targets(conn, doc, Vault(b"0" * 43 + b"="))
    engine.dispose()
    return {"CONNWATCH_DATABASE_URL": url, "CONNWATCH_DATA_DIR": str(tmp_path / "data")}


def test_connping_csv_round_trip_into_the_store(
    oraclesim: OracleSimHandle, store_env: dict[str, str], tmp_path: Path
) -> None:
    csv = tmp_path / "run.csv"
    run = _cli(
        "connping",
        "-l",
        f"scott/tiger@{oraclesim.dsn()}",
        "--period=4",
        "--interval=1",
        f"--csvoutput={csv}",
        "--unixepoch",
        env={},
    )
    assert run.returncode == 0, run.stderr
    lines = [x for x in csv.read_text().splitlines() if x and not x.startswith("#")]
    assert len(lines) >= 2

    first = _cli(
        "import-connping", str(csv), "--target", "sim", "--mode", "dedicated", env=store_env
    )
    assert first.returncode == 0, first.stderr
    assert f"{len(lines)} samples read, {len(lines)} new, 0 already stored" in first.stdout
    again = _cli(
        "import-connping", str(csv), "--target", "sim", "--mode", "dedicated", env=store_env
    )
    assert f"0 new, {len(lines)} already stored" in again.stdout

    engine = create_engine(store_env["CONNWATCH_DATABASE_URL"])
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select s.logon_ns, s.ping_ns, s.query_ns, s.sid, se.probe, m.name "
                "from samples s join series se on se.id = s.series_id "
                "join modes m on m.id = se.mode_id order by s.scheduled_at"
            )
        ).all()
    engine.dispose()
    assert len(rows) == len(lines)
    for row, line in zip(rows, lines, strict=True):
        conn_ms, oci_ms, dual_ms, sid = line.split()[:4]
        assert row.logon_ns == round(float(conn_ms) * 1e6)
        assert row.ping_ns == round(float(oci_ms) * 1e6)
        assert row.query_ns == round(float(dual_ms) * 1e6)
        assert row.sid == int(sid)
        assert (row.probe, row.name) == ("connping", "dedicated")


def test_import_errors_are_one_line(store_env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("hello world\n1 2 3\n")
    res = _cli("import-connping", str(bad), "--target", "sim", "--mode", "dedicated", env=store_env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{bad}: line 1: not a connping CSV header" in res.stderr
    good = tmp_path / "good.csv"
    good.write_text("# CONN OCI DUAL SID INST EPOCH\n10.5 0.2 0.3 7 1 1763700000.5\n")
    res = _cli("import-connping", str(good), "--target", "nope", "--mode", "x", env=store_env)
    assert "no target named 'nope'" in res.stderr
    res = _cli("import-connping", str(good), "--target", "sim", "--mode", "shared", env=store_env)
    assert "target 'sim' has no mode 'shared' (it has: dedicated, pooled)" in res.stderr
    # a mode without a connping series gets a disabled one at site 'import'
    res = _cli("import-connping", str(good), "--target", "sim", "--mode", "pooled", env=store_env)
    assert res.returncode == 0, res.stderr
    engine = create_engine(store_env["CONNWATCH_DATABASE_URL"])
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "select se.enabled, se.site from series se join modes m on m.id = se.mode_id "
                "where m.name = 'pooled'"
            )
        ).one()
    engine.dispose()
    assert (row.enabled, row.site) == (False, "import")
