"""The sample writer: batches to the store with COPY, or to the spool while it is away.

One thread. Samples arrive through :meth:`Writer.submit` (any thread, never blocks,
wakes the writer thread only when a batch opens or fills). With a write-ahead log
(:mod:`app.agent.output.wal`), ``submit`` hands the sample to the log's group-commit
thread first, and the writer receives it only once it is on disk; each batch then
tells the log when it is final (stored, spooled, rejected or dropped), which lets the
log forget it. Samples the log held from before a crash are written first.
A batch is written when it holds ``batch_max`` samples or its first sample has
waited ``flush_s``; :func:`app.store.write.ingest.write_samples` stores it (COPY, then
``ON CONFLICT DO NOTHING``: idempotent) in one transaction.

When the store cannot be reached, the batch goes to the :class:`~app.agent.output.spool.Spool`
(fsync per batch) and so does every later batch until the spool has been replayed,
so samples reach the store in the order they were taken. Every ``retry_s`` the writer
tries to replay the spool; the first success brings it back to direct writes. A
batch the store rejects for another reason (not a connection problem) is kept in
``<spool>/rejected/`` and logged, never retried forever and never lost silently.
If even the spool is full, batches wait in memory (``memory_backlog_max`` samples)
and beyond that the oldest are dropped with an error log and counted in
``dropped`` (the only way a sample can be lost, and it is loud).

:meth:`Writer.stop` flushes everything: the queue to the store (or the spool), then
as much of the spool as ``stop_grace_s`` allows. A spool left behind by a crash is
replayed when the next writer starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from app.agent.options import AgentOptions
from app.agent.output.spool import Spool, SpoolFull, encode_frame
from app.agent.output.wal import GroupCommit, WriteAheadLog
from app.samples import Sample
from app.store.write.ingest import write_samples

log = logging.getLogger(__name__)


def store_unreachable(exc: BaseException) -> bool:
    """True for failures that mean "the store is away" (retry later), not "bad data"."""
    if isinstance(
        exc,
        sa_exc.OperationalError
        | sa_exc.InterfaceError
        | sa_exc.DisconnectionError
        | sa_exc.TimeoutError
        | psycopg.OperationalError
        | psycopg.InterfaceError
        | OSError,
    ):
        return True
    if isinstance(exc, sa_exc.DBAPIError):
        return exc.connection_invalidated or isinstance(
            exc.orig, psycopg.OperationalError | psycopg.InterfaceError
        )
    return False


@dataclass(eq=False, slots=True)
class Batch:
    """Samples taken from the intake together; ``end``: the write-ahead log's number
    after the last of them (batches are final in any order; the log learns the prefix)."""

    samples: list[Sample]
    end: int = 0
    final: bool = field(default=False)

    def __len__(self) -> int:
        return len(self.samples)


class Writer:
    def __init__(
        self,
        engine: Engine,
        spool: Spool,
        options: AgentOptions | None = None,
        wal: WriteAheadLog | None = None,
    ) -> None:
        self.engine = engine
        self.spool = spool
        self.opt = options or AgentOptions()
        # Intake: deque append/popleft are atomic, so submit() takes no lock.
        self._in: deque[Sample] = deque()
        self._wake = threading.Event()
        self._stopping = False
        self._batch_max = max(1, self.opt.batch_max)
        self._thread: threading.Thread | None = None
        self._memory: deque[Batch] = deque()
        self._memory_count = 0
        self._last_attempt = 0.0
        self._pool = ThreadPoolExecutor(
            max(1, self.opt.write_threads), thread_name_prefix="connwatch-write"
        )
        self._inflight: deque[tuple[Future[int], Batch]] = deque()
        self.wal = wal
        self.log: GroupCommit | None = None
        self._taken = 0  # the log's number of the next sample taken from the intake
        self._open: deque[Batch] = deque()  # batches not yet known final, oldest first
        self._recovered: list[Sample] = []
        self.recovered = 0  # samples the log held from before the last stop
        self._lock = threading.Lock()
        # statistics (read by other threads; plain ints are safe to read)
        self.submitted = 0
        self.written = 0  # new rows stored (duplicates excluded)
        self.handed = 0  # samples handed to the store, duplicates included
        self.batches = 0
        self.spooled = 0
        self.rejected = 0
        self.dropped = 0
        self.store_ok = True
        self.last_error: str | None = None

    # -- public ---------------------------------------------------------------
    def submit(self, sample: Sample) -> None:
        self.submitted += 1
        if self.log is not None:
            self.log.submit(sample)
            return
        q = self._in
        q.append(sample)
        n = len(q)
        # Wake the writer thread only when a batch opens or fills: a thread wake-up per
        # sample cost the event loop a GIL hand-over per probe run.
        if n == 1 or n == self._batch_max:
            self._wake.set()

    def _accept(self, group: list[Sample]) -> None:
        """Samples the write-ahead log made durable (its group-commit thread)."""
        q = self._in
        before = len(q)
        q.extend(group)
        n = len(q)
        if before == 0 or before < self._batch_max <= n:
            self._wake.set()

    def start(self) -> None:
        if self.wal is not None:
            self._recovered = self.wal.recover()
            self.recovered = len(self._recovered)
            self._taken = self.wal.next_seq
            self.log = GroupCommit(self.wal, self._accept, self.opt.wal_commit_s)
            self.log.start()
        self._thread = threading.Thread(target=self._run, name="connwatch-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Flush everything queued, then return (waits at most ``timeout`` seconds)."""
        if self._thread is None:
            return
        if self.log is not None:
            self.log.stop()  # commits and hands on what it holds
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout)
        alive = self._thread.is_alive()
        self._thread = None
        if self.wal is not None and self.log is not None and not alive:
            # every final sample is noted; what is not (store and spool both unusable)
            # stays in the log for the next start
            self.wal.checkpoint(self._taken if not self._open else self.log.final_upto)
            self.wal.close(clean=not self._open)

    @property
    def queued(self) -> int:
        """Samples taken but not yet in a batch (including those the log is committing)."""
        return len(self._in) + (len(self.log._in) if self.log is not None else 0)

    @property
    def wal_pending(self) -> int:
        """Samples in the write-ahead log not yet final (0 without a log)."""
        return self.log.pending if self.log is not None else 0

    @property
    def backlog(self) -> int:
        """Samples not yet in the store: spooled plus held in memory."""
        return self.spool.samples + self._memory_count

    # -- thread ---------------------------------------------------------------
    def _run(self) -> None:
        try:
            if self._recovered:
                recovered, self._recovered = self._recovered, []
                self._deliver_batch(Batch(recovered, self._taken))
            self._replay(force=True)
            while True:
                batch, stopping = self._collect()
                if batch:
                    self._deliver(batch)
                self._replay(force=False)
                if stopping:
                    break
            late = self._drain()  # submitted while the last batch was taken
            if late:
                self._deliver(late)
            self._reap(keep=0)
            self._reap(keep=0)
            self._replay(force=True, until=time.monotonic() + self.opt.stop_grace_s)
        except Exception:  # pragma: no cover - a bug; keep whatever we hold on disk
            log.exception("sample writer failed; spooling what is left")
            self._spool_rest()
        finally:
            self._pool.shutdown(wait=True)
            self.spool.close()

    def _take(self, samples: list[Sample]) -> Batch:
        self._taken += len(samples)
        return Batch(samples, self._taken)

    def _collect(self) -> tuple[list[Sample], bool]:
        """The next batch: ``batch_max`` samples, or what came within ``flush_s`` of the
        first (everything once stopping); True if the writer is stopping."""
        q = self._in
        self._wake.clear()
        if not q and not self._stopping:
            self._wake.wait(self.opt.retry_s)
        if not q:
            return [], self._stopping
        end = time.monotonic() + self.opt.flush_s
        while len(q) < self._batch_max and not self._stopping:
            self._wake.clear()  # before the checks: a set() after them wakes the wait
            if len(q) >= self._batch_max or self._stopping:
                break
            left = end - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(left)
        if self._stopping:
            return self._drain(), True
        return [q.popleft() for _ in range(min(len(q), self._batch_max))], False

    def _drain(self) -> list[Sample]:
        q = self._in
        return [q.popleft() for _ in range(len(q))]

    def _store(self, batch: list[Sample]) -> int:
        """One batch, one transaction; returns the new rows (runs in a write thread)."""
        with self.engine.begin() as conn:
            return write_samples(conn, batch)

    def _final(self, batch: Batch) -> None:
        """``batch`` is stored, spooled, rejected or dropped: tell the log how far every
        sample is final (batches may finish out of order)."""
        batch.final = True
        upto = None
        while self._open and self._open[0].final:
            upto = self._open.popleft().end
        if upto is not None and self.log is not None:
            self.log.done(upto)

    def _count(self, batch: list[Sample], new: int) -> None:
        with self._lock:
            self.written += new
            self.handed += len(batch)
            self.batches += 1

    def _store_counted(self, batch: list[Sample]) -> int:
        """Store and count one batch (in a write thread, or in this thread on replay)."""
        new = self._store(batch)
        self._count(batch, new)
        return new

    def _deliver(self, samples: list[Sample]) -> None:
        for i in range(0, len(samples), self.opt.batch_max):
            self._deliver_batch(self._take(samples[i : i + self.opt.batch_max]))

    def _deliver_batch(self, part: Batch) -> None:
        self._open.append(part)
        if self.store_ok and self.spool.empty and not self._memory:
            # Direct path: up to write_threads batches in flight, so encoding the
            # next batch overlaps the server's work on the previous one.
            self._reap(keep=self.opt.write_threads - 1)
            if self.store_ok:
                fut = self._pool.submit(self._store_counted, part.samples)
                self._inflight.append((fut, part))
                return
        self._reap(keep=0)
        self._to_spool(part)

    def _reap(self, keep: int) -> None:
        """Wait until at most ``keep`` batches are in flight, handling their outcome."""
        while self._inflight and (len(self._inflight) > keep or self._inflight[0][0].done()):
            fut, part = self._inflight.popleft()
            try:
                fut.result()  # counted by the write thread
            except Exception as exc:
                if self._failed(exc, part):
                    self._to_spool(part)
                    continue
            self._final(part)

    def _failed(self, exc: BaseException, batch: Batch) -> bool:
        """Handle a failed write; True if the batch must be spooled (store away)."""
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
        self.last_error = reason[0] if reason else type(exc).__name__
        if store_unreachable(exc):
            if self.store_ok:
                log.warning(
                    "store unreachable (%s): spooling samples to %s",
                    self.last_error,
                    self.spool.directory,
                )
            self.store_ok = False
            self._last_attempt = time.monotonic()
            return True
        self._reject(batch.samples, self.last_error)
        return False

    def _reject(self, batch: list[Sample], reason: str) -> None:
        where = self.spool.directory / "rejected"
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"rejected-{time.time_ns()}.spool"
        path.write_bytes(encode_frame(batch))
        self.rejected += len(batch)
        log.error("the store rejected %d samples (%s); kept in %s", len(batch), reason, path)

    def _to_spool(self, batch: Batch) -> None:
        self._memory.append(batch)
        self._memory_count += len(batch)
        while self._memory:
            head = self._memory[0]
            try:
                self.spool.append(head.samples)
            except SpoolFull as exc:
                self._bound_memory(str(exc))
                return
            except OSError as exc:
                self._bound_memory(f"cannot write the spool: {exc}")
                return
            self._memory.popleft()
            self._memory_count -= len(head)
            self.spooled += len(head)
            self._final(head)

    def _bound_memory(self, why: str) -> None:
        while self._memory_count > self.opt.memory_backlog_max and self._memory:
            lost = self._memory.popleft()
            self._memory_count -= len(lost)
            self.dropped += len(lost)
            self._final(lost)
            log.error("%s and the memory backlog is full: %d samples dropped", why, len(lost))

    def _replay(self, *, force: bool, until: float | None = None) -> None:
        self._reap(keep=self.opt.write_threads - 1)
        if self.spool.empty and not self._memory:
            return
        self._reap(keep=0)
        now = time.monotonic()
        if not force and not self.store_ok and now - self._last_attempt < self.opt.retry_s:
            return
        self._last_attempt = now
        try:
            n = self.spool.replay(self._replay_write, until=until)
            while self._memory:
                head = self._memory[0]
                self._replay_write(head.samples)
                self._memory.popleft()
                self._memory_count -= len(head)
                n += len(head)
                self._final(head)
        except Exception as exc:
            if store_unreachable(exc):
                self.store_ok = False
                self.last_error = str(getattr(exc, "orig", None) or exc).strip()[:200]
                return
            log.exception("spool replay failed")
            self.store_ok = False
            return
        if not self.store_ok:
            log.warning("store reachable again: %d spooled samples replayed", n)
        elif n:
            log.info("%d spooled samples replayed", n)
        self.store_ok = self.spool.empty and not self._memory

    def _replay_write(self, batch: list[Sample]) -> None:
        try:
            self._store_counted(batch)
        except Exception as exc:
            if store_unreachable(exc):
                raise
            self._reject(batch, str(getattr(exc, "orig", None) or exc).strip()[:200])

    def _spool_rest(self) -> None:  # pragma: no cover - after a bug only
        batch = self._drain()
        try:
            if batch:
                self._to_spool(self._take(batch))
        except Exception:
            log.exception("could not spool %d samples", len(batch))
