"""commit: insert one row into a scratch table and commit it, on a kept session.

Each run: log on first if no session is kept (``logon_ns``, as sessionping, with
``extra["reconnected"]``), then ``extra["insert_ns"]`` (the insert round trip),
``extra["commit_only_ns"]`` (the commit round trip) and ``commit_ns`` (their
sum: one insert plus its commit, the seed's unit of work). Every
``purge_every`` runs the probe deletes its own rows older than ``keep_seconds``
and commits, untimed, so the table stays small.

The table must exist; its setup SQL and the least privileges the probe user
needs are in :data:`ORACLE_SETUP_SQL` / :data:`POSTGRES_SETUP_SQL` and
docs/probes.md. Parameters: ``table`` (default ``connwatch_probe``),
``probe_id`` (default ``connwatch``; tells concurrent probes' rows apart),
``purge_every`` (100), ``keep_seconds`` (3600).
"""

from __future__ import annotations

import time

from app.probes.base import ProbeContext, checked_params
from app.probes.logon import KeptLogon
from app.probes.spec import ProbeSpec
from app.targets.params import COMMIT_TABLE

DEFAULT_TABLE = COMMIT_TABLE

ORACLE_SETUP_SQL = """\
-- as a DBA: the probe user owns its scratch table and can do nothing else
create user connwatch identified by "<password>" quota 10m on users;
grant create session to connwatch;
create table connwatch.connwatch_probe (
  probe_id varchar2(64) not null,
  at       timestamp    not null
);
create index connwatch.connwatch_probe_ix
  on connwatch.connwatch_probe (probe_id, at);
"""

POSTGRES_SETUP_SQL = """\
-- as the database owner
create role connwatch login password '<password>';
create table connwatch_probe (
  probe_id text        not null,
  at       timestamptz not null
);
create index connwatch_probe_ix on connwatch_probe (probe_id, at);
grant select, insert, delete on connwatch_probe to connwatch;
"""


class CommitProbe(KeptLogon):
    name = "commit"

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        p = checked_params(self.name, spec.params)
        self.table: str = p["table"]
        self.probe_id: str = p["probe_id"]
        self.purge_every: int = p["purge_every"]
        self.keep_seconds: int = p["keep_seconds"]
        self._runs = 0

    async def run(self, ctx: ProbeContext) -> None:
        r = ctx.result
        if self._logon is None:
            s = await self._log_on(ctx, autocommit=False)
            await s.commit()  # end the info query's implicit transaction (PG)
        else:
            s = self._logon.session
            self._repeat_identity(ctx)
        ctx.phase = "insert"
        t0 = time.perf_counter_ns()
        await s.insert(self.table, self.probe_id)
        t1 = time.perf_counter_ns()
        ctx.phase = "commit"
        await s.commit()
        t2 = time.perf_counter_ns()
        r.commit_ns = t2 - t0
        r.extra["insert_ns"] = t1 - t0
        r.extra["commit_only_ns"] = t2 - t1
        r.extra["table"] = self.table
        self._runs += 1
        if self._runs % self.purge_every == 0:
            ctx.phase = "purge"
            await s.purge(self.table, self.probe_id, self.keep_seconds)
