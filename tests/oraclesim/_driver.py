"""Helpers for the contract tests: the unmodified python-oracledb thin driver."""

from __future__ import annotations

from typing import Any, Protocol

import oracledb


class Target(Protocol):
    host: str
    port: int

    def dsn(self, service: str = ..., mode: str = ...) -> str: ...


def connect(
    sim: Target,
    service: str = "FREEPDB1",
    mode: str = "dedicated",
    user: str = "scott",
    password: str = "tiger",
    **kw: Any,
) -> oracledb.Connection:
    return oracledb.connect(user=user, password=password, dsn=sim.dsn(service, mode), **kw)


async def connect_async(
    sim: Target,
    service: str = "FREEPDB1",
    mode: str = "dedicated",
    user: str = "scott",
    password: str = "tiger",
    **kw: Any,
) -> oracledb.AsyncConnection:
    return await oracledb.connect_async(
        user=user, password=password, dsn=sim.dsn(service, mode), **kw
    )


def make_pool(
    sim: Target,
    mode: str = "pooled",
    user: str = "scott",
    password: str = "tiger",
    **kw: Any,
) -> oracledb.ConnectionPool:
    """A python-oracledb pool as scott/tiger on FREEPDB1 (``min``/``max``/... in ``kw``)."""
    return oracledb.create_pool(user=user, password=password, dsn=sim.dsn(mode=mode), **kw)


def make_pool_async(
    sim: Target,
    mode: str = "pooled",
    user: str = "scott",
    password: str = "tiger",
    **kw: Any,
) -> oracledb.AsyncConnectionPool:
    """The asyncio counterpart of :func:`make_pool`."""
    return oracledb.create_pool_async(user=user, password=password, dsn=sim.dsn(mode=mode), **kw)


def sysstat(sim: Any, name: str) -> Any:
    """VALUE of the V$SYSSTAT row ``name`` as the simulator reports it now."""
    return next(r["VALUE"] for r in sim.view("v$sysstat") if r["NAME"] == name)


def code(exc: BaseException) -> str:
    """The full_code (ORA-nnnnn / DPY-nnnn) of a python-oracledb exception."""
    return str(exc.args[0].full_code)


def cause_code(exc: BaseException) -> str:
    """full_code of the wrapped error of a DPY-6005 'cannot connect'."""
    assert exc.__cause__ is not None
    return code(exc.__cause__)


def eventually(check: Any, timeout: float = 3.0) -> Any:
    """Poll check() until it returns a truthy value: the server works asynchronously
    after one-way messages (DRCP release, EOF)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.005)
