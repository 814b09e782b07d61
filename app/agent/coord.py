"""Coordination through PostgreSQL: the agents row, who runs which series, the schedule.

Each agent keeps ONE autocommit session (its coordination session) and holds on it
session-level advisory locks (two-key form, so they never collide with the store's):

- ``(PRESENCE, agents.id)``: "this agent is alive". PostgreSQL drops it the moment the
  session ends (agent exit, crash, SIGKILL, or a survivor terminating a zombie's
  session, below), so a dead agent stops counting at once.
- ``(SERIES, series.id)``: "this agent runs this series". At most one holder.
- ``(MAINTENANCE, 0)``: "this agent runs the store maintenance".

Every ``poll_s`` (about a second) :meth:`Coordinator.tick` writes the heartbeat and
stats, re-reads the site's series when their fingerprint changed, counts the live
agents of the site (presence locks) and takes its fair share ``ceil(series / live)``:
it releases what it holds beyond the share (lowest priority first) and try-locks
free series up to it. A dead agent's series are therefore free at once and taken by
the others within one or two ticks (well within two intervals of any series of 1 s
or more). An agent whose session is still open but whose heartbeat is older than
``ZOMBIE_S`` (a hung or partitioned host) has its session terminated by a live
agent (``pg_terminate_backend``; needs the same role or ``pg_signal_backend``).

While the store is unreachable the agent keeps running what it had. When its session
comes back it re-takes its series locks; any another agent took meanwhile are
dropped (the store's sample key makes an overlap harmless).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app import __version__
from app.agent.scheduling.specs import SeriesRow, fingerprint, load_series

log = logging.getLogger(__name__)

PRESENCE = 727281
SERIES = 727282
MAINTENANCE = 727283
ZOMBIE_S = 30.0
_HEARTBEAT = text(
    "update agents set heartbeat_at = now(), stats = cast(:st as jsonb) where id = :id"
)


def default_agent_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _priority(agent: str, series_id: int) -> int:
    """Rendezvous hashing: which free series an agent prefers (spreads the claims)."""
    return int.from_bytes(hashlib.blake2b(f"{agent}/{series_id}".encode(), digest_size=8).digest())


@dataclass
class TickResult:
    rows: dict[int, SeriesRow]  # the series this agent runs from now on
    leader: bool
    live_agents: int
    changed: bool  # the set or the definitions changed since the last tick


@dataclass
class Coordinator:
    engine: Engine
    name: str
    site: str
    agent_id: int | None = None
    held: set[int] = field(default_factory=set)  # series locked and run by this agent
    releasing: set[int] = field(default_factory=set)  # locked, no longer run, unlock next tick
    leader: bool = False
    backend_pid: int | None = None
    _conn: Connection | None = None
    _fingerprint: str | None = None
    _site_rows: dict[int, SeriesRow] = field(default_factory=dict)
    _last_owned: dict[int, SeriesRow] = field(default_factory=dict)
    live_agents: int = 1

    # -- session --------------------------------------------------------------
    def _session(self) -> Connection:
        if self._conn is not None and not self._conn.closed and not self._conn.invalidated:
            return self._conn
        self._drop_session()
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            self._register(conn)
        except Exception:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _drop_session(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.invalidate()
                self._conn.close()
        self._conn = None
        self.leader = False

    def _register(self, conn: Connection) -> None:
        self.agent_id = conn.execute(
            text(
                "insert into agents (name, site, version, hostname, pid) "
                "values (:n, :s, :v, :h, :p) on conflict (name) do update set "
                "site = excluded.site, version = excluded.version, hostname = excluded.hostname,"
                " pid = excluded.pid, heartbeat_at = now(), started_at = case when agents.pid ="
                " excluded.pid then agents.started_at else now() end returning id"
            ),
            {
                "n": self.name,
                "s": self.site,
                "v": __version__,
                "h": socket.gethostname(),
                "p": os.getpid(),
            },
        ).scalar_one()
        self.backend_pid = conn.execute(text("select pg_backend_pid()")).scalar_one()
        conn.execute(text("select pg_advisory_lock(:k, :id)"), {"k": PRESENCE, "id": self.agent_id})
        self.releasing = set()  # those locks went with the old session
        if self.held:  # a new session after an outage: take back what we ran
            got = set(
                conn.execute(
                    text(
                        "select id from unnest(cast(:ids as int[])) id "
                        "where pg_try_advisory_lock(:k, id)"
                    ),
                    {"ids": sorted(self.held), "k": SERIES},
                ).scalars()
            )
            lost = self.held - got
            if lost:
                log.warning(
                    "%d series were taken over by another agent while the store was away",
                    len(lost),
                )
            self.held = got

    # -- one tick ---------------------------------------------------------------
    def tick(self, stats: dict[str, Any]) -> TickResult:
        """Heartbeat, re-read the schedule if it changed, rebalance. Raises if the store
        cannot be reached (the caller keeps running what it had)."""
        try:
            conn = self._session()
            return self._tick(conn, stats)
        except Exception:
            self._drop_session()
            raise

    def _tick(self, conn: Connection, stats: dict[str, Any]) -> TickResult:
        stats = {**stats, "backend_pid": self.backend_pid, "live_agents": self.live_agents}
        stats["maintenance"] = self.leader
        stats["series"] = len(self.held)
        conn.execute(_HEARTBEAT, {"st": json.dumps(stats, default=str), "id": self.agent_id})
        fp = fingerprint(conn, self.site)
        changed = False
        if fp != self._fingerprint:
            self._site_rows = load_series(conn, self.site)
            self._fingerprint = fp
            changed = True
        self._terminate_zombies(conn)
        self.live_agents = max(
            1,
            conn.execute(
                text(
                    "select count(*) from agents a join pg_locks l on l.locktype = 'advisory' "
                    "and l.granted and l.classid = :k and l.objid = a.id and l.objsubid = 2 "
                    "and l.database = (select oid from pg_database where datname = "
                    "current_database()) where a.site = :site"
                ),
                {"k": PRESENCE, "site": self.site},
            ).scalar_one(),
        )
        self._rebalance(conn)
        self._lead(conn)
        owned = {sid: self._site_rows[sid] for sid in sorted(self.held)}
        if owned != self._last_owned:
            changed = True
            self._record_assignments(conn, owned)
            self._last_owned = owned
        return TickResult(owned, self.leader, self.live_agents, changed)

    def _terminate_zombies(self, conn: Connection) -> None:
        rows = conn.execute(
            text(
                "select a.name, l.pid from agents a join pg_locks l on l.locktype = 'advisory' "
                "and l.granted and l.classid = :k and l.objid = a.id and l.objsubid = 2 "
                "where a.site = :site and a.id <> :me "
                "and a.heartbeat_at < now() - make_interval(secs => :z)"
            ),
            {"k": PRESENCE, "site": self.site, "me": self.agent_id, "z": ZOMBIE_S},
        ).all()
        for name, pid in rows:
            log.warning(
                "agent %s holds its locks but has not sent a heartbeat for %.0f s: "
                "terminating its session %d to take over its series",
                name,
                ZOMBIE_S,
                pid,
            )
            conn.execute(text("select pg_terminate_backend(:p)"), {"p": pid})

    def _rebalance(self, conn: Connection) -> None:
        # Hand-over in two ticks: a series given up stops running at the end of one tick
        # and is unlocked at the next, so its new owner never overlaps its last run.
        if self.releasing:
            self._unlock(conn, self.releasing)
            self.releasing = set()
        wanted = set(self._site_rows)
        gone = self.held - wanted
        if gone:
            self._unlock(conn, gone)
        share = math.ceil(len(wanted) / self.live_agents) if wanted else 0
        if len(self.held) > share:
            ranked = sorted(self.held, key=lambda s: _priority(self.name, s))
            self.releasing = set(ranked[share:])
            self.held -= self.releasing
        elif len(self.held) < share:
            taken = set(
                conn.execute(
                    text(
                        "select objid::int from pg_locks where locktype = 'advisory' "
                        "and classid = :k and objsubid = 2 and database = "
                        "(select oid from pg_database where datname = current_database())"
                    ),
                    {"k": SERIES},
                ).scalars()
            )
            free = sorted(
                wanted - taken - self.held - self.releasing,
                key=lambda s: _priority(self.name, s),
            )
            want = share - len(self.held)
            got: set[int] = set()
            for i in range(0, len(free), 256):
                if len(got) >= want:
                    break
                chunk = free[i : i + 256][: want - len(got)]
                got |= set(
                    conn.execute(
                        text(
                            "select id from unnest(cast(:ids as int[])) id "
                            "where pg_try_advisory_lock(:k, id)"
                        ),
                        {"ids": chunk, "k": SERIES},
                    ).scalars()
                )
            self.held |= got

    def _unlock(self, conn: Connection, ids: set[int]) -> None:
        conn.execute(
            text("select pg_advisory_unlock(:k, id) from unnest(cast(:ids as int[])) id"),
            {"ids": sorted(ids), "k": SERIES},
        )
        self.held -= ids

    def _lead(self, conn: Connection) -> None:
        if not self.leader:
            self.leader = bool(
                conn.execute(
                    text("select pg_try_advisory_lock(:k, 0)"), {"k": MAINTENANCE}
                ).scalar_one()
            )

    def _record_assignments(self, conn: Connection, owned: dict[int, SeriesRow]) -> None:
        ids = sorted(owned)
        conn.execute(
            text(
                "delete from agent_assignments where agent = :a and "
                "series_id <> all(cast(:ids as int[]))"
            ),
            {"a": self.name, "ids": ids},
        )
        conn.execute(
            text(
                "insert into agent_assignments (series_id, agent, site) "
                "select x.sid, :a, :s from unnest(cast(:ids as int[])) as x(sid) "
                "where exists (select 1 from series where series.id = x.sid) "
                "on conflict (series_id) do update set agent = excluded.agent, "
                "site = excluded.site, since = now() "
                "where agent_assignments.agent <> excluded.agent"
            ),
            {"a": self.name, "s": self.site, "ids": ids},
        )

    # -- end ----------------------------------------------------------------------
    def close(self, stats: dict[str, Any] | None = None) -> None:
        """Final heartbeat, give everything up (locks go with the session)."""
        conn = self._conn
        if conn is None or conn.closed:
            return
        try:
            if stats is not None:
                final = {**stats, "stopped": True, "series": 0}
                conn.execute(
                    _HEARTBEAT, {"st": json.dumps(final, default=str), "id": self.agent_id}
                )
            conn.execute(text("delete from agent_assignments where agent = :a"), {"a": self.name})
        except Exception:
            log.debug("final heartbeat failed", exc_info=True)
        finally:
            with contextlib.suppress(Exception):
                conn.close()
            self._conn = None
            self.held.clear()
            self.releasing.clear()
            self.leader = False
