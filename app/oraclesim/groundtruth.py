"""Ground truth: per connection, when each phase started and ended on the server and what
latency was injected, so a probe's figure can be held against what the server did.

Times are time.perf_counter_ns() (CLOCK_MONOTONIC on Linux: comparable across processes
on one machine) plus the wall-clock time the connection was accepted.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

KEEP_PHASES = 2000


@dataclass(slots=True)
class PhaseRecord:
    phase: str
    start_ns: int
    end_ns: int = 0
    injected_ns: int = 0
    outcome: str = "ok"  # ok | error:<code> | dropped | hung | break | killed


@dataclass(slots=True)
class ConnectionRecord:
    conn_id: int
    accepted_wall: float
    accepted_ns: int
    service: str | None = None
    mode: str | None = None
    user: str | None = None
    sid: int | None = None
    serial: int | None = None
    cclass: str | None = None
    purity: int | None = None
    closed_ns: int | None = None
    phases: list[PhaseRecord] = field(default_factory=list)

    def begin(self, phase: str) -> PhaseRecord:
        rec = PhaseRecord(phase, time.perf_counter_ns())
        if len(self.phases) >= KEEP_PHASES:  # long-lived sessions: keep the logon, drop old calls
            del self.phases[4 : 4 + KEEP_PHASES // 2]
        self.phases.append(rec)
        return rec


class GroundTruth:
    """Thread-safe store of the latest connections (bounded)."""

    def __init__(self, keep: int = 20000) -> None:
        self._records: deque[ConnectionRecord] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def new_connection(self) -> ConnectionRecord:
        rec = ConnectionRecord(next(self._ids), time.time(), time.perf_counter_ns())
        with self._lock:
            self._records.append(rec)
        return rec

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(r) for r in self._records]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
