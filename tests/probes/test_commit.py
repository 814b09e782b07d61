from __future__ import annotations

import asyncio

import psycopg
import pytest

from app.probes.base import ProbeConfigError
from app.probes.commit import POSTGRES_SETUP_SQL
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import ProbeSpec
from app.samples import SampleStatus
from tests.probes.conftest import PgEndpoints, run_probe


def _setup(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for stmt in POSTGRES_SETUP_SQL.split(";"):
            body = "\n".join(
                line for line in stmt.splitlines() if line.strip() and not line.startswith("--")
            )
            if body and "create role" not in body:
                conn.execute(body.replace(" to connwatch", " to public"))


def _count(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select count(*) from connwatch_probe").fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("route", ["tcp", "unix", "bouncer_transaction"])
def test_commit_inserts_and_commits(all_pg_endpoints: PgEndpoints, pg_dsn: str, route: str) -> None:
    _setup(pg_dsn)
    samples = run_probe(ProbeSpec("commit", all_pg_endpoints[route]), runs=3)
    for s in samples:
        assert s.ok, s.error_message
        assert s.commit_ns is not None
        assert s.commit_ns == s.extra["insert_ns"] + s.extra["commit_only_ns"]
    assert samples[0].logon_ns is not None and samples[1].logon_ns is None
    assert _count(pg_dsn) == 3  # committed: visible to another session


def test_commit_purges_its_old_rows(pg_endpoints: PgEndpoints, pg_dsn: str) -> None:
    _setup(pg_dsn)
    spec = ProbeSpec("commit", pg_endpoints["tcp"], params={"purge_every": 2, "keep_seconds": 0})
    samples = run_probe(spec, runs=4)
    assert all(s.ok for s in samples)
    assert _count(pg_dsn) <= 1


def test_commit_without_table_is_a_clear_error(pg_endpoints: PgEndpoints) -> None:
    (s,) = run_probe(ProbeSpec("commit", pg_endpoints["tcp"]))
    assert s.status is SampleStatus.ERROR
    assert s.error_code == "PG-42P01" and s.error_phase == "insert"


def test_commit_rejects_odd_table_names(pg_endpoints: PgEndpoints) -> None:
    with pytest.raises(ProbeConfigError, match="plain table name"):
        create_probe(ProbeSpec("commit", pg_endpoints["tcp"], params={"table": "t; drop x"}))


def test_commit_reconnects_after_failure(pg_endpoints: PgEndpoints, pg_dsn: str) -> None:
    _setup(pg_dsn)

    async def go() -> list:  # type: ignore[type-arg]
        probe = create_probe(ProbeSpec("commit", pg_endpoints["tcp"]))
        try:
            a = await run_once(probe)
            with psycopg.connect(pg_dsn, autocommit=True) as c:
                c.execute("select pg_terminate_backend(%s)", [a.sid])
            b = await run_once(probe)
            c2 = await run_once(probe)
            return [a, b, c2]
        finally:
            await probe.close()

    a, b, c = asyncio.run(go())
    assert a.ok and not b.ok and c.ok
    assert c.extra["reconnected"] is True
