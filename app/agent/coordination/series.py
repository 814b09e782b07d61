"""Which series a worker runs: fair shares through advisory locks, hand-over in two ticks.

Every worker (one per process of an agent, see :mod:`app.agent.workers`; an agent
without worker processes has one, worker 0) keeps its own autocommit session and holds
on it ``(WORKER_BASE + index, agents.id)`` ("this worker is alive") and one
``(SERIES, series.id)`` lock per series it runs. Every ``poll_s`` (about a second)
:meth:`SeriesCoordinator.tick` re-reads the site's series when their fingerprint
changed, counts the live workers of the site (all agents together) and takes its fair share
``ceil(series / live workers)``: it gives up what it holds beyond the share (lowest
rendezvous priority first) and try-locks free series up to it. So four agents of two
workers each share a site's series eight ways, and a host with more cores carries more.

A series given up stops running at the end of one tick and is unlocked at the next, so
its new owner never overlaps the old one's last run. A dead worker's session ends, its
locks vanish, and the others take its series at their next tick (about 1-2 s: within
two intervals of any series of 1 s or more).

While the store is unreachable a worker keeps running what it had. When its session
comes back it re-takes its series locks; any another worker took meanwhile are dropped
(the store's sample key makes an overlap harmless).

``agent_assignments (series_id, agent, worker, site, since)`` mirrors who runs what, for
the dashboard (each worker writes its own rows; those of a dead one remain until another
takes the series over).
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.agent.coordination.locks import SERIES, WORKER_BASE, LockSession, live_workers
from app.agent.scheduling.pauses import PauseBook
from app.agent.scheduling.specs import SeriesRow, fingerprint, load_series

log = logging.getLogger(__name__)


def _priority(agent: str, series_id: int) -> int:
    """Rendezvous hashing: which free series a worker prefers (spreads the claims)."""
    return int.from_bytes(hashlib.blake2b(f"{agent}/{series_id}".encode(), digest_size=8).digest())


@dataclass
class TickResult:
    rows: dict[int, SeriesRow]  # the series this worker runs from now on
    live_workers: int
    changed: bool  # the set or the definitions changed since the last tick


@dataclass
class SeriesCoordinator:
    engine: Engine
    agent: str  # the agent's name (samples, assignments)
    agent_id: int
    site: str
    worker: int = 0
    held: set[int] = field(default_factory=set)  # series locked and run by this worker
    releasing: set[int] = field(default_factory=set)  # locked, no longer run, unlock next tick
    live: int = 1
    pauses: PauseBook | None = None  # maintenance windows pausing the series run here
    _session: LockSession | None = None
    _pause_error: bool = False
    _fingerprint: str | None = None
    _site_rows: dict[int, SeriesRow] = field(default_factory=dict)
    _last_owned: dict[int, SeriesRow] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """This worker's name for rendezvous hashing (distinct per worker)."""
        return self.agent if self.worker == 0 else f"{self.agent}/w{self.worker}"

    @property
    def session(self) -> LockSession:
        if self._session is None:
            self._session = LockSession(self.engine, self._connected)
        return self._session

    @property
    def backend_pid(self) -> int | None:
        return self.session.backend_pid

    def join(self) -> None:
        """Take this worker's presence lock (raises if the store is unreachable)."""
        self.session.get()

    def _connected(self, conn: Connection) -> None:
        conn.execute(
            text("select pg_advisory_lock(:k, :id)"),
            {"k": WORKER_BASE + self.worker, "id": self.agent_id},
        )
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
    def tick(self) -> TickResult:
        """Re-read the schedule if it changed, rebalance. Raises if the store cannot be
        reached (the caller keeps running what it had)."""
        try:
            return self._tick(self.session.get())
        except Exception:
            self.session.drop()
            raise

    def _tick(self, conn: Connection) -> TickResult:
        fp = fingerprint(conn, self.site)
        changed = False
        if fp != self._fingerprint:
            self._site_rows = load_series(conn, self.site)
            self._fingerprint = fp
            changed = True
        self.live = max(1, live_workers(conn, self.site))
        self._rebalance(conn)
        owned = {sid: self._site_rows[sid] for sid in sorted(self.held)}
        if owned != self._last_owned:
            changed = True
            self._record_assignments(conn, owned)
            self._last_owned = owned
        if self.pauses is not None:
            try:
                self.pauses.refresh(conn, set(owned))
                self._pause_error = False
            except Exception:  # unreadable windows: keep the spans known so far
                if not self._pause_error:
                    log.warning("cannot read the maintenance windows", exc_info=True)
                self._pause_error = True
        return TickResult(owned, self.live, changed)

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
        share = math.ceil(len(wanted) / self.live) if wanted else 0
        if len(self.held) > share:
            ranked = sorted(self.held, key=lambda s: _priority(self.key, s))
            self.releasing = set(ranked[share:])
            self.held -= self.releasing
        elif len(self.held) < share:
            self.held |= self._claim(conn, wanted, share - len(self.held))

    def _claim(self, conn: Connection, wanted: set[int], want: int) -> set[int]:
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
            key=lambda s: _priority(self.key, s),
        )
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
        return got

    def _unlock(self, conn: Connection, ids: set[int]) -> None:
        conn.execute(
            text("select pg_advisory_unlock(:k, id) from unnest(cast(:ids as int[])) id"),
            {"ids": sorted(ids), "k": SERIES},
        )
        self.held -= ids

    def _record_assignments(self, conn: Connection, owned: dict[int, SeriesRow]) -> None:
        ids = sorted(owned)
        conn.execute(
            text(
                "delete from agent_assignments where agent = :a and worker = :w and "
                "series_id <> all(cast(:ids as int[]))"
            ),
            {"a": self.agent, "w": self.worker, "ids": ids},
        )
        conn.execute(
            text(
                "insert into agent_assignments (series_id, agent, worker, site) "
                "select x.sid, :a, :w, :s from unnest(cast(:ids as int[])) as x(sid) "
                "where exists (select 1 from series where series.id = x.sid) "
                "on conflict (series_id) do update set agent = excluded.agent, "
                "worker = excluded.worker, site = excluded.site, since = now() "
                "where (agent_assignments.agent, agent_assignments.worker) <> "
                "(excluded.agent, excluded.worker)"
            ),
            {"a": self.agent, "w": self.worker, "s": self.site, "ids": ids},
        )

    # -- end ----------------------------------------------------------------------
    def close(self) -> None:
        """Give everything up (the locks go with the session)."""
        conn = self.session.conn
        try:
            if conn is not None and not conn.closed:
                conn.execute(
                    text("delete from agent_assignments where agent = :a and worker = :w"),
                    {"a": self.agent, "w": self.worker},
                )
        except Exception:
            log.debug("clearing the assignments failed", exc_info=True)
        finally:
            self.session.close()
            self.held.clear()
            self.releasing.clear()
