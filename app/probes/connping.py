"""connping: a fresh logon, OCIPing, ``select 1 from dual``, logoff; each timed.

One run, in order (rwloadsim's ``connping.rwl`` semantics, see docs/probes.md):

1. ``logon_ns``: the connect call until a usable session (with the per-round-trip
   breakdown and round-trip count for Oracle thin);
2. the untimed identity query (``sys_context`` SID / INSTANCE / SERVER_TYPE;
   PostgreSQL ``pg_backend_pid()``);
3. one untimed warm-up ping, then ``ping_ns``: one ping (OCIPing /
   ``Connection.ping()``; PostgreSQL an empty query);
4. one untimed warm-up query, then ``query_ns``: execute and fetch of
   ``select 1 from dual`` (``select 1``);
5. ``logoff_ns``: closing the session (Oracle: logoff round trip and socket
   close; DRCP: release). rwloadsim does not time this; connwatch does.

``extra["round_trips_total"]`` counts every Oracle round trip of the run.
Parameters: ``warm`` (bool, default true) turns steps 3 and 4's warm-ups off;
``server_time`` (bool, default false; Oracle only) adds one untimed query after step
2: the session's own 'connection management call elapsed time' from
V$SESS_TIME_MODEL, i.e. what the server spent on this logon, in
``extra["server_logon_ms"]`` (the compare page shows it beside the client's logon). A
view it may not read is recorded as ``extra["server_time_unavailable"]`` (the ORA
code) and the run goes on.
"""

from __future__ import annotations

import oracledb

from app.drivers.base import Session
from app.drivers.oracle import OracleSession
from app.probes.base import Probe, ProbeContext, checked_params
from app.probes.logon import record_info, timed_logoff, timed_logon
from app.probes.spec import ProbeSpec

SERVER_TIME_SQL = (
    "select value from v$sess_time_model where sid = sys_context('USERENV','SID')"
    " and stat_name = 'connection management call elapsed time'"
)


class ConnPing(Probe):
    name = "connping"

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        p = checked_params(self.name, spec.params)
        self.warm: bool = p["warm"]
        self.server_time: bool = p["server_time"]

    async def run(self, ctx: ProbeContext) -> None:
        logon = await timed_logon(ctx, self.spec.endpoint)
        s = logon.session
        await record_info(ctx, s)
        if self.server_time:
            await self._server_time(ctx, s)
        if self.warm:
            ctx.phase = "ping"
            await s.ping()
        with ctx.timed("ping", "ping_ns"):
            await s.ping()
        if self.warm:
            ctx.phase = "query"
            await s.query()
        with ctx.timed("query", "query_ns"):
            await s.query()
        await timed_logoff(ctx, logon)
        if logon.trips is not None:
            ctx.result.extra["round_trips_total"] = logon.trips.count

    async def _server_time(self, ctx: ProbeContext, s: Session) -> None:
        """The server's own time for this logon (untimed; V$SESS_TIME_MODEL, in us)."""
        if not isinstance(s, OracleSession):
            return
        ctx.phase = "info"
        try:
            _, rows = await s.rows(SERVER_TIME_SQL)
        except oracledb.DatabaseError as exc:
            err = exc.args[0] if exc.args else None
            code = getattr(err, "full_code", "") or ""
            if not code.startswith("ORA-"):
                raise
            ctx.result.extra["server_time_unavailable"] = code
            return
        if rows and rows[0][0] is not None:
            ctx.result.extra["server_logon_ms"] = round(float(rows[0][0]) / 1000, 3)
