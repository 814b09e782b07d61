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
``extra["pool"]``. Oracle only: for PostgreSQL, pgbouncer is the pooling
analogue (psycopg's pool package is not a dependency).
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
            self._pool = await oracle.create_pool(
                self.endpoint,
                min_size=self.min,
                max_size=self.max,
                increment=self.increment,
                ping_interval=_PING_INTERVAL[self.validation],
            )
            r.extra["pool_created"] = True
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
        ctx.phase = "info"
        info = await oracle.OracleSession(conn, None).info()
        r.sid, r.server_type = info.sid, info.server_type
        ctx.phase = "release"
        t0 = time.perf_counter_ns()
        await pool.release(conn)
        r.extra["release_ns"] = time.perf_counter_ns() - t0
        ctx.release(token)
        r.extra["pool_open"] = pool.opened
        r.extra["pool_busy"] = pool.busy

    async def reset(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(force=True)
