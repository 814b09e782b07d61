"""PostgreSQL password authentication against a real server that asks for one
(scram-sha-256 on loopback TCP): the right password logs on, a wrong one is PG-28P01 and
never appears in the sample. The shared test cluster trusts every login, so this test
runs its own."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from app.demo.pgcluster import PgCluster
from app.probes.spec import PostgresEndpoint, ProbeSpec
from app.samples import ErrorClass, SampleStatus
from tests.fixtures.pg import temporary_cluster
from tests.probes.conftest import run_probe

RIGHT = "Right-Horse-Battery"
WRONG = "Wrong-Staple-Guess"


@pytest.fixture(scope="module")
def scram_cluster() -> Iterator[PgCluster]:
    with temporary_cluster("connwatch-test-scram-") as cluster:
        with psycopg.connect(cluster.dsn(unix=True), autocommit=True) as conn:
            conn.execute("set password_encryption = 'scram-sha-256'")
            conn.execute(f"create role monitor login password '{RIGHT}'")
        hba = cluster.datadir / "pgdata" / "pg_hba.conf"
        hba.write_text(
            "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
            "host all all ::1/128 scram-sha-256\n"
        )
        with psycopg.connect(cluster.dsn(unix=True), autocommit=True) as conn:
            conn.execute("select pg_reload_conf()")
        yield cluster


def _connping(cluster: PgCluster, password: str | None) -> list:  # type: ignore[type-arg]
    ep = PostgresEndpoint("127.0.0.1", cluster.port, "postgres", "monitor", password=password)
    return run_probe(ProbeSpec("connping", ep, 10.0))


def test_the_right_password_logs_on(scram_cluster: PgCluster) -> None:
    (s,) = _connping(scram_cluster, RIGHT)
    assert s.status is SampleStatus.OK, s.error_message


def test_a_wrong_password_is_pg_28p01_and_stays_secret(scram_cluster: PgCluster) -> None:
    (s,) = _connping(scram_cluster, WRONG)
    assert s.status is SampleStatus.ERROR
    assert (s.error_class, s.error_code) == (ErrorClass.PG, "PG-28P01")
    assert s.error_phase is not None and s.error_phase.startswith("logon")
    assert WRONG not in (s.error_message or "") and RIGHT not in (s.error_message or "")


def test_no_password_at_all_is_named_too(scram_cluster: PgCluster) -> None:
    (s,) = _connping(scram_cluster, None)
    assert s.status is SampleStatus.ERROR
    assert s.error_code == "PG-28P01", s.error_message  # the server asked, none was set
    assert "no password supplied" in (s.error_message or "")
