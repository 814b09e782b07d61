from __future__ import annotations

import asyncio

import psycopg

from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import ProbeSpec
from app.samples import SampleStatus
from tests.probes.conftest import PgEndpoints, run_probe


def test_sessionping_keeps_one_session(all_pg_endpoints: PgEndpoints) -> None:
    for route in ("tcp", "unix", "bouncer_session"):
        ep = all_pg_endpoints[route]

        first, *rest = run_probe(ProbeSpec("sessionping", ep), runs=3)
        assert first.ok and first.logon_ns is not None, first.error_message
        assert first.extra["reconnected"] is False
        for s in rest:
            assert s.ok and s.logon_ns is None  # no new logon
            assert s.ping_ns is not None and s.ping_ns > 0
            assert s.query_ns is not None and s.query_ns > 0
            assert s.sid == first.sid
            assert "reconnected" not in s.extra


def test_sessionping_through_transaction_pooling(all_pg_endpoints: PgEndpoints) -> None:
    ep = all_pg_endpoints["bouncer_transaction"]
    samples = run_probe(ProbeSpec("sessionping", ep), runs=2)
    assert all(s.ok for s in samples)
    assert samples[0].server_type == "PGBOUNCER_TRANSACTION"


def test_sessionping_reconnects_after_the_session_is_killed(
    pg_endpoints: PgEndpoints, pg_cluster: object
) -> None:
    ep = pg_endpoints["tcp"]
    admin_dsn = pg_cluster.dsn(ep.dbname)  # type: ignore[attr-defined]

    async def go() -> list:  # type: ignore[type-arg]
        probe = create_probe(ProbeSpec("sessionping", ep, deadline_s=5))
        try:
            first = await run_once(probe)
            async with await psycopg.AsyncConnection.connect(admin_dsn, autocommit=True) as a:
                await a.execute("select pg_terminate_backend(%s)", [first.sid])
            await asyncio.sleep(0.1)
            broken = await run_once(probe)
            again = await run_once(probe)
            return [first, broken, again]
        finally:
            await probe.close()

    first, broken, again = asyncio.run(go())
    assert first.ok
    assert broken.status is SampleStatus.ERROR
    assert broken.error_phase == "ping"
    assert broken.error_code is not None and broken.error_code.startswith(("PG-", "NET-"))
    assert again.ok and again.logon_ns is not None
    assert again.extra["reconnected"] is True
    assert again.sid != first.sid
