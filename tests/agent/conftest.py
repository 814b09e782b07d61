"""Agent tests: a real PostgreSQL as the store AND as the probed target.

Helpers create targets/modes/series rows the way the web or YAML import would, and
build :class:`~app.config.Settings` for an agent with its own data directory.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.config import Settings
from app.demo.pgcluster import PgCluster
from tests.agent.procs import AgentProcs
from tests.fixtures.pg import temporary_cluster


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(migrated_engine: Engine) -> Engine:
    """A fresh store (database migrated to head) on the shared cluster."""
    return migrated_engine


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[AgentProcs]:
    procs = AgentProcs(tmp_path)
    try:
        yield procs
    finally:
        procs.stop_all()


@pytest.fixture
def own_cluster() -> Iterator[PgCluster]:
    """A PostgreSQL of this test only, so the test may stop and start it."""
    with temporary_cluster("connwatch-agent-pg-") as cluster:
        yield cluster


def make_settings(data_dir: Path, url: str, **kw: Any) -> Settings:
    # the tests' password references are env:CW_TEST_* (nothing resolves without a prefix)
    kw.setdefault("secret_env_prefix", "CW_TEST_")
    return Settings(
        database_url=url,
        data_dir=data_dir,
        secret_key=Fernet.generate_key().decode(),
        **kw,
    )


def add_target(
    conn: Connection,
    name: str,
    *,
    kind: str = "postgres",
    dsn: str,
    username: str = "postgres",
    password_ref: str | None = None,
    params: dict[str, Any] | None = None,
) -> int:
    import json

    return int(
        conn.execute(
            text(
                "insert into targets (name, kind, dsn, username, password_ref, params) "
                "values (:n, :k, :d, :u, :r, cast(:p as jsonb)) returning id"
            ),
            {
                "n": name,
                "k": kind,
                "d": dsn,
                "u": username,
                "r": password_ref,
                "p": json.dumps(params or {}),
            },
        ).scalar_one()
    )


def add_mode(
    conn: Connection,
    target_id: int,
    name: str,
    kind: str | None = None,
    *,
    transport: str = "tcp",
    params: dict[str, Any] | None = None,
) -> int:
    import json

    return int(
        conn.execute(
            text(
                "insert into modes (target_id, name, kind, transport, params) "
                "values (:t, :n, :k, :tr, cast(:p as jsonb)) returning id"
            ),
            {
                "t": target_id,
                "n": name,
                "k": kind or name,
                "tr": transport,
                "p": json.dumps(params or {}),
            },
        ).scalar_one()
    )


def add_series(
    conn: Connection,
    mode_id: int,
    probe: str = "connping",
    *,
    interval_ms: int = 1000,
    timeout_ms: int | None = None,
    site: str = "default",
    params: dict[str, Any] | None = None,
) -> int:
    import json

    return int(
        conn.execute(
            text(
                "insert into series (mode_id, probe, interval_ms, timeout_ms, site, params) "
                "values (:m, :p, :i, :t, :s, cast(:pa as jsonb)) returning id"
            ),
            {
                "m": mode_id,
                "p": probe,
                "i": interval_ms,
                "t": timeout_ms or min(interval_ms, 5000),
                "s": site,
                "pa": json.dumps(params or {}),
            },
        ).scalar_one()
    )


def pg_target_series(
    engine: Engine,
    cluster: PgCluster,
    dbname: str,
    count: int,
    *,
    interval_ms: int = 1000,
    probe: str = "connping",
    site: str = "default",
    name: str = "pg",
) -> list[int]:
    """One PostgreSQL target (the given cluster/database) with ``count`` series
    (one mode per series, as the unique key is (mode, probe, site))."""
    ids = []
    with engine.begin() as conn:
        tid = add_target(conn, name, dsn=f"127.0.0.1:{cluster.port}/{dbname}")
        for i in range(count):
            mid = add_mode(conn, tid, f"direct{i}", "direct")
            ids.append(add_series(conn, mid, probe, interval_ms=interval_ms, site=site))
    return ids


def samples_of(engine: Engine, series_ids: list[int]) -> list[Any]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                text(
                    "select series_id, scheduled_at, started_at, status, error_code, agent "
                    "from samples where series_id = any(:ids) order by series_id, scheduled_at"
                ),
                {"ids": series_ids},
            )
        )


def gaps(times: list[datetime], interval_ms: int) -> list[float]:
    """Spacing (in intervals) between consecutive scheduled instants that is not 1."""
    out = []
    for a, b in itertools.pairwise(times):
        step = (b - a).total_seconds() * 1000 / interval_ms
        if abs(step - 1) > 1e-6:
            out.append(step)
    return out


def run_agent(
    engine: Engine,
    settings: Settings,
    seconds: float,
    *,
    options: Any = None,
    during: Any = None,
) -> Any:
    """Run an in-process :class:`~app.agent.service.Agent` for ``seconds`` (or while
    ``during(agent)`` runs), stop it (flushing everything) and return it."""
    import asyncio

    from app.agent.service import Agent

    async def go() -> Agent:
        agent = Agent(engine, settings, options)
        await agent.start()
        try:
            if during is not None:
                await during(agent)
            else:
                await asyncio.sleep(seconds)
        finally:
            await agent.stop()
        return agent

    return asyncio.run(go())
