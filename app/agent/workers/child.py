"""A worker process of an agent: one :class:`~app.agent.workers.unit.ProbeWorker` on its
own event loop, talking to the supervisor over a pipe.

Messages (pickled tuples over a ``multiprocessing`` pipe):

- worker -> supervisor: ``("ready", pid)`` once its worker lock is taken; ``("stats",
  doc)`` every ``poll_s``; ``("stopped", doc)`` after its last sample is flushed;
- supervisor -> worker: ``"go"`` (take series: every worker has joined, so the first
  shares are right and nothing moves twice), ``"stop"``.

SIGINT is ignored (a Ctrl-C in a terminal reaches the whole process group; the
supervisor decides), SIGTERM stops the worker the same way as ``"stop"`` (a service
manager may signal every process of the agent), and so does the pipe closing (the
supervisor died): in each case every sample is flushed first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from app.agent.options import AgentOptions
from app.agent.workers.buckets import SharedLogonBuckets
from app.agent.workers.unit import ProbeWorker
from app.config import Settings
from app.drivers import eventloop

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerConfig:
    index: int
    name: str  # the agent's
    agent_id: int
    url: str  # the store, resolved by the supervisor (the embedded one's socket too)
    settings: Settings
    options: AgentOptions
    buckets: SharedLogonBuckets


class _Tagged(logging.Filter):
    def __init__(self, index: int) -> None:
        super().__init__()
        self.tag = f"[worker {index}] "

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and not record.msg.startswith(self.tag):
            record.msg = self.tag + record.msg
        return True


def main(conn: Connection, cfg: WorkerConfig) -> None:
    """The process's entry point (``multiprocessing`` target)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from app.logs import setup_logging

    setup_logging(cfg.settings.log_level, cfg.settings.log_format)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_Tagged(cfg.index))
    try:
        # python-oracledb's asyncio listener-REDIRECT race: app/drivers/eventloop.py
        eventloop.run(_serve(conn, cfg))
    except Exception:
        log.exception("worker %d failed", cfg.index)
        raise
    finally:
        conn.close()


def _send(conn: Connection, msg: Any) -> bool:
    try:
        conn.send(msg)
        return True
    except (OSError, EOFError, ValueError):
        return False


async def _serve(conn: Connection, cfg: WorkerConfig) -> None:
    from app.db import make_engine

    loop = asyncio.get_running_loop()
    stop, go = asyncio.Event(), asyncio.Event()

    def on_message() -> None:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the supervisor is gone: flush and leave
            loop.remove_reader(conn.fileno())
            stop.set()
            return
        if msg == "go":
            go.set()
        elif msg == "stop":
            stop.set()

    loop.add_reader(conn.fileno(), on_message)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    engine = make_engine(cfg.url, pool_size=2 + cfg.options.write_threads)
    worker = ProbeWorker(
        engine, cfg.settings, cfg.options, name=cfg.name, index=cfg.index, buckets=cfg.buckets
    )
    await worker.start(cfg.agent_id)
    _send(conn, ("ready", os.getpid()))
    started = asyncio.ensure_future(go.wait())
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait({started, stopped}, return_when=asyncio.FIRST_COMPLETED)
    started.cancel()
    if not stop.is_set():
        worker.begin()
    while not stop.is_set():
        if not _send(conn, ("stats", worker.snapshot())):
            break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(stopped), cfg.options.poll_s)
    stopped.cancel()
    await worker.stop()
    _send(conn, ("stopped", worker.snapshot()))
    with contextlib.suppress(Exception):
        loop.remove_reader(conn.fileno())
    engine.dispose()
