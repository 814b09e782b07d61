"""Endpoints for the probe tests, built from the real servers the fixtures start."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.demo.pgcluster import PgCluster
from app.drivers import eventloop
from app.probes.base import Probe
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import OracleEndpoint, PgRoute, PostgresEndpoint, ProbeSpec
from app.samples import Sample
from tests.fixtures.oraclesim import OracleSimHandle
from tests.fixtures.pgbouncer import PgBouncers

PgEndpoints = dict[str, PostgresEndpoint]


@pytest.fixture
def pg_endpoints(pg_cluster: PgCluster, pg_database: str) -> PgEndpoints:
    """Direct TCP and direct unix-socket endpoints of a fresh database."""
    user = pg_cluster.user
    return {
        "tcp": PostgresEndpoint("127.0.0.1", pg_cluster.port, pg_database, user),
        "unix": PostgresEndpoint(str(pg_cluster.socket_dir), pg_cluster.port, pg_database, user),
    }


@pytest.fixture
def all_pg_endpoints(
    pg_endpoints: PgEndpoints, pgbouncer: PgBouncers, pg_cluster: PgCluster, pg_database: str
) -> PgEndpoints:
    """Direct TCP, unix socket, and pgbouncer in session and transaction mode."""
    user = pg_cluster.user
    out = dict(pg_endpoints)
    out["bouncer_session"] = PostgresEndpoint(
        "127.0.0.1",
        pgbouncer.port("session"),
        pg_database,
        user,
        route=PgRoute.PGBOUNCER_SESSION,
    )
    out["bouncer_transaction"] = PostgresEndpoint(
        "127.0.0.1",
        pgbouncer.port("transaction"),
        pg_database,
        user,
        route=PgRoute.PGBOUNCER_TRANSACTION,
    )
    return out


def run_probe(spec: ProbeSpec, runs: int = 1) -> list[Sample]:
    """Create the probe, run it ``runs`` times in one event loop, close it."""
    return run_with(lambda: create_probe(spec), runs)


def run_with(probe_factory: Callable[[], Probe], runs: int = 1) -> list[Sample]:
    """As :func:`run_probe`, for a probe built by ``probe_factory``; on the event loop the
    agent runs probes on (app.drivers.eventloop)."""

    async def go() -> list[Sample]:
        probe = probe_factory()
        try:
            return [await run_once(probe) for _ in range(runs)]
        finally:
            await probe.close()

    return eventloop.run(go())


MODES = ("dedicated", "shared", "pooled")


def oracle_endpoint(
    sim: OracleSimHandle, mode: str = "dedicated", service: str = "FREEPDB1", **kw: object
) -> OracleEndpoint:
    """scott/tiger on the test simulator in one mode (DRCP gets a connection class)."""
    dsn = sim.dsn(service, mode)
    if mode == "pooled":
        kw.setdefault("cclass", "CONNWATCH")
    return OracleEndpoint(dsn, "scott", "tiger", **kw)  # type: ignore[arg-type]
