from __future__ import annotations

import asyncio

from app.demo.pgcluster import PgCluster
from app.drivers.postgres import connect, conninfo
from app.probes.spec import PostgresEndpoint


def test_conninfo_has_the_mode_settings() -> None:
    ep = PostgresEndpoint("/run/pg", 5433, "db", "u", password="pw", connect_timeout_s=2.4)
    kw = conninfo(ep)
    assert kw["host"] == "/run/pg" and kw["port"] == 5433 and kw["connect_timeout"] == 2
    assert "pw" not in repr(ep) and ep.unix_socket


def test_session_calls_against_real_server(pg_cluster: PgCluster, pg_database: str) -> None:
    ep = PostgresEndpoint(str(pg_cluster.socket_dir), pg_cluster.port, pg_database, pg_cluster.user)

    async def go() -> tuple[object, ...]:
        s = await connect(ep)
        try:
            await s.ping()
            await s.query()
            info = await s.info()
            return info.sid, info.server_type, s.round_trips
        finally:
            await s.close()

    sid, server_type, trips = asyncio.run(go())
    assert isinstance(sid, int) and sid > 0
    assert server_type == "DIRECT/UNIX" and trips is None
