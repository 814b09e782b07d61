"""The probe interface: what every probe kind implements, and what it reports.

A probe only measures its own phases. The shared runner
(:mod:`app.probes.runner`) owns the deadline, the total time, cleanup of
abandoned connections and the conversion of every failure into a
:class:`~app.samples.Sample`; see there.

Timing rules (all probes): every phase is timed with ``time.perf_counter_ns()``
immediately around the driver call it names, so a phase covers the driver's
client work plus the round trip(s) it makes, and nothing else.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from app.drivers.base import RoundTripLog, round_trip_labels
from app.probes.spec import ProbeSpec
from app.targets.params import ParamError, probe_params

Cleanup = Callable[[], Awaitable[None]]


class ProbeConfigError(ValueError):
    """A probe was given parameters it cannot run with (raised before measuring)."""


@dataclass(slots=True)
class ProbeResult:
    """What a probe measured in one run; the runner turns it into a Sample."""

    logon_ns: int | None = None
    ping_ns: int | None = None
    query_ns: int | None = None
    logoff_ns: int | None = None
    commit_ns: int | None = None
    acquire_ns: int | None = None
    round_trips: int | None = None
    logon_phases: dict[str, int] | None = None
    sid: int | None = None
    serial: int | None = None
    instance: str | None = None
    service: str | None = None
    server_type: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ProbeContext:
    """Per-run scratch space: the result, the phase in progress and pending cleanups.

    ``phase`` always names what the probe is doing now, so when the runner's
    deadline cuts the run it can say which phase hung. ``defer`` registers an
    async cleanup (closing a connection) that the runner runs, bounded in time,
    if the run does not reach its own ``release``.
    """

    def __init__(self) -> None:
        self.result = ProbeResult()
        self.phase = "start"
        # Set by a probe while it logs on (Oracle thin): names the round trip in flight.
        self.trips: RoundTripLog | None = None
        # perf_counter_ns() at the start of each timed phase (for the commands' timestamps)
        self.marks: dict[str, int] = {}
        self._cleanups: dict[int, Cleanup] = {}
        self._next = 0

    @contextmanager
    def timed(self, phase: str, field_name: str | None = None) -> Iterator[None]:
        """Time the body as ``phase``; store it in ``result.<field_name>`` if given."""
        self.phase = phase
        start = time.perf_counter_ns()
        self.marks[phase] = start
        yield
        elapsed = time.perf_counter_ns() - start
        if field_name is not None:
            setattr(self.result, field_name, elapsed)

    def where(self) -> str:
        """The phase in progress, refined to the logon round trip when known
        (``logon:tcp_connect``, ``logon:connect``, ``logon:auth2``, ...)."""
        if self.phase != "logon" or self.trips is None:
            return self.phase
        events = self.trips.events
        tls = self.trips.tls
        if tls and (not events or tls[-1] > events[-1][1]):
            return "logon:tls_handshake"
        if not events:
            return "logon:tcp_connect"
        return "logon:" + round_trip_labels([name for name, _ in events])[-1]

    def defer(self, cleanup: Cleanup) -> int:
        """Register a cleanup; returns a token for :meth:`release`."""
        self._next += 1
        self._cleanups[self._next] = cleanup
        return self._next

    def release(self, token: int) -> None:
        """The probe cleaned up itself: forget the registered cleanup."""
        self._cleanups.pop(token, None)

    def pending_cleanups(self) -> list[Cleanup]:
        out = list(self._cleanups.values())
        self._cleanups.clear()
        return out


class Probe(ABC):
    """One probe kind. One instance serves one series and may keep state across runs
    (sessionping keeps its connection, poolacquire its pool)."""

    name: ClassVar[str]

    def __init__(self, spec: ProbeSpec) -> None:
        self.spec = spec

    @abstractmethod
    async def run(self, ctx: ProbeContext) -> None:
        """Measure once, filling ``ctx.result``; raise on failure."""

    async def reset(self) -> None:  # noqa: B027 - optional hook, stateless probes keep nothing
        """Drop any state kept across runs (called after a failed or timed-out run).

        Must not wait on the network for long: the runner bounds it in time."""

    async def close(self) -> None:
        """Release everything (end of the series or of the command)."""
        await self.reset()

    def secrets(self) -> list[str]:
        """Strings that must never appear in an error message (passwords)."""
        ep = self.spec.endpoint
        out = [ep.password] if ep.password else []
        wallet_pw = getattr(ep, "wallet_password", None)
        if wallet_pw:
            out.append(wallet_pw)
        return out


def checked_params(probe: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` of a ``probe`` checked against :mod:`app.targets.params` (defaults filled
    in); :class:`ProbeConfigError` naming the parameter if one is wrong."""
    try:
        return probe_params(probe, params)
    except ParamError as exc:
        raise ProbeConfigError(str(exc)) from None
