"""The shared probe runner: deadline, total time, cleanup, failures -> samples.

``total_ns`` covers the call of the probe's ``run`` until it returned, raised or
was cut by the deadline (it excludes the bounded cleanup that follows a failure).

The probe runs in its own task and the runner waits for it at most the
deadline. That is the only thing that stops python-oracledb's thin
``connect_async`` on a listener that accepts TCP and never answers
(``tcp_connect_timeout`` covers only the TCP handshake and ``call_timeout`` does
not apply during logon). At the deadline the task is cancelled, repeatedly (a
cancelled python-oracledb call first sends a BREAK and waits for the server's
RESET, which a hung server never sends; the next cancellation ends that wait).
Cancelling a connect makes python-oracledb close its half-open socket (checked
by ``tests/probes/test_runner.py``); connections a probe had already opened are
closed by the cleanups it registered with :meth:`ProbeContext.defer` and by its
``reset``, all within a grace of 5 % of the deadline (at most 1 s), so a dead
server cannot keep the runner past ``deadline + 5 %``. A task that outlives its
grace is kept referenced (``_ABANDONED``) until it ends, never awaited.
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
# Cancel a stuck task at least this often, even when the grace is used up (each
# round lets the task run once; python-oracledb needs two to give up a call).
MIN_CANCEL_ROUNDS = 3
RECANCEL_S = 0.1


def _grace(deadline_s: float) -> float:
    return min(MAX_GRACE_S, deadline_s * GRACE_SHARE)


# Tasks that ignored cancellation past their grace (see _finish); kept referenced so they
# are neither garbage-collected mid-flight nor reported as "never retrieved".
_ABANDONED: set[asyncio.Task[None]] = set()


def _forget(task: asyncio.Task[None]) -> None:
    _ABANDONED.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: an abandoned run's late error is of no interest


def _recancel(task: asyncio.Task[None]) -> None:
    """Keep cancelling an abandoned task in the background until it ends, so that
    nothing (asyncio.run's shutdown included) ever waits on it forever."""
    if task.done():
        return
    task.cancel()
    asyncio.get_running_loop().call_later(RECANCEL_S, _recancel, task)


async def _finish(task: asyncio.Task[None], budget_s: float) -> bool:
    """Cancel ``task`` and keep cancelling it until it ends or ``budget_s`` runs out.

    One cancellation is not always enough: python-oracledb answers a cancelled call
    by sending a BREAK and awaiting the server's RESET, which a hung server never
    sends; a second cancellation interrupts that wait. Returns True if the task ended.
    """
    end = time.monotonic() + budget_s
    rounds = 0
    while not task.done():
        left = end - time.monotonic()
        if left <= 0 and rounds >= MIN_CANCEL_ROUNDS:
            _ABANDONED.add(task)
            task.add_done_callback(_forget)
            _recancel(task)
            return False
        task.cancel()
        rounds += 1
        await asyncio.wait({task}, timeout=min(max(left, 0.001), 0.01))
    if not task.cancelled():
        task.exception()
    return True


async def _bounded(cleanups: list[Cleanup], budget_s: float) -> None:
    """Run cleanups one after another within ``budget_s`` seconds in total."""
    end = time.monotonic() + budget_s
    for cleanup in cleanups:
        left = end - time.monotonic()
        if left <= 0:
            return
        task: asyncio.Task[None] = asyncio.ensure_future(cleanup())
        await asyncio.wait({task}, timeout=left / 2)
        await _finish(task, max(0.0, end - time.monotonic()))


async def run_once(
    probe: Probe,
    *,
    scheduled_at: datetime | None = None,
    ctx: ProbeContext | None = None,
) -> Sample:
    """Run ``probe`` once under its deadline and return exactly one Sample."""
    spec = probe.spec
    deadline = spec.deadline_s
    ctx = ProbeContext() if ctx is None else ctx
    started_at = datetime.now(UTC)
    status = SampleStatus.OK
    error_class: ErrorClass | None = None
    error_code: str | None = None
    error_message: str | None = None
    error_phase: str | None = None
    t0 = time.perf_counter_ns()
    task: asyncio.Task[None] = asyncio.ensure_future(probe.run(ctx))
    try:
        await asyncio.wait({task}, timeout=deadline)
    except asyncio.CancelledError:  # our caller gives up: take the probe run down with us
        await _finish(task, _grace(deadline))
        raise
    total = time.perf_counter_ns() - t0
    if not task.done():
        error_phase = ctx.where()
        status, error_class, error_code = SampleStatus.TIMEOUT, ErrorClass.TIMEOUT, "TIMEOUT"
        error_message = f"deadline of {deadline:g} s exceeded during {error_phase}"
        await _finish(task, _grace(deadline) / 2)
    elif task.cancelled():
        raise asyncio.CancelledError()
    elif (exc := task.exception()) is not None:
        if not isinstance(exc, Exception):
            raise exc
        status, error_phase = SampleStatus.ERROR, ctx.where()
        found = classify(exc, probe.secrets(), error_phase)
        error_class, error_code, error_message = found.error_class, found.code, found.message
    pending = ctx.pending_cleanups()
    if status is SampleStatus.TIMEOUT:
        await _bounded([*pending, probe.reset], _grace(deadline) / 2)
    elif status is not SampleStatus.OK:
        await _bounded([*pending, probe.reset], _grace(deadline))
    elif pending:
        await _bounded(pending, _grace(deadline))
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
