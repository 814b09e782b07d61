"""sessionping: one kept session; each run pings and queries it (rwloadsim's ociping).

First run, or the first run after a failure: log on (``logon_ns``, breakdown and
round trips as for connping) and read the session identity (untimed);
``extra["reconnected"]`` is true when this logon replaces a session lost to an
error or timeout. Every run: one untimed warm-up ping (as ``ociping.rwl`` does),
then ``ping_ns`` (one ping), then ``query_ns`` (``select 1 from dual`` /
``select 1``, execute and fetch). Identity fields are repeated on every sample.
``extra["round_trips_run"]`` counts the Oracle round trips of this run.
Parameters: ``warm`` (bool, default true), ``query`` (bool, default true; the
``ociping`` command turns it off, as rwloadsim's ociping only pings).
"""

from __future__ import annotations

from app.probes.base import ProbeContext, checked_params
from app.probes.logon import KeptLogon
from app.probes.spec import ProbeSpec


class SessionPing(KeptLogon):
    name = "sessionping"

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        p = checked_params(self.name, spec.params)
        self.warm: bool = p["warm"]
        self.query: bool = p["query"]

    async def run(self, ctx: ProbeContext) -> None:
        r = ctx.result
        if self._logon is None:
            s = await self._log_on(ctx)
        else:
            s = self._logon.session
            self._repeat_identity(ctx)
        before = s.round_trips
        if self.warm:
            ctx.phase = "ping"
            await s.ping()
        with ctx.timed("ping", "ping_ns"):
            await s.ping()
        if self.query:
            with ctx.timed("query", "query_ns"):
                await s.query()
        after = s.round_trips
        if before is not None and after is not None:
            r.extra["round_trips_run"] = after - before
