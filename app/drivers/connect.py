"""One entry point for the probes: log on to any endpoint and get a Session."""

from __future__ import annotations

from app.drivers import oracle, postgres
from app.drivers.base import RoundTripLog, Session
from app.probes.spec import Endpoint, OracleEndpoint


async def open_session(
    ep: Endpoint, trips: RoundTripLog | None = None, *, autocommit: bool = True
) -> Session:
    """Log on. ``trips`` (Oracle thin only) records every round trip from now on."""
    if isinstance(ep, OracleEndpoint):
        return await oracle.connect(ep, trips)
    return await postgres.connect(ep, autocommit=autocommit)
