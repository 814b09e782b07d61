"""The shared probe runner: deadline, total time, cleanup, failures -> samples.

``total_ns`` covers the call of the probe's ``run`` until it returned, raised or
was cut by the deadline (it excludes the bounded cleanup that follows a failure).

The deadline is an ``asyncio.timeout`` around the whole run. It is the only
thing that stops python-oracledb's thin ``connect_async`` on a listener that
accepts TCP and never answers (``tcp_connect_timeout`` covers only the TCP
handshake and ``call_timeout`` does not apply during logon). Cancelling the
connect task makes python-oracledb close its half-open socket (checked by
``tests/probes/test_runner.py``); connections a probe had already opened are
closed by the cleanups it registered with :meth:`ProbeContext.defer`, each
bounded by a short grace so a dead server cannot keep the runner past
``deadline + 5 %``.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from app.probes.base import Cleanup, Probe, ProbeContext
from app.probes.errors import classify, sanitise
from app.samples import ErrorClass, Sample, SampleStatus

# Cleanup after a failure gets this share of the deadline (at most MAX_GRACE_S).
GRACE_SHARE = 0.05
MAX_GRACE_S = 1.0


def _grace(deadline_s: float) -> float:
    return min(MAX_GRACE_S, deadline_s * GRACE_SHARE)


async def _bounded(coro_factories: list[Cleanup], budget_s: float) -> None:
    """Run cleanups one after another within ``budget_s`` seconds in total."""
    end = time.monotonic() + budget_s
    for factory in coro_factories:
        left = end - time.monotonic()
        if left <= 0:
            return
        try:
            async with asyncio.timeout(left):
                await factory()
        except Exception:
            continue  # the connection is being abandoned anyway


async def run_once(
    probe: Probe,
    *,
    scheduled_at: datetime | None = None,
    deadline_s: float | None = None,
    ctx: ProbeContext | None = None,
) -> Sample:
    """Run ``probe`` once under its deadline and return exactly one Sample."""
    spec = probe.spec
    deadline = spec.deadline_s if deadline_s is None else deadline_s
    ctx = ProbeContext() if ctx is None else ctx
    started_at = datetime.now(UTC)
    status = SampleStatus.OK
    error_class: ErrorClass | None = None
    error_code: str | None = None
    error_message: str | None = None
    error_phase: str | None = None
    t0 = time.perf_counter_ns()
    cm = asyncio.timeout(deadline)
    try:
        async with cm:
            await probe.run(ctx)
        total = time.perf_counter_ns() - t0
    except TimeoutError as exc:
        total = time.perf_counter_ns() - t0
        error_phase = ctx.where()
        if cm.expired():
            status, error_class, error_code = SampleStatus.TIMEOUT, ErrorClass.TIMEOUT, "TIMEOUT"
            error_message = f"deadline of {deadline:g} s exceeded during {error_phase}"
        else:  # a timeout the driver itself raised
            status = SampleStatus.ERROR
            found = classify(exc, probe.secrets())
            error_class, error_code, error_message = found.error_class, found.code, found.message
    except Exception as exc:
        total = time.perf_counter_ns() - t0
        status, error_phase = SampleStatus.ERROR, ctx.where()
        found = classify(exc, probe.secrets())
        error_class, error_code, error_message = found.error_class, found.code, found.message
    pending = ctx.pending_cleanups()
    if status is not SampleStatus.OK:
        await _bounded([*pending, probe.reset], _grace(deadline))
    elif pending:
        await _bounded(list(pending), _grace(deadline))
    r = ctx.result
    return Sample(
        series_id=spec.series_id,
        scheduled_at=scheduled_at or started_at,
        started_at=started_at,
        status=status,
        total_ns=total,
        logon_ns=r.logon_ns,
        ping_ns=r.ping_ns,
        query_ns=r.query_ns,
        logoff_ns=r.logoff_ns,
        commit_ns=r.commit_ns,
        acquire_ns=r.acquire_ns,
        round_trips=r.round_trips,
        logon_phases=r.logon_phases,
        error_class=error_class,
        error_code=error_code,
        error_phase=error_phase,
        error_message=sanitise(error_message, probe.secrets()) if error_message else None,
        sid=r.sid,
        serial=r.serial,
        instance=r.instance,
        service=r.service,
        server_type=r.server_type,
        agent=spec.agent,
        site=spec.site,
        extra=dict(r.extra),
    )
