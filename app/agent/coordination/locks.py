"""The advisory lock keys agents hold, and the autocommit session that holds them.

Every lock is session-level and two-key (``pg_try_advisory_lock(key, id)``), so none
collides with the store's own one-key locks:

=================================  ==================================================
``(PRESENCE, agents.id)``          the agent (its main process) is alive
``(WORKER_BASE + i, agents.id)``   worker ``i`` of that agent is alive (i < MAX_WORKERS)
``(SERIES, series.id)``            whoever holds it runs that series (at most one)
``(MAINTENANCE, 0)``               whoever holds it runs the store maintenance
=================================  ==================================================

PostgreSQL drops a session's locks the moment the session ends (exit, crash, SIGKILL,
or ``pg_terminate_backend`` by a survivor), so a dead process stops counting at once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger(__name__)

PRESENCE = 727281
SERIES = 727282
MAINTENANCE = 727283
WORKER_BASE = 727300
MAX_WORKERS = 1000

# live workers of a site: their worker locks (an agent of an older version holds only its
# presence lock and is not counted; the series locks still keep it from double runs)
LIVE_WORKERS_SQL = text(
    "select count(*) from pg_locks l join agents a on a.id = l.objid::int "
    "where l.locktype = 'advisory' and l.granted and l.objsubid = 2 "
    "and l.classid between :wb and :wb + :mw - 1 and a.site = :site "
    "and l.database = (select oid from pg_database where datname = current_database())"
)
LIVE_AGENTS_SQL = text(
    "select count(*) from agents a join pg_locks l on l.locktype = 'advisory' "
    "and l.granted and l.classid = :k and l.objid = a.id and l.objsubid = 2 "
    "and l.database = (select oid from pg_database where datname = current_database()) "
    "where a.site = :site"
)


def live_workers(conn: Connection, site: str) -> int:
    return int(
        conn.execute(
            LIVE_WORKERS_SQL, {"wb": WORKER_BASE, "mw": MAX_WORKERS, "site": site}
        ).scalar_one()
    )


class LockSession:
    """One autocommit connection, reopened after a failure; ``on_connect`` runs on each
    new one (to take the locks that went with the old one)."""

    def __init__(self, engine: Engine, on_connect: Callable[[Connection], None]) -> None:
        self.engine = engine
        self.on_connect = on_connect
        self.conn: Connection | None = None
        self.backend_pid: int | None = None

    def get(self) -> Connection:
        if self.conn is not None and not self.conn.closed and not self.conn.invalidated:
            return self.conn
        self.drop()
        conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            self.backend_pid = conn.execute(text("select pg_backend_pid()")).scalar_one()
            self.on_connect(conn)
        except Exception:
            conn.close()
            raise
        self.conn = conn
        return conn

    def drop(self) -> None:
        """Forget the session (and with it every lock it held)."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.invalidate()
                self.conn.close()
        self.conn = None

    def close(self) -> None:
        """End the session for good: the connection is closed, not returned to the pool
        (a pooled connection would keep its session-level locks)."""
        self.drop()
