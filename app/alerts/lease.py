"""The evaluator's lease: exactly one process of all evaluates and delivers.

Every ``serve``, ``web`` and ``agent`` process runs an alert service that tries to take the
lease each cycle; the holder renews it (``expires_at = now() + ttl``), the others wait
until it expires (the holder died, hung, or lost the store) and then one of them takes it
over with ``epoch + 1``. The epoch is a fencing token: every write of an evaluation runs
in a transaction that first locks the lease row and checks holder and epoch
(:meth:`Lease.fence`), so a process that lost the lease (a long GC pause, a network
partition) can never write a transition or queue a notification after its successor
started. A lease rather than an advisory lock: it survives pgbouncer in transaction
mode and needs no session kept open.
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

EVALUATOR = "evaluator"


class LeaseLost(RuntimeError):
    """This process no longer holds the lease: its evaluation is thrown away."""


class Lease:
    def __init__(self, engine: Engine, ttl_s: float, *, name: str = EVALUATOR) -> None:
        self.engine = engine
        self.ttl_s = ttl_s
        self.name = name
        self.holder = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.epoch: int | None = None

    def acquire(self) -> bool:
        """Take or renew the lease; True while this process holds it."""
        with self.engine.begin() as conn:
            epoch = conn.execute(
                text(
                    "insert into alert_lease as l (name, holder, epoch, acquired_at, renewed_at, "
                    "expires_at) values (:n, :me, 1, now(), now(), "
                    "now() + make_interval(secs => :ttl)) "
                    "on conflict (name) do update set holder = excluded.holder, "
                    "epoch = case when l.holder = excluded.holder and l.epoch = :mine "
                    "then l.epoch else l.epoch + 1 end, "
                    "acquired_at = case when l.holder = excluded.holder and l.epoch = :mine "
                    "then l.acquired_at else now() end, "
                    "renewed_at = now(), expires_at = excluded.expires_at "
                    "where l.holder = excluded.holder or l.expires_at < now() returning l.epoch"
                ),
                {"n": self.name, "me": self.holder, "ttl": self.ttl_s, "mine": self.epoch or 0},
            ).scalar_one_or_none()
        self.epoch = None if epoch is None else int(epoch)
        return self.epoch is not None

    def fence(self, conn: Connection) -> None:
        """Inside a write transaction: lock the lease row, raise :class:`LeaseLost` unless
        this process still holds it (same holder, same epoch, not expired)."""
        ok = conn.execute(
            text(
                "select 1 from alert_lease where name = :n and holder = :me and epoch = :e "
                "and expires_at > now() for update"
            ),
            {"n": self.name, "me": self.holder, "e": self.epoch or -1},
        ).first()
        if ok is None:
            self.epoch = None
            raise LeaseLost(f"lease {self.name!r} is no longer held by {self.holder}")

    def release(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                text("delete from alert_lease where name = :n and holder = :me"),
                {"n": self.name, "me": self.holder},
            )
        self.epoch = None


def lease_holder(conn: Connection, name: str = EVALUATOR) -> tuple[str, int, datetime] | None:
    """(holder, epoch, expires_at) of the lease, for pages and /metrics."""
    row = conn.execute(
        text("select holder, epoch, expires_at from alert_lease where name = :n"), {"n": name}
    ).first()
    return None if row is None else (str(row[0]), int(row[1]), row[2])
