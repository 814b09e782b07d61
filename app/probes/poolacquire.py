"""poolacquire: client-side pool acquire latency, foreground vs background validation.

Seed 004: validating a pooled connection with a round trip on every checkout
("foreground") adds that round trip to every request; validating out of band
("background") does not. The probe keeps one python-oracledb thin asyncio pool
per series and, each run, times:

- ``acquire_ns``: ``pool.acquire()`` until it returned a connection. With
  ``validation="foreground"`` the pool's ``ping_interval`` is 0, so python-oracledb
  pings the connection inside ``acquire()`` (one round trip, the foreground cost);
  with ``"background"`` it is -1 (never), so ``acquire()`` is local unless the
  pool must open a session. The pool's own dead-socket check needs no round trip.
- ``query_ns``: ``select 1 from dual`` on the acquired connection (the request);
- ``extra["release_ns"]``: giving it back (local, except the one-way DRCP release).

After the query, an untimed ``sys_context`` query reads the session's SID and
server type (as connping does).

The first run creates the pool (``extra["pool_created"]``; that run's acquire
includes the first logon). Every sample carries the pool settings in
``extra["pool"]``.

DRCP and python-oracledb 26.1's statement-cache defect (docs/probes.md, "Driver
defects connwatch works around"): on a DRCP connection the thin driver queues the
cursor id of every statement executed after a pooled release for closing, but does not
send those closes until the server returns a session piggyback, and it keeps them in
an array of ``max_open_cursors`` entries that it never checks. Against a server that
does not send that piggyback, the ``max_open_cursors``-th queued id raises
``IndexError: array assignment index out of range`` (from ``Cursor.close`` and
``__del__``): with 2 statements per run, run 151 of 300 open cursors. The probe counts
the statements it executed on the pool (an upper bound of what any of its connections
queued) and, before a run could cross ``max_open_cursors``, replaces the pool (``pool_recycle``,
untimed, before the timed acquire): the old one is closed, a new one opened and
warmed by one acquire/release, so the measured acquire is a warm one as always
(``extra["pool_recycled"]``). Should the defect still strike, the IndexError is a
probe-side error (class PROBE), never the database's, and the pool is replaced.

Oracle only: for PostgreSQL, pgbouncer is the pooling analogue (psycopg's pool package
is not a dependency).
Parameters: ``validation`` ("foreground" | "background", default foreground),
``min`` (1), ``max`` (2), ``increment`` (1).
"""

from __future__ import annotations

import time
from typing import Any

import oracledb

from app.drivers import oracle
from app.probes.base import Probe, ProbeConfigError, ProbeContext, checked_params
from app.probes.spec import OracleEndpoint, ProbeSpec

_PING_INTERVAL = {"foreground": 0, "background": -1}
# Statements one run executes: the query, and the identity query (twice when the database
# rejects SERVER_TYPE and the fallback runs).
STATEMENTS_PER_RUN = 3


class PoolAcquire(Probe):
    name = "poolacquire"

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        if not isinstance(spec.endpoint, OracleEndpoint):
            raise ProbeConfigError(
                "poolacquire measures python-oracledb's client pool: it needs an Oracle"
                " endpoint (for PostgreSQL compare the pgbouncer routes instead)"
            )
        self.endpoint: OracleEndpoint = spec.endpoint
        p = checked_params(self.name, spec.params)
        self.validation: str = p["validation"]
        self.min: int = p["min"]
        self.max: int = p["max"]
        self.increment: int = p["increment"]
        self._pool: oracledb.AsyncConnectionPool | None = None
        self._statements = 0  # executed on the current pool's connections
        self._cursor_budget: int | None = None  # statements before the pool is replaced

    def settings(self) -> dict[str, Any]:
        ep = self.endpoint
        return {
            "validation": self.validation,
            "ping_interval": _PING_INTERVAL[self.validation],
            "min": self.min,
            "max": self.max,
            "increment": self.increment,
            "server_type": str(ep.server_type) if ep.server_type else None,
            "cclass": ep.cclass,
            "purity": str(ep.purity),
        }

    async def run(self, ctx: ProbeContext) -> None:
        r = ctx.result
        r.extra["pool"] = self.settings()
        if self._pool is None:
            ctx.phase = "pool_create"
            self._pool = await self._new_pool()
            r.extra["pool_created"] = True
        elif self._recycle_due():
            await self._recycle(ctx)
        pool = self._pool
        with ctx.timed("acquire", "acquire_ns"):
            conn = await pool.acquire()
        token = ctx.defer(lambda: pool.release(conn))
        r.serial = conn.serial_num
        r.instance = conn.instance_name
        r.service = conn.service_name
        with ctx.timed("query", "query_ns"), conn.cursor() as cur:
            await cur.execute(oracle.QUERY_SQL)
            await cur.fetchone()
        self._statements += 1
        ctx.phase = "info"
        session = oracle.OracleSession(conn, None)
        info = await session.info()
        self._statements += session.statements
        r.sid, r.server_type = info.sid, info.server_type
        if self._cursor_budget is None and self._is_drcp(info.server_type):
            # the driver's queue of cursors to close holds max_open_cursors ids (1 when
            # the server does not say how many)
            self._cursor_budget = max(1, conn.max_open_cursors or 1)
        ctx.phase = "release"
        t0 = time.perf_counter_ns()
        await pool.release(conn)
        r.extra["release_ns"] = time.perf_counter_ns() - t0
        ctx.release(token)
        r.extra["pool_open"] = pool.opened
        r.extra["pool_busy"] = pool.busy

    def _is_drcp(self, server_type: str | None) -> bool:
        requested = self.endpoint.server_type
        return (server_type or "").upper() == "POOLED" or str(requested) == "pooled"

    def _recycle_due(self) -> bool:
        """True when the next run could overflow the driver's DRCP cursor queue: each
        statement executed on the pool may have queued one cursor id, and a run executes
        at most ``STATEMENTS_PER_RUN`` more."""
        budget = self._cursor_budget
        return budget is not None and self._statements + STATEMENTS_PER_RUN > budget

    async def _new_pool(self) -> oracledb.AsyncConnectionPool:
        self._statements, self._cursor_budget = 0, None
        return await oracle.create_pool(
            self.endpoint,
            min_size=self.min,
            max_size=self.max,
            increment=self.increment,
            ping_interval=_PING_INTERVAL[self.validation],
        )

    async def _recycle(self, ctx: ProbeContext) -> None:
        """Replace the pool before the driver's DRCP cursor queue can overflow (untimed):
        close it, open a new one and warm it with one acquire/release, so the run's timed
        acquire finds a pooled connection as every other run does."""
        ctx.phase = "pool_recycle"
        old, self._pool = self._pool, None
        ctx.result.extra["pool_recycled"] = True
        ctx.result.extra["pool_recycled_after_statements"] = self._statements
        if old is not None:
            await old.close(force=True)
        pool = self._pool = await self._new_pool()
        conn = await pool.acquire()
        await pool.release(conn)

    async def reset(self) -> None:
        pool, self._pool = self._pool, None
        self._statements, self._cursor_budget = 0, None
        if pool is not None:
            await pool.close(force=True)
