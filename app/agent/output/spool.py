"""The local append-only spool: where samples wait while the store is away.

Layout: ``<data_dir>/spool/seg-<sequence>.spool`` files, replayed in sequence order.
Each batch is one frame, ``b"CWS1" | uint32 length | uint32 crc32 | JSON payload``
(the payload is a list of :func:`app.agent.output.records.to_row` rows), written with one
``write`` and made durable with ``fsync`` before :meth:`Spool.append` returns. A
frame cut short by a crash (only ever the last one) fails its length or checksum
and is dropped on replay with a warning; every complete frame is replayed.

A segment is deleted only after every frame in it was written to the store, so a
crash during replay replays it again: harmless, the store ignores samples it has.
The total size is bounded by ``max_bytes`` (``Settings.spool_max_mb``); a warning
is logged once the spool is ``warn_share`` full and an error when a batch does
not fit (the writer then keeps it in memory, see :mod:`app.agent.output.writer`).
"""

from __future__ import annotations

import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from app.agent.output.records import from_row, to_row
from app.samples import Sample

log = logging.getLogger(__name__)

MAGIC = b"CWS1"
_HEADER = struct.Struct(">4sII")
_PREFIX = "seg-"
_SUFFIX = ".spool"


class SpoolFull(RuntimeError):
    """A batch does not fit in the spool's size bound."""


def encode_frame(samples: list[Sample]) -> bytes:
    payload = json.dumps([to_row(s) for s in samples], separators=(",", ":")).encode()
    return _HEADER.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def read_frames(path: Path) -> Iterator[list[Sample]]:
    """The complete frames of one segment, in order; stops at a torn or corrupt tail."""
    with path.open("rb") as fh:
        offset = 0
        while True:
            header = fh.read(_HEADER.size)
            if not header:
                return
            if len(header) < _HEADER.size:
                log.warning("spool %s: torn frame header at byte %d dropped", path, offset)
                return
            magic, length, crc = _HEADER.unpack(header)
            payload = fh.read(length)
            if magic != MAGIC or len(payload) < length or zlib.crc32(payload) != crc:
                log.warning(
                    "spool %s: incomplete or corrupt frame at byte %d dropped (crash while "
                    "writing it)",
                    path,
                    offset,
                )
                return
            offset += _HEADER.size + length
            yield [from_row(row) for row in json.loads(payload)]


class Spool:
    """Append-only, size-bounded, replayed in order. Used by one thread at a time."""

    def __init__(
        self,
        directory: Path,
        max_bytes: int,
        *,
        segment_bytes: int = 4 * 1024 * 1024,
        warn_share: float = 0.8,
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self.warn_share = warn_share
        directory.mkdir(parents=True, exist_ok=True)
        self._active: BinaryIO | None = None
        self._active_path: Path | None = None
        self._active_size = 0
        self._warned = False
        self.bytes = sum(p.stat().st_size for p in self.segments())
        self.samples = self._count_samples()

    # -- inspection -----------------------------------------------------------
    def segments(self) -> list[Path]:
        return sorted(self.directory.glob(f"{_PREFIX}*{_SUFFIX}"))

    def _count_samples(self) -> int:
        return sum(len(frame) for seg in self.segments() for frame in read_frames(seg))

    @property
    def empty(self) -> bool:
        return self.bytes == 0 and not self.segments()

    def fill(self) -> float:
        return self.bytes / self.max_bytes if self.max_bytes else 0.0

    # -- writing --------------------------------------------------------------
    def _next_path(self) -> Path:
        segs = self.segments()
        seq = int(segs[-1].name[len(_PREFIX) : -len(_SUFFIX)]) + 1 if segs else 1
        return self.directory / f"{_PREFIX}{seq:020d}{_SUFFIX}"

    def _open_active(self) -> BinaryIO:
        if self._active is None or self._active_size >= self.segment_bytes:
            self._close_active()
            self._active_path = self._next_path()
            self._active = self._active_path.open("ab")
            self._active_size = 0
            _fsync_dir(self.directory)
        return self._active

    def _close_active(self) -> None:
        if self._active is not None:
            self._active.close()
        self._active, self._active_path, self._active_size = None, None, 0

    def append(self, samples: list[Sample]) -> None:
        """Write one batch durably (fsync) or raise :class:`SpoolFull`."""
        if not samples:
            return
        frame = encode_frame(samples)
        if self.bytes + len(frame) > self.max_bytes:
            raise SpoolFull(
                f"spool {self.directory} is full ({self.bytes / 1e6:.1f} of "
                f"{self.max_bytes / 1e6:.0f} MB, Settings.spool_max_mb)"
            )
        fh = self._open_active()
        fh.write(frame)
        fh.flush()
        os.fsync(fh.fileno())
        self._active_size += len(frame)
        self.bytes += len(frame)
        self.samples += len(samples)
        if not self._warned and self.fill() >= self.warn_share:
            self._warned = True
            log.warning(
                "spool %s is %.0f%% full (%.1f of %d MB): the store has been unreachable "
                "for a while; raise CONNWATCH_SPOOL_MAX_MB or bring the store back",
                self.directory,
                100 * self.fill(),
                self.bytes / 1e6,
                self.max_bytes // 1_000_000,
            )

    # -- replay ---------------------------------------------------------------
    def replay(self, write: Callable[[list[Sample]], None], until: float | None = None) -> int:
        """Hand every spooled batch to ``write`` in order, deleting each segment once all
        of it was written. Stops at the first exception (re-raised), or between segments
        once ``time.monotonic()`` passes ``until``; returns the samples handed over."""
        self._close_active()
        done = 0
        for seg in self.segments():
            if until is not None and time.monotonic() > until:
                return done
            size = seg.stat().st_size
            count = 0
            for frame in read_frames(seg):
                write(frame)
                count += len(frame)
                done += len(frame)
            seg.unlink()
            self.bytes = max(0, self.bytes - size)
            self.samples = max(0, self.samples - count)
        if not self.segments():
            self.bytes, self.samples = 0, 0
            if self._warned:
                log.warning("spool %s replayed and empty again", self.directory)
            self._warned = False
        return done

    def close(self) -> None:
        self._close_active()


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
