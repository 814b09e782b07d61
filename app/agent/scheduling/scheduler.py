"""APScheduler jobs for the cadence, one per phase slot; exact instants; skips as samples.

APScheduler 3.11 is the scheduler of record, but one job per series cost about 13 % of
the agent's CPU at 1,000 runs a second (a job-store update, trigger arithmetic and a
timer re-arm per run). So the series of one interval are grouped by phase into slots
of ``SLOT_MS`` (50 ms): one ``IntervalTrigger`` job per (interval, slot), whose start
date lies on the slot's grid (:mod:`app.agent.scheduling.phase`), ``coalesce=False``. A small
executor (:class:`RunTimeExecutor`) hands every due instant of the slot to the job,
even after the loop was blocked; the job then arms one event-loop timer per member
series at the series' own instant (slot instant + the series' offset within the slot),
so every series still runs on its own deterministic phase. At its instant a series:

0. records a SKIPPED sample ``PAUSED`` if a maintenance window pausing its probes is
   open at that instant (:mod:`app.agent.scheduling.pauses`; decided when the slot
   fires, no timer armed), or ``OVERRUN`` if its previous run is still in flight (at
   most one run per series is ever in flight), else starts the run as its own task, which:

1. records a SKIPPED sample ``LATE`` if it starts past its grace (half an interval,
   at most ``max_grace_s``);
2. waits for a run slot and, if it will log on, for logon tokens, but only until
   the end of its grace; otherwise it records a SKIPPED sample (``BUSY`` /
   ``RATE_LIMIT``);
3. builds the probe on first use (password resolved now; a bad series gives an
   ERROR sample with class PROBE, code ``PROBE-CONFIG``: a probe-side error), and runs
   it through the shared runner, which stamps ``started_at`` and applies the series' timeout;
4. hands the sample to the writer.

So every instant of every series this agent owns yields exactly one sample.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from app.agent.scheduling.limits import Limiter
from app.agent.scheduling.overload import LoopMonitor, OverloadControl, initial_credit
from app.agent.scheduling.pauses import Pause, PauseBook
from app.agent.scheduling.phase import (
    from_ms,
    grace_s,
    grid_at_or_before_ms,
    phase_offset_ms,
    to_ms,
)
from app.agent.scheduling.specs import SeriesRow, SpecError
from app.agent.stats import AgentStats
from app.probes.base import Probe, ProbeConfigError
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import ProbeSpec
from app.samples import ErrorClass, Sample, SampleStatus

log = logging.getLogger(__name__)

# Probe kinds that log on at every run; the others only on their first run and
# after a failed one (the runner resets them then).
LOGON_EVERY_RUN = frozenset({"connping"})
CLOSE_TIMEOUT_S = 2.0
MAX_CREDIT = 2.0  # runs owed to a series whose admitted runs were too late to start
OWED_AFTER = 3  # admitted runs skipped as too late in a row before one is owed back
SLOT_MS = 50  # series of one interval whose phases fall in one slot share an APScheduler job

SpecBuilder = Callable[[SeriesRow], ProbeSpec]


def _aps_id(key: SlotKey) -> str:
    return f"slot-{key[0]}-{key[1]}"


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error("a series run failed", exc_info=exc)


class RunTimeExecutor(AsyncIOExecutor):  # type: ignore[misc]
    """APScheduler's asyncio executor, but the job coroutine receives each due instant
    (``job.func(*args, run_time)``) and judges lateness itself (sub-second graces)."""

    def _do_submit_job(self, job: Any, run_times: list[datetime]) -> None:
        async def run_all() -> None:
            for run_time in run_times:
                await job.func(*job.args, run_time)

        def done(f: asyncio.Future[None]) -> None:
            self._pending_futures.discard(f)
            exc = f.exception() if not f.cancelled() else None
            if exc is not None:
                self._run_job_error(job.id, exc, exc.__traceback__)
            else:
                self._run_job_success(job.id, [])

        f = self._eventloop.create_task(run_all())
        f.add_done_callback(done)
        self._pending_futures.add(f)


@dataclass
class SeriesJob:
    row: SeriesRow
    grace_s: float
    offset_ms: int = 0  # phase within the interval
    probe: Probe | None = None
    needs_logon: bool = True
    task: asyncio.Task[Any] | None = None
    config_error: str | None = None
    credit: float = 0.0  # overload admission (app.agent.scheduling.overload)
    late_streak: int = 0  # admitted runs in a row skipped as too late to start


SlotKey = tuple[int, int]  # (interval_ms, slot start offset in ms)


def slot_of(interval_ms: int, offset_ms: int) -> SlotKey:
    return interval_ms, offset_ms - offset_ms % SLOT_MS


class SeriesScheduler:
    def __init__(
        self,
        *,
        build: SpecBuilder,
        submit: Callable[[Sample], None],
        limiter: Limiter,
        stats: AgentStats,
        agent: str,
        site: str,
        max_grace_s: float,
    ) -> None:
        self.build = build
        self.submit = submit
        self.limiter = limiter
        self.stats = stats
        self.agent = agent
        self.site = site
        self.max_grace_s = max_grace_s
        self.jobs: dict[int, SeriesJob] = {}
        # members of each slot: series id -> its offset after the slot's instant (ms)
        self.slots: dict[SlotKey, dict[int, int]] = {}
        self._stopping = False
        self.kept_logons = 0  # logons of sessions kept across runs (see app.agent.heap)
        self._closing: set[asyncio.Task[Any]] = set()
        self.aps = AsyncIOScheduler(timezone=UTC, executors={"default": RunTimeExecutor()})
        self.demand_per_s = 0.0  # instants due per second, all series together
        self.monitor = LoopMonitor()
        self.overload = OverloadControl(self.monitor, lambda: self.demand_per_s)
        self.pauses = PauseBook()  # refreshed by the worker's coordination thread

    # -- lifecycle ------------------------------------------------------------
    def start(self) -> None:
        for name in ("apscheduler.executors", "apscheduler.scheduler"):
            # APScheduler logs every run at INFO and every skip at WARNING; the agent
            # records skips as samples and counts them instead.
            logging.getLogger(name).setLevel(logging.ERROR)
        self.aps.start()
        self.monitor.start(asyncio.get_running_loop())
        self.overload.start()

    async def stop(self, grace_s: float) -> None:
        """No new runs; wait for runs in flight (``grace_s`` at most), close every probe."""
        self._stopping = True  # timers armed for instants of the next 50 ms start nothing
        self.overload.stop()
        self.monitor.stop()
        if self.aps.running:
            self.aps.pause()
        running = [j.task for j in self.jobs.values() if j.task is not None]
        if running:
            _done, pending = await asyncio.wait(running, timeout=grace_s)
            for t in pending:
                t.cancel()
        for job in list(self.jobs.values()):
            self._retire(job)
        self.jobs.clear()
        self.slots.clear()
        if self._closing:
            await asyncio.wait(list(self._closing), timeout=CLOSE_TIMEOUT_S + 1)
        if self.aps.running:
            self.aps.shutdown(wait=False)
            await asyncio.sleep(0)  # shutdown runs via call_soon_threadsafe

    # -- what to run ------------------------------------------------------------
    def sync(self, rows: dict[int, SeriesRow]) -> None:
        """Run exactly ``rows`` from now on (add, change and remove jobs)."""
        for sid in list(self.jobs):
            if sid not in rows:
                self._remove(sid)
        for sid, row in rows.items():
            job = self.jobs.get(sid)
            if job is None:
                self._add(row)
            elif job.row != row:
                old = job.row
                job.row = row
                job.grace_s = grace_s(row.interval_ms, self.max_grace_s)
                job.config_error = None
                self._retire(job)  # the next run builds a probe from the new row
                if old.interval_ms != row.interval_ms:
                    self.demand_per_s += 1000 / row.interval_ms - 1000 / old.interval_ms
                    self._leave_slot(sid, old.interval_ms, job.offset_ms)
                    job.offset_ms = phase_offset_ms(sid, row.interval_ms)
                    self._join_slot(sid, row.interval_ms, job.offset_ms)

    @property
    def series_ids(self) -> set[int]:
        return set(self.jobs)

    def _add(self, row: SeriesRow) -> None:
        sid = row.series_id
        offset = phase_offset_ms(sid, row.interval_ms)
        job = SeriesJob(
            row=row,
            grace_s=grace_s(row.interval_ms, self.max_grace_s),
            offset_ms=offset,
            credit=initial_credit(sid),
        )
        self.jobs[sid] = job
        self.demand_per_s += 1000 / row.interval_ms
        self._join_slot(sid, row.interval_ms, offset)

    def _join_slot(self, sid: int, interval_ms: int, offset_ms: int) -> None:
        key = slot_of(interval_ms, offset_ms)
        members = self.slots.get(key)
        if members is None:
            members = self.slots[key] = {}
            self._add_aps_job(key)
        members[sid] = offset_ms - key[1]

    def _leave_slot(self, sid: int, interval_ms: int, offset_ms: int) -> None:
        key = slot_of(interval_ms, offset_ms)
        members = self.slots.get(key)
        if members is None:
            return
        members.pop(sid, None)
        if not members:
            del self.slots[key]
            with contextlib.suppress(Exception):  # already gone (JobLookupError)
                self.aps.remove_job(_aps_id(key))

    def _add_aps_job(self, key: SlotKey) -> None:
        interval_ms, slot_ms = key
        start = from_ms(grid_at_or_before_ms(to_ms(datetime.now(UTC)), slot_ms, interval_ms))
        self.aps.add_job(
            self._fire,
            trigger=IntervalTrigger(seconds=interval_ms / 1000.0, start_date=start, timezone=UTC),
            args=[key],
            id=_aps_id(key),
            name=f"series every {interval_ms} ms, phase {slot_ms}+{SLOT_MS} ms",
            max_instances=1,
            coalesce=False,
            misfire_grace_time=None,  # judged per series, in fractions of a second
            replace_existing=True,
        )

    def _remove(self, sid: int) -> None:
        job = self.jobs.pop(sid)
        self.demand_per_s = max(0.0, self.demand_per_s - 1000 / job.row.interval_ms)
        self._leave_slot(sid, job.row.interval_ms, job.offset_ms)
        self._retire(job)

    def _retire(self, job: SeriesJob) -> None:
        """Close the job's probe once its run (if any) is over."""
        probe, job.probe, job.needs_logon = job.probe, None, True
        if probe is None:
            return
        running = job.task

        async def close() -> None:
            if running is not None and not running.done():
                await asyncio.wait([running])
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT_S):
                    await probe.close()
            except Exception:
                log.debug("closing the probe of %s failed", job.row.label, exc_info=True)

        task = asyncio.get_running_loop().create_task(close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    # -- runs -----------------------------------------------------------------
    def _skip(self, row: SeriesRow, scheduled: datetime, reason: str, message: str) -> None:
        self.stats.record_skip(reason)
        if reason == "OVERLOAD":
            self.overload.skipped += 1
        self.submit(
            Sample(
                series_id=row.series_id,
                scheduled_at=scheduled,
                # skipped ahead of its instant (overload admission): "started" = its instant
                started_at=max(datetime.now(UTC), scheduled),
                status=SampleStatus.SKIPPED,
                error_class=ErrorClass.OTHER,
                error_code=reason,
                error_phase="schedule",
                error_message=message,
                agent=self.agent,
                site=self.site,
            )
        )

    async def _fire(self, key: SlotKey, run_time: datetime | None = None) -> None:
        """A slot's instant: arm a timer for each member series at its own instant."""
        members = self.slots.get(key)
        if members is None or run_time is None or self._stopping:
            return
        loop = asyncio.get_running_loop()
        # the loop's clock at the slot's instant (wall clock -> monotonic loop time)
        at = loop.time() + (run_time.timestamp() - time.time())
        admit = self.overload.admit
        paused = self.pauses.spans
        for sid, delta_ms in members.items():
            job = self.jobs.get(sid)
            if job is None:
                continue
            if sid in paused:
                instant = run_time + timedelta(milliseconds=delta_ms)
                pause = self.pauses.at(sid, instant)
                if pause is not None:
                    self._paused(job, instant, pause)
                    continue
            # a kept session not yet (or no longer) logged on goes first: its logon is a
            # one-off (bounded by the logon rate caps); shedding it would make the costly
            # logon wave after a start last 1 / share intervals
            if (job.needs_logon and job.row.probe not in LOGON_EVERY_RUN) or admit(job):
                loop.call_at(at + delta_ms / 1000.0, self._start, job, key, run_time, delta_ms)
            else:  # over capacity: this instant is skipped now, no timer armed for it
                self._overloaded(job, run_time + timedelta(milliseconds=delta_ms))

    def _start(self, job: SeriesJob, key: SlotKey, slot_time: datetime, delta_ms: int) -> None:
        """A series' instant (a loop timer callback): skip or start its run as a task."""
        row = job.row
        if (
            self._stopping
            or self.jobs.get(row.series_id) is not job
            or row.interval_ms != key[0]
            or job.offset_ms - key[1] != delta_ms
        ):
            return  # stopped, or the series was removed or rescheduled meanwhile
        scheduled = slot_time + timedelta(milliseconds=delta_ms)
        late_s = (datetime.now(UTC) - scheduled).total_seconds()
        if late_s > job.grace_s:  # e.g. the loop was blocked past several instants
            self._late(job, scheduled, late_s)
            return
        if self.overload.active and late_s > self.overload.late_s:
            self.overload.late += 1
        if self._too_late(job, scheduled, late_s):
            return
        if job.task is not None and not job.task.done():
            self._skip(
                row, scheduled, "OVERRUN", "the previous run of this series was still running"
            )
            return
        task = asyncio.get_running_loop().create_task(self._run(row.series_id, scheduled))
        job.task = task
        task.add_done_callback(_log_failure)

    def _too_late(self, job: SeriesJob, scheduled: datetime, late_s: float) -> bool:
        """While overloaded, a run that would start more than ``overload.late_s`` late is
        skipped as OVERLOAD and its series may be owed one (:meth:`_owe`); True if so."""
        if not (self.overload.active and late_s > self.overload.late_s):
            return False
        self._owe(job)
        self._overloaded(job, scheduled, late_s)
        return True

    @staticmethod
    def _owe(job: SeriesJob) -> None:
        """An admitted run skipped as too late: after ``OWED_AFTER`` in a row the series
        is owed one (its phase may keep colliding with something periodic; it must not
        starve). Not after every one: owing each late run back made the next instants
        admit a surge of owed runs, which were late in turn, and the loop oscillated."""
        job.late_streak += 1
        if job.late_streak >= OWED_AFTER:
            job.late_streak = 0
            job.credit = min(job.credit + 1.0, MAX_CREDIT)

    def _late(self, job: SeriesJob, scheduled: datetime, late_s: float) -> None:
        if self.overload.active:
            self._overloaded(job, scheduled, late_s)
            return
        self._skip(
            job.row,
            scheduled,
            "LATE",
            f"the run could not start within its grace of {job.grace_s:g} s "
            f"(it was {late_s:.3f} s late)",
        )

    def _paused(self, job: SeriesJob, scheduled: datetime, pause: Pause) -> None:
        """An instant inside a maintenance window that pauses probes: skipped, and the
        session kept across runs closed (the first run after the window logs on)."""
        if job.probe is not None:
            self._retire(job)
        self._skip(job.row, scheduled, "PAUSED", pause.message())

    def _overloaded(self, job: SeriesJob, scheduled: datetime, late_s: float | None = None) -> None:
        msg = self.overload.message  # formatted once per control window, not per skip
        if late_s is not None:
            msg = f"{msg}; this run would have started {1000 * late_s:.0f} ms late"
        self._skip(job.row, scheduled, "OVERLOAD", msg)

    def _stalled(self, sample: Sample, stalled_s: float, deadline_s: float) -> Sample:
        """A TIMEOUT during which this agent's own loop was behind: not the target's."""
        self.stats.record_skip("OVERLOAD")
        self.overload.skipped += 1
        return Sample(
            series_id=sample.series_id,
            scheduled_at=sample.scheduled_at,
            started_at=sample.started_at,
            status=SampleStatus.SKIPPED,
            error_class=ErrorClass.OTHER,
            error_code="OVERLOAD",
            error_phase="schedule",
            error_message=(
                f"the run hit its deadline of {deadline_s:g} s during {sample.error_phase} "
                f"while this agent's event loop was {1000 * stalled_s:.0f} ms behind: the "
                "agent's overload, not the target's timeout"
            ),
            agent=sample.agent,
            site=sample.site,
            extra={"stall_ms": round(1000 * stalled_s, 1)},
        )

    def _config_sample(self, row: SeriesRow, scheduled: datetime, message: str) -> Sample:
        self.stats.config_errors += 1
        now = datetime.now(UTC)
        return Sample(
            series_id=row.series_id,
            scheduled_at=scheduled,
            started_at=now,
            status=SampleStatus.ERROR,
            total_ns=0,
            error_class=ErrorClass.PROBE,  # connwatch cannot build it: not the target's fault
            error_code="PROBE-CONFIG",
            error_phase="config",
            error_message=message[:500],
            agent=self.agent,
            site=self.site,
        )

    def _probe(self, job: SeriesJob) -> Probe:
        if job.probe is None:
            spec = self.build(job.row)
            job.probe = create_probe(spec)
            job.needs_logon = True
        return job.probe

    async def _run(self, sid: int, scheduled: datetime) -> None:
        now = datetime.now(UTC)
        job = self.jobs.get(sid)
        if job is None:
            return
        row = job.row
        late_s = (now - scheduled).total_seconds()
        if late_s > job.grace_s:
            self._late(job, scheduled, late_s)
            return
        if late_s > self.overload.late_s:
            self.overload.late += 1  # the controller's second signal
        # judged again here, where the run really starts: a loop with a long ready queue
        # runs this first step a while after the timer (see _start)
        if self._too_late(job, scheduled, late_s):
            return
        latest = time.monotonic() + (job.grace_s - late_s)
        if not await self.limiter.slot(latest):
            self._skip(row, scheduled, "BUSY", "no free run slot (agent max_in_flight) in time")
            return
        try:
            await self._run_in_slot(job, row, scheduled, latest)
        finally:
            self.limiter.release()

    async def _run_in_slot(
        self, job: SeriesJob, row: SeriesRow, scheduled: datetime, latest: float
    ) -> None:
        try:
            probe = self._probe(job)
        except (SpecError, ProbeConfigError) as exc:
            msg = str(exc).removeprefix(f"{row.label}: ")  # the spec error may name it too
            if job.config_error != msg:
                log.error("%s cannot run: %s", row.label, msg)
                job.config_error = msg
            self.submit(self._config_sample(row, scheduled, msg))
            return
        every_run = row.probe in LOGON_EVERY_RUN
        logons = 1 if (every_run or job.needs_logon) else 0
        if logons and not every_run:
            self.kept_logons += 1
        if not await self.limiter.logons(row.target_id, logons, latest):
            self._skip(row, scheduled, "RATE_LIMIT", "logons per second cap reached")
            return
        # and again: the slot or a logon token may have taken a while
        if self._too_late(job, scheduled, (datetime.now(UTC) - scheduled).total_seconds()):
            return
        self.overload.executed += 1
        job.late_streak = 0
        stall0 = self.monitor.stall()
        sample = await run_once(probe, scheduled_at=scheduled)
        job.needs_logon = not sample.ok
        if sample.status is SampleStatus.TIMEOUT:
            stalled = self.monitor.stall() - stall0
            if self.overload.timed_out_by_stall(stalled, probe.spec.deadline_s):
                self.submit(self._stalled(sample, stalled, probe.spec.deadline_s))
                return
        if self.overload.active:
            sample.extra["overload"] = round(self.overload.share, 3)
        self.stats.runs += 1
        if not sample.ok:
            self.stats.runs_failed += 1
        self.stats.record_lag((sample.started_at - scheduled) / timedelta(milliseconds=1))
        self.submit(sample)
