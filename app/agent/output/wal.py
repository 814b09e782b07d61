"""The write-ahead log: a measured sample is on disk before it waits for its batch.

Without it, a sample waits in memory for up to ``flush_s`` (1 s) before its batch goes
to the store, and a SIGKILL (OOM killer, ``kill -9``, a crashed container) loses it: in
a drill, 6 of 10 series lost the sample that had completed 0.05-0.5 s before the kill,
exactly the spike on-call needs. Like Prometheus's WAL or Vector's disk buffer, every
sample is now appended to a local log first, in **group commits**: the
:class:`GroupCommit` thread collects what the probes submitted during ``commit_s``
(default 20 ms), writes it as one frame with one ``write`` and only then hands the
group to the writer's batching. Once ``write`` returns the frame is in the kernel and
survives the death of the process, so a sample completed more than ``commit_s`` plus
one write before a SIGKILL is replayed at the next start. Against a power cut, mode
``fsync`` adds a thread that calls ``fdatasync`` behind the writes (coalescing them):
a slow disk then delays only the sync, never the next group's write (under load an
fsync can take hundreds of milliseconds, and a sample waiting for it would be lost
to a SIGKILL).

Layout: ``<dir>/seg-<first sequence number>.wal``, frames of
``b"CWW1" | kind | seq (u64) | count (u32) | length (u32) | crc32 (u32) | payload``.
Every sample gets a sequence number in submission order. A data frame (kind ``D``)
holds ``count`` samples numbered ``seq ..`` as JSON rows
(:func:`app.agent.output.records.to_row`); a checkpoint frame (kind ``C``) says "every
sample numbered below ``seq`` has been stored (or spooled, rejected or dropped, each
of which is final)". The writer reports that watermark as its batches finish
(:meth:`GroupCommit.done`); the log writes it with its next group and deletes every
segment that lies wholly below it, so the log holds about a second of samples.

Recovery (:meth:`WriteAheadLog.recover`, at start): every complete frame of every
segment is read, and the samples at or above the newest checkpoint are handed to the
store again. Those written shortly before the crash may already be stored: the
store's key ``(series_id, scheduled_at)`` keeps them once (``ON CONFLICT DO NOTHING``),
so a replay never stores a sample twice. A frame torn by the crash fails its length
or checksum and ends the segment's replay (only the last frame can be torn).

One process per directory: an exclusive ``flock`` on ``<dir>/LOCK`` is taken when the
log opens, so a second agent pointed at the same data directory fails with a clear
:class:`WalLocked` instead of interleaving frames.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import logging
import os
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from app.agent.output.records import from_row, to_row
from app.samples import Sample

log = logging.getLogger(__name__)

MAGIC = b"CWW1"
DATA, CHECKPOINT = b"D", b"C"
_HEADER = struct.Struct(">4scQIII")
_PREFIX, _SUFFIX = "seg-", ".wal"


class WalLocked(RuntimeError):
    """Another process has this write-ahead log open."""


@dataclass(frozen=True, slots=True)
class Frame:
    kind: bytes
    seq: int
    samples: list[Sample]


def encode(kind: bytes, seq: int, samples: list[Sample]) -> bytes:
    payload = (
        json.dumps([to_row(s) for s in samples], separators=(",", ":")).encode() if samples else b""
    )
    crc = zlib.crc32(payload, zlib.crc32(struct.pack(">cQI", kind, seq, len(samples))))
    return _HEADER.pack(MAGIC, kind, seq, len(samples), len(payload), crc) + payload


def _raw_frames(fh: BinaryIO) -> Iterator[tuple[int, bytes, int, bytes]]:
    """(end offset, kind, seq, payload) of each complete frame, in order; stops at the
    first torn or corrupt one."""
    end = 0
    while True:
        header = fh.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        magic, kind, seq, count, length, crc = _HEADER.unpack(header)
        payload = fh.read(length)
        if magic != MAGIC or len(payload) < length:
            return
        if zlib.crc32(payload, zlib.crc32(struct.pack(">cQI", kind, seq, count))) != crc:
            return
        end += _HEADER.size + length
        yield end, kind, seq, payload


def read_segment(path: Path) -> Iterator[Frame]:
    """The complete frames of one segment, in order; stops at a torn or corrupt frame."""
    size = path.stat().st_size
    read = 0
    with path.open("rb") as fh:
        for end, kind, seq, payload in _raw_frames(fh):
            read = end
            rows = json.loads(payload) if payload else []
            yield Frame(kind, seq, [from_row(r) for r in rows])
    if read < size:
        log.warning(
            "write-ahead log %s: torn or corrupt frame at byte %d ignored (the agent was "
            "killed while writing it)",
            path,
            read,
        )


def _seq_of(path: Path) -> int:
    return int(path.name[len(_PREFIX) : -len(_SUFFIX)])


class WriteAheadLog:
    """Segments of frames in one directory; used by one thread at a time (the
    :class:`GroupCommit` thread while it runs; its owner before and after)."""

    def __init__(self, directory: Path, *, fsync: bool = True, segment_bytes: int = 1 << 20):
        self.directory = directory
        self.fsync = fsync
        self.segment_bytes = segment_bytes
        self._lock_fd: int | None = None
        self._active: BinaryIO | None = None
        self._io = threading.Lock()  # closing or rotating the active file vs. sync()
        self._active_seq = -1
        self._active_size = 0
        self.next_seq = 0  # the number the next sample gets
        self.checkpointed = 0  # every sample below this is final
        self.bytes = 0

    def segments(self) -> list[Path]:
        return sorted(self.directory.glob(f"{_PREFIX}*{_SUFFIX}"), key=_seq_of)

    def open(self) -> None:
        """Take the directory for this process (done by the first recover or append)."""
        if self._lock_fd is not None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.directory / "LOCK", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise WalLocked(
                f"{self.directory} is in use by another connwatch process (each agent needs "
                "its own data directory: set CONNWATCH_DATA_DIR)"
            ) from None
        self._lock_fd = fd
        self.bytes = sum(p.stat().st_size for p in self.segments())

    # -- recovery -------------------------------------------------------------
    def recover(self) -> list[Sample]:
        """The samples of earlier runs not yet final, in order; numbering continues after
        them. Their segments stay until :meth:`checkpoint` passes :attr:`next_seq`."""
        self.open()
        done = 0
        frames: list[Frame] = []
        end = 0
        for seg in self.segments():
            end = max(end, _seq_of(seg))
            for frame in read_segment(seg):
                if frame.kind == CHECKPOINT:
                    done = max(done, frame.seq)
                else:
                    frames.append(frame)
                    end = max(end, frame.seq + len(frame.samples))
        out: list[Sample] = []
        for f in frames:
            if f.seq + len(f.samples) > done:
                out.extend(f.samples[max(0, done - f.seq) :])
        self.next_seq = end
        self.checkpointed = min(done, end) if out else end
        if out:
            log.warning(
                "write-ahead log %s: %d samples measured before the last stop were not yet "
                "stored; writing them now",
                self.directory,
                len(out),
            )
        return out

    # -- appending --------------------------------------------------------------
    def _file(self, first_seq: int) -> BinaryIO:
        if self._active is None or self._active_size >= self.segment_bytes:
            self._close_active()
            self._active_seq = first_seq
            path = self.directory / f"{_PREFIX}{first_seq:020d}{_SUFFIX}"
            self._active_size = _repair(path)
            self._active = path.open("ab")
            _fsync_dir(self.directory)
        return self._active

    def _close_active(self) -> None:
        with self._io:
            fh, self._active = self._active, None
            if fh is not None:
                with contextlib.suppress(OSError):
                    if self.fsync:
                        os.fdatasync(fh.fileno())
                    fh.close()

    def sync(self) -> None:
        """``fdatasync`` what was written so far (the sync thread of mode ``fsync``)."""
        with self._io:
            if self._active is not None:
                os.fdatasync(self._active.fileno())

    def _write(self, frame: bytes, first_seq: int) -> None:
        fh = self._file(first_seq)
        try:
            fh.write(frame)
            fh.flush()
        except OSError:
            # the frame may be torn: the next write starts a new (repaired) segment
            self._close_active()
            raise
        self._active_size += len(frame)
        self.bytes += len(frame)

    def append(self, samples: list[Sample], checkpoint: int | None = None) -> None:
        """One group commit: ``samples`` (numbered from :attr:`next_seq`) and, if given, a
        checkpoint, in one write. The samples keep their numbers even
        if the write fails (OSError is raised; numbering never has gaps)."""
        self.open()
        first = self.next_seq
        self.next_seq += len(samples)
        advance = checkpoint is not None and checkpoint > self.checkpointed
        frame = encode(DATA, first, samples) if samples else b""
        if advance:
            frame += encode(CHECKPOINT, checkpoint or 0, [])
        if frame:
            self._write(frame, first)
        if advance:
            self.checkpointed = checkpoint or 0
            with contextlib.suppress(OSError):
                self._drop_final_segments()

    def checkpoint(self, done: int) -> None:
        self.append([], done)

    def _drop_final_segments(self) -> None:
        """Delete every closed segment whose samples are all below the checkpoint."""
        segs = self.segments()
        for seg, nxt in itertools.pairwise(segs):
            if _seq_of(nxt) <= self.checkpointed and _seq_of(seg) != self._active_seq:
                self.bytes -= seg.stat().st_size
                seg.unlink()
        if self.checkpointed >= self.next_seq and self._active_size >= self.segment_bytes:
            self._rotate_empty()

    def _rotate_empty(self) -> None:
        """Everything is final and the active segment is full: start afresh."""
        self._close_active()
        for seg in self.segments():
            seg.unlink()
        self.bytes = 0
        self._active_seq = -1

    def close(self, *, clean: bool = False) -> None:
        """Close the log; ``clean`` (every sample final) deletes its segments."""
        self._close_active()
        if clean and self.checkpointed >= self.next_seq:
            for seg in self.segments():
                seg.unlink()
            self.bytes = 0
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = None


class GroupCommit:
    """The thread between the probes and the writer: samples become durable in groups.

    :meth:`submit` (any thread, never blocks) appends to a deque and wakes the thread
    only when a group opens. The thread then waits ``commit_s`` for more, appends the
    group (plus the writer's newest watermark, :meth:`done`) with one write, and hands
    it to ``hand_on`` (the writer's intake), in submission order. With ``wal.fsync`` a
    second thread syncs the file behind the writes.
    """

    def __init__(
        self, wal: WriteAheadLog, hand_on: Callable[[list[Sample]], None], commit_s: float
    ) -> None:
        self.wal = wal
        self.hand_on = hand_on
        self.commit_s = commit_s
        self._in: deque[Sample] = deque()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._syncer: threading.Thread | None = None
        self._dirty = threading.Event()
        self._done = wal.checkpointed
        self.groups = 0
        self.syncs = 0
        self.failed: str | None = None  # the last append error (samples still handed on)

    @property
    def final_upto(self) -> int:
        """Every sample numbered below this is final."""
        return self._done

    @property
    def pending(self) -> int:
        """Samples in the log not yet final (stored, spooled, rejected or dropped)."""
        return self.wal.next_seq + len(self._in) - self._done

    def submit(self, sample: Sample) -> None:
        q = self._in
        q.append(sample)
        if len(q) == 1:
            self._wake.set()

    def done(self, upto: int) -> None:
        """Every sample numbered below ``upto`` is final (called by the writer thread)."""
        if upto > self._done:
            self._done = upto

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="connwatch-wal", daemon=True)
        self._thread.start()
        if self.wal.fsync:
            self._syncer = threading.Thread(
                target=self._sync_loop, name="connwatch-wal-sync", daemon=True
            )
            self._syncer.start()

    def stop(self) -> None:
        """Commit what is queued and hand it on, then return."""
        if self._thread is None:
            return
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self._thread = None
        if self._syncer is not None:
            self._dirty.set()
            self._syncer.join()
            self._syncer = None

    def _sync_loop(self) -> None:
        while True:
            self._dirty.wait(0.5)
            stopping = self._stopping and self._thread is None
            if self._dirty.is_set():
                self._dirty.clear()
                try:
                    self.wal.sync()
                    self.syncs += 1
                except OSError as exc:
                    log.error("cannot sync the write-ahead log in %s: %s", self.wal.directory, exc)
            if stopping:
                return

    def _run(self) -> None:
        q = self._in
        while True:
            self._wake.clear()
            if not q and not self._stopping:
                self._wake.wait(0.5)  # idle: still write the watermark now and then
            if q and not self._stopping:
                time.sleep(self.commit_s)  # let the group fill
            group = [q.popleft() for _ in range(len(q))]
            self._commit(group)
            if self._stopping and not q:
                return

    def _commit(self, group: list[Sample]) -> None:
        try:
            self.wal.append(group, self._done)
            self._dirty.set()
            self.failed = None
        except OSError as exc:
            # A full or broken disk must not stop the measurements: the samples still go
            # to the store (they are merely not crash-safe meanwhile). Logged once per
            # change of reason.
            reason = f"{type(exc).__name__}: {exc}"
            if reason != self.failed:
                log.error(
                    "cannot write the write-ahead log in %s (%s): samples are not crash-safe "
                    "until it works again",
                    self.wal.directory,
                    reason,
                )
            self.failed = reason
        if group:
            self.groups += 1
            self.hand_on(group)


def _repair(path: Path) -> int:
    """Cut a segment we are about to append to after its last complete frame (a crash or
    a failed write may have left a torn one); returns its size."""
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        good = max((end for end, *_ in _raw_frames(fh)), default=0)
    if good < path.stat().st_size:
        os.truncate(path, good)
    return good


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
