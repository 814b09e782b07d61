"""One probing unit on one event loop: its series, scheduler, limits, writer and log.

A :class:`ProbeWorker` is what runs on one core: it takes its share of the site's
series (:class:`~app.agent.coordination.series.SeriesCoordinator`, as worker ``index``
of its agent), schedules and runs them (:class:`~app.agent.scheduling.scheduler.SeriesScheduler`,
with its own overload control), and writes their samples through its own write-ahead
log, writer and spool. An agent runs one in its own process (``CONNWATCH_AGENT_WORKERS
= 1``, tests, ``serve``'s agent on one core) or one per worker process
(:mod:`app.agent.workers.supervisor`). Its :meth:`snapshot` is the per-worker part of
the agent's stats.

Worker 0 keeps its files in ``<data_dir>/wal`` and ``<data_dir>/spool`` (as an agent
always did); worker ``i`` in ``wal-w<i>`` and ``spool-w<i>``. When an agent restarts with
fewer workers, :func:`drain_leftovers` writes what the others left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from app.agent.coordination.series import SeriesCoordinator
from app.agent.heap import HeapSettler
from app.agent.options import AgentOptions
from app.agent.output.spool import Spool
from app.agent.output.wal import WriteAheadLog
from app.agent.output.writer import Writer
from app.agent.scheduling.limits import Limiter, LogonBuckets
from app.agent.scheduling.scheduler import SeriesScheduler
from app.agent.scheduling.specs import SeriesRow, build_spec
from app.agent.stats import AgentStats
from app.config import Settings
from app.drivers.eventloop import is_redirect_safe
from app.probes.spec import ProbeSpec
from app.secrets import Vault

log = logging.getLogger(__name__)


def worker_dirs(data_dir: Path, index: int) -> tuple[Path, Path]:
    """(write-ahead log, spool) directories of worker ``index``."""
    if index == 0:
        return data_dir / "wal", data_dir / "spool"
    return data_dir / f"wal-w{index}", data_dir / f"spool-w{index}"


def make_writer(engine: Engine, settings: Settings, opt: AgentOptions, index: int) -> Writer:
    wal_dir, spool_dir = worker_dirs(settings.data_dir, index)
    spool = Spool(
        spool_dir,
        settings.spool_max_mb * 1024 * 1024,
        segment_bytes=opt.spool_segment_bytes,
        warn_share=opt.spool_warn_share,
    )
    wal = None if opt.wal == "off" else WriteAheadLog(wal_dir, fsync=opt.wal == "fsync")
    return Writer(engine, spool, opt, wal=wal)


def drain_leftovers(engine: Engine, settings: Settings, opt: AgentOptions, workers: int) -> None:
    """Write what workers numbered ``workers`` and above left in their log and spool (the
    agent ran with more workers before): nothing measured is lost by lowering the count."""
    for path in sorted(settings.data_dir.glob("wal-w*")) + sorted(
        settings.data_dir.glob("spool-w*")
    ):
        try:
            index = int(path.name.rsplit("-w", 1)[1])
        except ValueError:
            continue
        wal_dir, spool_dir = worker_dirs(settings.data_dir, index)
        if index < workers or not (wal_dir.exists() or spool_dir.exists()):
            continue
        writer = make_writer(engine, settings, opt, index)
        writer.start()  # replays the log, then the spool
        writer.stop()
        if writer.backlog == 0 and writer.wal_pending == 0:
            for leftover in (wal_dir, spool_dir):
                _remove_if_empty(leftover)
            log.info("worker %d's leftover samples written (%d)", index, writer.written)


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        (directory / "LOCK").unlink(missing_ok=True)
        directory.rmdir()  # refused (and kept) if anything else is left, e.g. rejected/


class ProbeWorker:
    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        options: AgentOptions,
        *,
        name: str,
        index: int = 0,
        buckets: LogonBuckets | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.opt = options
        self.name = name
        self.site = settings.site
        self.index = index
        self.vault = Vault.from_settings(settings)
        self.stats = AgentStats()
        self.limiter = Limiter(
            self.opt.max_in_flight, self.opt.logons_per_s, self.opt.target_logons_per_s, buckets
        )
        self.writer = make_writer(engine, settings, options, index)
        self.spool = self.writer.spool
        self.scheduler = SeriesScheduler(
            build=self.build_spec,
            submit=self.writer.submit,
            limiter=self.limiter,
            stats=self.stats,
            agent=self.name,
            site=self.site,
            max_grace_s=self.opt.max_grace_s,
        )
        self.coord: SeriesCoordinator | None = None
        self.heap = HeapSettler()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"connwatch-coord{index}")
        self._task: asyncio.Task[None] | None = None
        self._store_error: str | None = None
        self.started = False
        # python-oracledb's asyncio listener-REDIRECT race (app/drivers/eventloop.py): the
        # loop this worker probes on must be connwatch's; reported in its stats
        self.redirect_safe = False

    def build_spec(self, row: SeriesRow) -> ProbeSpec:
        return build_spec(row, self.vault, self.settings, agent=self.name, site=self.site)

    # -- lifecycle ------------------------------------------------------------
    async def start(self, agent_id: int, *, join: bool = True) -> None:
        """Start writing and scheduling; ``join`` takes the worker lock now (else the
        first tick does, after :meth:`begin`)."""
        loop = asyncio.get_running_loop()
        self.redirect_safe = is_redirect_safe(loop)
        if not self.redirect_safe:
            log.warning(
                "worker %d probes on an event loop that is not redirect-safe: a redirected "
                "shared-server logon may fail as PROBE-DPY-4011 (app/drivers/eventloop.py)",
                self.index,
            )
        # The writer, log and coordination threads hold the GIL in bursts (encoding a
        # batch); a shorter switch interval hands it back to the event loop sooner, which
        # keeps the probes' start lag low (Python's default is 5 ms).
        sys.setswitchinterval(min(sys.getswitchinterval(), self.opt.switch_interval_s))
        # thick-mode driver calls (asyncio.to_thread) run in this bounded pool
        loop.set_default_executor(
            ThreadPoolExecutor(self.opt.thick_threads, thread_name_prefix="connwatch-driver")
        )
        self.coord = SeriesCoordinator(
            self.engine,
            self.name,
            agent_id,
            self.site,
            worker=self.index,
            pauses=self.scheduler.pauses,
        )
        self.heap.start()
        self.writer.start()
        self.scheduler.start()
        if join:
            with contextlib.suppress(Exception):  # unreachable: the first tick retries
                await loop.run_in_executor(self._pool, self.coord.join)
        self.started = True

    def begin(self) -> None:
        """Start taking series (after every worker of the agent has joined)."""
        self._task = asyncio.get_running_loop().create_task(
            self._coordinate(), name=f"connwatch-coordinate-w{self.index}"
        )

    async def stop(self) -> None:
        """Stop probing, flush every sample (store or spool), give up the series."""
        if not self.started:
            return
        self.started = False
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self.scheduler.stop(self.opt.stop_grace_s)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.writer.stop)
        if self.coord is not None:
            with contextlib.suppress(Exception):
                await loop.run_in_executor(self._pool, self.coord.close)
        self._pool.shutdown(wait=False)
        self.heap.release()

    # -- the series ----------------------------------------------------------------
    async def _coordinate(self) -> None:
        loop = asyncio.get_running_loop()
        assert self.coord is not None
        while True:
            t0 = time.monotonic()
            try:
                res = await loop.run_in_executor(self._pool, self.coord.tick)
                if self._store_error is not None:
                    log.warning("store reachable again: coordination resumed")
                    self._store_error = None
            except Exception as exc:
                reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
                msg = reason[0] if reason else type(exc).__name__
                if self._store_error is None:
                    log.warning(
                        "cannot coordinate through the store (%s): running the %d series "
                        "this worker had",
                        msg,
                        len(self.scheduler.jobs),
                    )
                self._store_error = msg
                res = None
            if res is not None and res.changed:
                try:
                    self.scheduler.sync(res.rows)
                except Exception:
                    log.exception("could not apply the new schedule")
            self.heap.observe(self.scheduler.kept_logons)
            await asyncio.sleep(max(0.05, self.opt.poll_s - (time.monotonic() - t0)))

    # -- self-monitoring --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """This worker's part of the ``agents.stats`` document (keys: app.agent.stats)."""
        doc = self.stats.snapshot()
        w = self.writer
        doc.update(
            worker=self.index,
            pid=os.getpid(),
            redirect_safe=self.redirect_safe,
            series=len(self.scheduler.jobs),
            in_flight=self.limiter.in_flight,
            spool_samples=self.spool.samples,
            spool_bytes=self.spool.bytes,
            spool_fill=round(self.spool.fill(), 4),
            memory_backlog=w.backlog - self.spool.samples,
            queued=w.queued,
            written=w.written,
            wal_pending=w.wal_pending,
            wal_recovered=w.recovered,
            dropped=w.dropped,
            rejected=w.rejected,
            store_ok=w.store_ok,
            store_error=None if w.store_ok else w.last_error,
            overload=self.scheduler.overload.snapshot(),
            live_workers=self.coord.live if self.coord is not None else None,
            backend_pid=self.coord.backend_pid if self.coord is not None else None,
        )
        return doc
