"""An agent with N worker processes: one event loop per core, one agent to the outside.

One Python event loop does about 2,500 kept-session pings or ~400 logons a second on
one core, whatever the host has (issue 16). :class:`AgentHost` therefore runs
``CONNWATCH_AGENT_WORKERS`` worker processes (default: one per core), each a
:class:`~app.agent.workers.unit.ProbeWorker` on its own loop with its own store
connections, write-ahead log and spool (:mod:`app.agent.workers.child`). They share the
site's series through the same advisory-lock coordination several agents use
(:mod:`app.agent.coordination.series`: each worker is one share), and the logon caps
through :class:`~app.agent.workers.buckets.SharedLogonBuckets`.

The host process keeps what an agent does once (:class:`app.agent.service.Duties`):
one ``agents`` row, whose heartbeat carries the workers' figures combined plus one
entry per worker (:func:`app.agent.stats.combine`), store maintenance, and "test now".

Workers are started from a ``forkserver`` that has imported the probing code once, so a
worker is up in well under a second and shares nothing it should not (no store
connection, no thread crosses a fork). All workers join (take their worker lock) before
any takes series, so the first shares are already right. A worker that exits
unexpectedly is started again (after 1 s, doubling up to 30 s while it keeps failing);
one that sends no figures for ``HUNG_S`` is killed and started again. Its series are
free the moment its session ends, and the others take them within a tick or two.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from typing import Any

from sqlalchemy.engine import Engine

from app.agent.coordination.registry import default_agent_name
from app.agent.options import AgentOptions
from app.agent.service import Duties
from app.agent.stats import combine
from app.agent.workers.buckets import SharedLogonBuckets
from app.agent.workers.child import WorkerConfig, main
from app.agent.workers.unit import drain_leftovers
from app.config import Settings

log = logging.getLogger(__name__)

HUNG_S = 30.0
READY_S = 120.0  # how long the start waits for every worker to join
BACKOFF_S = (1.0, 30.0)


def _context() -> ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["app.agent.workers.child"])
    return ctx


@contextlib.contextmanager
def plain_main() -> Iterator[None]:
    """Start processes without ``multiprocessing`` re-running our ``__main__`` in them.

    A spawned or forkserver child first imports the parent's main module (as
    ``__mp_main__``) so that functions defined there can be unpickled. Ours is the CLI
    (``connwatch`` or ``python -m app.cli.main``), whose import registers every command
    group; nothing a worker needs lives there (its target is
    :func:`app.agent.workers.child.main`). With a main module that has neither a
    ``__spec__`` nor a ``__file__`` for the moment of the start, the child skips that step.
    """
    real = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = real


@dataclass
class Slot:
    index: int
    proc: BaseProcess | None = None
    conn: Connection | None = None
    doc: dict[str, Any] = field(default_factory=dict)
    seen: float = 0.0  # monotonic: last message
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    restarts: int = 0
    next_start: float = 0.0
    backoff: float = BACKOFF_S[0]


class AgentHost:
    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        options: AgentOptions | None = None,
        *,
        workers: int,
        name: str | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.opt = options or AgentOptions.from_settings(settings)
        self.name = name or settings.agent_name or default_agent_name()
        self.site = settings.site
        self.count = workers
        self.ctx = _context()
        self.buckets = SharedLogonBuckets(
            self.opt.logons_per_s, self.opt.target_logons_per_s, ctx=self.ctx
        )
        self.duties = Duties(engine, settings, self.opt, self.name, self.snapshot)
        self.slots = [Slot(i) for i in range(workers)]
        self.agent_id = 0
        self._url = engine.url.render_as_string(hide_password=False)
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False
        self.started = False

    # -- lifecycle ------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(
            None, drain_leftovers, self.engine, self.settings, self.opt, self.count
        )
        self.agent_id = await self._register()
        for slot in self.slots:
            self._spawn(slot)
        try:
            async with asyncio.timeout(READY_S):
                await asyncio.gather(*(s.ready.wait() for s in self.slots))
        except TimeoutError:
            log.error(
                "only %d of %d workers joined within %.0f s; going on with them",
                sum(s.ready.is_set() for s in self.slots),
                self.count,
                READY_S,
            )
        for slot in self.slots:
            self._tell(slot, "go")
        self.duties.start()
        self._watch = loop.create_task(self._supervise(), name="connwatch-supervise")
        self.started = True
        log.info(
            "agent %s started at site %s with %d worker processes", self.name, self.site, self.count
        )

    async def _register(self) -> int:
        while True:
            try:
                return await self.duties.register()
            except Exception as exc:
                log.warning("store unreachable at start (%s): retrying", str(exc).splitlines()[0])
                await asyncio.sleep(self.opt.retry_s)

    async def stop(self) -> None:
        """Stop every worker (each flushes its samples), then the duties."""
        if not self.started:
            return
        self.started, self._stopping = False, True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        for slot in self.slots:
            self._tell(slot, "stop")
        grace = self.opt.stop_grace_s * 2 + 20  # runs in flight, then the spool's replay
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await asyncio.gather(*(self._ended(s) for s in self.slots))
        for slot in self.slots:
            self._reap(slot, kill=True)
        await self.duties.stop(self.snapshot())
        log.info(
            "agent %s stopped: %d samples written, %d spooled for later",
            self.name,
            sum(s.doc.get("written") or 0 for s in self.slots),
            sum(s.doc.get("spool_samples") or 0 for s in self.slots),
        )

    async def _ended(self, slot: Slot) -> None:
        while slot.proc is not None and slot.proc.is_alive() and not slot.stopped.is_set():
            await asyncio.sleep(0.05)
        if slot.proc is not None:
            await asyncio.get_running_loop().run_in_executor(None, slot.proc.join, 5)

    # -- processes --------------------------------------------------------------
    def _spawn(self, slot: Slot) -> None:
        ours, theirs = self.ctx.Pipe()
        cfg = WorkerConfig(
            slot.index, self.name, self.agent_id, self._url, self.settings, self.opt, self.buckets
        )
        proc = self.ctx.Process(
            target=main, args=(theirs, cfg), name=f"connwatch-worker-{slot.index}", daemon=False
        )
        with plain_main():
            proc.start()
        theirs.close()
        slot.proc, slot.conn, slot.seen = proc, ours, time.monotonic()
        slot.ready.clear()
        slot.stopped.clear()
        asyncio.get_running_loop().add_reader(ours.fileno(), self._receive, slot)

    def _receive(self, slot: Slot) -> None:
        conn = slot.conn
        if conn is None:
            return
        try:
            kind, body = conn.recv()
        except (EOFError, OSError):
            self._forget_conn(slot)
            return
        slot.seen = time.monotonic()
        if kind == "ready":
            slot.ready.set()
            if self.started and not self._stopping:
                self._tell(slot, "go")  # a restarted worker
        elif kind in ("stats", "stopped"):
            slot.doc = body
            if kind == "stopped":
                slot.stopped.set()

    def _forget_conn(self, slot: Slot) -> None:
        if slot.conn is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(slot.conn.fileno())
            slot.conn.close()
        slot.conn = None

    def _tell(self, slot: Slot, msg: str) -> None:
        if slot.conn is not None:
            with contextlib.suppress(OSError, ValueError):
                slot.conn.send(msg)

    def _reap(self, slot: Slot, *, kill: bool = False) -> int | None:
        proc = slot.proc
        if proc is None:
            return None
        if kill and proc.is_alive():
            log.error("worker %d did not stop in time: killed", slot.index)
            proc.kill()
        proc.join(1)
        self._forget_conn(slot)
        slot.proc = None
        return proc.exitcode

    async def _supervise(self) -> None:
        """Start again a worker that died; kill one that hangs."""
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            for slot in self.slots:
                proc = slot.proc
                if proc is not None and proc.is_alive():
                    if now - slot.seen > HUNG_S:
                        log.error(
                            "worker %d sent nothing for %.0f s: killing it", slot.index, HUNG_S
                        )
                        proc.kill()
                    elif now - slot.seen < 5:
                        slot.backoff = BACKOFF_S[0]
                    continue
                if proc is not None:
                    code = self._reap(slot)
                    slot.next_start = now + slot.backoff
                    log.error(
                        "worker %d exited unexpectedly (code %s): starting it again in %.0f s",
                        slot.index,
                        code,
                        slot.backoff,
                    )
                    slot.backoff = min(BACKOFF_S[1], slot.backoff * 2)
                    slot.doc = {**slot.doc, "in_flight": 0}
                elif now >= slot.next_start:
                    slot.restarts += 1
                    self._spawn(slot)

    # -- self-monitoring --------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The ``agents.stats`` document: the workers' figures combined, one entry each."""
        docs = []
        for slot in self.slots:
            alive = slot.proc is not None and slot.proc.is_alive()
            docs.append({**slot.doc, "worker": slot.index, "alive": alive})
        doc = combine(docs)
        for entry, slot in zip(doc["workers"], self.slots, strict=True):
            entry["restarts"] = slot.restarts
        doc["workers_configured"] = self.count
        doc["workers_alive"] = sum(1 for d in docs if d["alive"])
        return doc
