"""The timed logon every probe kind shares.

``logon_ns`` runs from just before the driver's connect call until it returned a
usable session. For Oracle thin it is split per round trip into
``logon_phases`` (see :func:`app.drivers.base.logon_phases`) and
``round_trips`` is the number of Oracle Net round trips the logon made (the TCP
handshake is not a round trip here; it is the ``tcp_connect`` phase).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import oracledb

from app.drivers.base import RoundTripLog, Session, logon_phases
from app.drivers.connect import open_session
from app.drivers.eventloop import is_redirect_safe
from app.probes.base import Probe, ProbeContext
from app.probes.errors import ClassifiedException, probe_side, sanitise
from app.probes.spec import Endpoint, OracleEndpoint, ProbeSpec

REDIRECT_RACE_NOTE = (
    " [probe-side: python-oracledb's asyncio listener-REDIRECT race, not the dispatcher; "
    "this event loop is not connwatch's redirect-safe one (docs/probes.md)]"
)


def redirect_race(exc: BaseException, trips: RoundTripLog | None) -> ClassifiedException | None:
    """The probe-side error for a logon python-oracledb's REDIRECT race failed, or None.

    The race (app/drivers/eventloop.py) fails a redirected logon with DPY-4011 "closed
    the connection" while the dispatcher's connection is healthy. On connwatch's own
    loops it cannot happen, so there a DPY-4011 is the target's. On any other loop a
    DPY-4011 after a REDIRECT (a second CONNECT round trip) cannot be told apart from
    the race and is recorded as probe-side (``PROBE-DPY-4011``), never as the target's.
    """
    if trips is None or not isinstance(exc, oracledb.Error) or is_redirect_safe():
        return None
    if sum(1 for name, _ in trips.events if name == "connect") < 2 or "DPY-4011" not in str(exc):
        return None
    return ClassifiedException(probe_side("DPY-4011", sanitise(str(exc)) + REDIRECT_RACE_NOTE))


async def open_measured(
    ep: Endpoint, trips: RoundTripLog | None, *, autocommit: bool = True
) -> Session:
    """:func:`app.drivers.connect.open_session`, with python-oracledb's REDIRECT race
    reported as the probe-side error it is (:func:`redirect_race`)."""
    try:
        return await open_session(ep, trips, autocommit=autocommit)
    except oracledb.Error as exc:
        race = redirect_race(exc, trips)
        if race is not None:
            raise race from exc
        raise


@dataclass(slots=True)
class Logon:
    session: Session
    trips: RoundTripLog | None
    cleanup_token: int


async def timed_logon(ctx: ProbeContext, ep: Endpoint, *, autocommit: bool = True) -> Logon:
    """Log on, timing it into ``ctx.result``; registers the session's close as cleanup."""
    trips = RoundTripLog() if isinstance(ep, OracleEndpoint) and not ep.thick_lib_dir else None
    ctx.trips = trips
    ctx.phase = "logon"
    if isinstance(ep, OracleEndpoint) and ep.instance_name:
        # a mode pinned to one RAC instance: its failures are that instance's
        ctx.result.instance = ep.instance_name.upper()
    start = time.perf_counter_ns()
    session = await open_measured(ep, trips, autocommit=autocommit)
    end = time.perf_counter_ns()
    token = ctx.defer(session.close)
    r = ctx.result
    r.logon_ns = end - start
    if trips is not None:
        r.round_trips = trips.count
        r.logon_phases = logon_phases(start, end, trips.events, trips.tls)
    ctx.trips = None
    return Logon(session, trips, token)


async def record_info(ctx: ProbeContext, session: Session) -> None:
    """The untimed identity query (sid, serial, instance, service, server type)."""
    ctx.phase = "info"
    info = await session.info()
    r = ctx.result
    r.sid, r.serial, r.instance = info.sid, info.serial, info.instance
    r.service, r.server_type = info.service, info.server_type
    if info.instance_number is not None:
        r.extra["instance_number"] = info.instance_number


async def timed_logoff(ctx: ProbeContext, logon: Logon) -> None:
    with ctx.timed("logoff", "logoff_ns"):
        await logon.session.close()
    ctx.release(logon.cleanup_token)


class KeptLogon(Probe):
    """A probe that keeps one session across runs (sessionping, commit).

    The first run, or the first after a failure, logs on (timed) and records the
    session identity; ``extra["reconnected"]`` is true when that logon replaces a
    session lost to an error or timeout. ``reset`` drops the session; ``close``
    drops it without counting it as lost."""

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        self._logon: Logon | None = None
        self._lost = False
        self._identity: tuple[Any, ...] | None = None

    async def _log_on(self, ctx: ProbeContext, *, autocommit: bool = True) -> Session:
        logon = await timed_logon(ctx, self.spec.endpoint, autocommit=autocommit)
        ctx.release(logon.cleanup_token)  # kept across runs; reset() closes it
        self._logon = logon
        ctx.result.extra["reconnected"] = self._lost
        await record_info(ctx, logon.session)
        r = ctx.result
        number = r.extra.get("instance_number")
        self._identity = (r.sid, r.serial, r.instance, r.service, r.server_type, number)
        return logon.session

    def _repeat_identity(self, ctx: ProbeContext) -> None:
        """A run on the kept session: its identity (sid, instance, ...) on this sample too,
        so a failure of the session is attributed to the instance it was on."""
        if self._identity is None:
            return
        r = ctx.result
        r.sid, r.serial, r.instance, r.service, r.server_type, number = self._identity
        if number is not None:
            r.extra["instance_number"] = number

    async def reset(self) -> None:
        self._identity = None
        logon, self._logon = self._logon, None
        if logon is not None:
            self._lost = True
            await logon.session.close()

    async def close(self) -> None:
        self._lost = False
        logon, self._logon = self._logon, None
        if logon is not None:
            await logon.session.close()
