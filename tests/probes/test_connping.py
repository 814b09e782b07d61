from __future__ import annotations

import pytest

from app.probes.spec import ProbeSpec
from app.samples import SampleStatus
from tests.probes.conftest import PgEndpoints, run_probe


@pytest.mark.parametrize("route", ["tcp", "unix", "bouncer_session", "bouncer_transaction"])
def test_connping_postgres_every_route(all_pg_endpoints: PgEndpoints, route: str) -> None:
    ep = all_pg_endpoints[route]
    (sample,) = run_probe(ProbeSpec("connping", ep, deadline_s=10))
    assert sample.status is SampleStatus.OK, sample.error_message
    for name in ("logon_ns", "ping_ns", "query_ns", "logoff_ns", "total_ns"):
        assert getattr(sample, name) > 0, name
    assert sample.total_ns is not None and sample.logon_ns is not None
    assert sample.total_ns >= sample.logon_ns + sample.ping_ns + sample.query_ns  # type: ignore[operator]
    assert sample.sid is not None and sample.sid > 0  # backend pid
    assert sample.service == ep.dbname
    expected = {"tcp": "DIRECT", "unix": "DIRECT/UNIX"}.get(
        route, route.replace("bouncer", "PGBOUNCER").upper()
    )
    assert sample.server_type == expected
    assert sample.commit_ns is None and sample.acquire_ns is None


def test_connping_postgres_fresh_backend_each_run(pg_endpoints: PgEndpoints) -> None:
    samples = run_probe(ProbeSpec("connping", pg_endpoints["tcp"]), runs=3)
    assert all(s.ok for s in samples)
    assert len({s.sid for s in samples}) == 3  # a new logon means a new backend


def test_connping_postgres_unknown_database_is_classified(pg_endpoints: PgEndpoints) -> None:
    from dataclasses import replace

    ep = replace(pg_endpoints["tcp"], dbname="no_such_db")
    (sample,) = run_probe(ProbeSpec("connping", ep))
    assert sample.status is SampleStatus.ERROR
    assert sample.error_code == "PG-3D000"
    assert sample.error_phase == "logon"
    assert sample.logon_ns is None
