"""The agent's own row: registration, presence, heartbeat, dead peers, maintenance.

One per agent, whatever its number of worker processes (:mod:`app.agent.workers`):
the agent's main process registers its ``agents`` row (``name`` unique), holds the
presence lock ``(PRESENCE, agents.id)`` on its own autocommit session, and every
``poll_s`` (about a second) :meth:`Registry.heartbeat` writes ``heartbeat_at`` and the
``stats`` document (with one entry per worker), tries the maintenance lock, counts the
live agents of its site, and cuts off peers that hold their locks but went silent: an
agent whose heartbeat is older than ``ZOMBIE_S`` (a hung or partitioned host) has the
sessions of its presence and worker locks terminated (``pg_terminate_backend``; needs
the same role or ``pg_signal_backend``), so its series are free for the living.

Which series a worker runs is :mod:`app.agent.coordination.series`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app import __version__
from app.agent.coordination.locks import (
    LIVE_AGENTS_SQL,
    MAINTENANCE,
    MAX_WORKERS,
    PRESENCE,
    WORKER_BASE,
    LockSession,
)

log = logging.getLogger(__name__)

ZOMBIE_S = 30.0
_HEARTBEAT = text(
    "update agents set heartbeat_at = now(), stats = cast(:st as jsonb) where id = :id"
)


def default_agent_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass
class Beat:
    leader: bool  # holds the maintenance lock
    live_agents: int


class Registry:
    def __init__(self, engine: Engine, name: str, site: str) -> None:
        self.name = name
        self.site = site
        self.agent_id: int | None = None
        self.leader = False
        self.live_agents = 1
        self.session = LockSession(engine, self._register)

    @property
    def backend_pid(self) -> int | None:
        return self.session.backend_pid

    def register(self) -> int:
        """Register (or re-register) the row and take the presence lock; the agent's id."""
        self.session.get()
        assert self.agent_id is not None
        return self.agent_id

    def _register(self, conn: Connection) -> None:
        self.leader = False  # the maintenance lock went with the old session
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
        conn.execute(text("select pg_advisory_lock(:k, :id)"), {"k": PRESENCE, "id": self.agent_id})

    def heartbeat(self, stats: dict[str, Any]) -> Beat:
        """Write the stats, lead maintenance if free, cut off silent peers. Raises if the
        store cannot be reached (the caller keeps going and tries again)."""
        try:
            conn = self.session.get()
            stats = {
                **stats,
                "backend_pid": self.backend_pid,
                "live_agents": self.live_agents,
                "maintenance": self.leader,
            }
            conn.execute(_HEARTBEAT, {"st": json.dumps(stats, default=str), "id": self.agent_id})
            self._terminate_zombies(conn)
            self.live_agents = max(
                1,
                int(conn.execute(LIVE_AGENTS_SQL, {"k": PRESENCE, "site": self.site}).scalar_one()),
            )
            if not self.leader:
                self.leader = bool(
                    conn.execute(
                        text("select pg_try_advisory_lock(:k, 0)"), {"k": MAINTENANCE}
                    ).scalar_one()
                )
            return Beat(self.leader, self.live_agents)
        except Exception:
            self.session.drop()
            self.leader = False
            raise

    def _terminate_zombies(self, conn: Connection) -> None:
        rows = conn.execute(
            text(
                "select a.name, l.pid from agents a join pg_locks l on l.locktype = 'advisory' "
                "and l.granted and l.objid = a.id and l.objsubid = 2 "
                "and (l.classid = :k or l.classid between :wb and :wb + :mw - 1) "
                "where a.site = :site and a.id <> :me "
                "and a.heartbeat_at < now() - make_interval(secs => :z)"
            ),
            {
                "k": PRESENCE,
                "wb": WORKER_BASE,
                "mw": MAX_WORKERS,
                "site": self.site,
                "me": self.agent_id,
                "z": ZOMBIE_S,
            },
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

    def close(self, stats: dict[str, Any] | None = None) -> None:
        """Final heartbeat (``stopped``), then end the session and its locks."""
        conn = self.session.conn
        if conn is None or conn.closed:
            return
        try:
            if stats is not None:
                final = {**stats, "stopped": True, "series": 0}
                conn.execute(
                    _HEARTBEAT, {"st": json.dumps(final, default=str), "id": self.agent_id}
                )
        except Exception:
            log.debug("final heartbeat failed", exc_info=True)
        finally:
            self.session.close()
            self.leader = False
