"""How connwatch connects to PostgreSQL: psycopg 3, asyncio.

Routes (:class:`app.probes.spec.PgRoute`): straight to the server over TCP or a
unix socket (``host`` is then the socket directory), or through pgbouncer in
session or transaction pooling mode: PostgreSQL's analogues of dedicated vs
DRCP and of TCP vs IPC.

Ping: an empty query (``""``). It is the cheapest request the server answers:
one Query/EmptyQueryResponse/ReadyForQuery exchange with no parsing, planning or
row data, and pgbouncer must forward it to a server connection (in transaction
mode it binds one for that request), so it measures the same path as real
statements. libpq's ``PQping`` was rejected: it opens a new connection each
time, which is a logon, not a round trip. ``select 1`` is the query phase.

psycopg exposes no per-round-trip hook, so PostgreSQL samples have no round-trip
count and no logon breakdown.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from app.drivers.base import SessionInfo
from app.probes.spec import PgRoute, PostgresEndpoint

INFO_SQL = "select pg_backend_pid(), current_setting('server_version'), current_database()"
QUERY_SQL = "select 1"

_SERVER_TYPE = {
    PgRoute.DIRECT: "DIRECT",
    PgRoute.PGBOUNCER_SESSION: "PGBOUNCER_SESSION",
    PgRoute.PGBOUNCER_TRANSACTION: "PGBOUNCER_TRANSACTION",
}


def conninfo(ep: PostgresEndpoint) -> dict[str, Any]:
    """psycopg connect keywords for one mode (password included: never log this)."""
    kw: dict[str, Any] = {
        "host": ep.host,
        "port": ep.port,
        "dbname": ep.dbname,
        "user": ep.user,
        "application_name": "connwatch",
    }
    if ep.password:
        kw["password"] = ep.password
    if ep.connect_timeout_s:
        kw["connect_timeout"] = max(1, round(ep.connect_timeout_s))
    if ep.sslmode:
        kw["sslmode"] = ep.sslmode
    kw.update(ep.options)
    return kw


class PostgresSession:
    def __init__(self, conn: psycopg.AsyncConnection[Any], ep: PostgresEndpoint) -> None:
        self.conn = conn
        self.ep = ep

    @property
    def round_trips(self) -> int | None:
        return None

    async def ping(self) -> None:
        await self.conn.execute("")

    async def query(self) -> None:
        cur = await self.conn.execute(QUERY_SQL)
        await cur.fetchone()

    async def info(self) -> SessionInfo:
        cur = await self.conn.execute(INFO_SQL)
        row = await cur.fetchone()
        assert row is not None
        return SessionInfo(
            sid=int(row[0]),
            serial=None,
            instance=f"{self.ep.host}:{self.ep.port}",
            service=str(row[2]),
            server_type=_SERVER_TYPE[self.ep.route] + ("/UNIX" if self.ep.unix_socket else ""),
        )

    async def insert(self, table: str, probe_id: str) -> None:
        stmt = sql.SQL("insert into {} (probe_id, at) values (%s, now())").format(
            sql.Identifier(*table.split("."))
        )
        await self.conn.execute(stmt, [probe_id])

    async def commit(self) -> None:
        await self.conn.commit()

    async def purge(self, table: str, probe_id: str, keep_seconds: int) -> None:
        stmt = sql.SQL(
            "delete from {} where probe_id = %s and at < now() - make_interval(secs => %s)"
        ).format(sql.Identifier(*table.split(".")))
        await self.conn.execute(stmt, [probe_id, keep_seconds])
        await self.conn.commit()

    async def close(self) -> None:
        await self.conn.close()


async def connect(ep: PostgresEndpoint, *, autocommit: bool = True) -> PostgresSession:
    """Log on once. ``autocommit`` is off only for the commit probe."""
    conn = await psycopg.AsyncConnection.connect(
        autocommit=autocommit,
        prepare_threshold=None,  # pgbouncer in transaction mode: no server-side prepares
        **conninfo(ep),
    )
    return PostgresSession(conn, ep)
