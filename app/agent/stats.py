"""The agent's self-monitoring figures, written as JSON into its ``agents`` row.

Keys of ``agents.stats`` (every heartbeat, about once a second):

=====================  ================================================================
``lag_ms``             scheduler lag (actual start minus scheduled instant) of the runs
                       of the last ``LAG_WINDOW_S`` seconds: ``p50``, ``p95``, ``p99``,
                       ``max``, ``n``
``runs``               runs executed since the agent started (a sample with timings)
``runs_failed``        of those, runs that ended in ERROR or TIMEOUT
``skipped``            runs recorded as SKIPPED since start; ``skipped_by`` per reason:
                       ``LATE`` (started past its grace), ``OVERRUN`` (previous run of
                       the series still in flight), ``BUSY`` (no free run slot),
                       ``RATE_LIMIT`` (logon token buckets empty)
``config_errors``      runs that produced a CONFIG error sample (series not buildable)
``series``             series this agent runs now
``in_flight``          runs executing now
``spool_samples``      samples waiting in the local spool (``spool_bytes``, ``spool_fill``
                       0..1 of ``Settings.spool_max_mb``)
``memory_backlog``     samples held in memory because even the spool was full
``queued``             samples taken but not yet handed to the writer's batch
``written``            samples stored by this agent (duplicates excluded)
``dropped``            samples lost because spool and memory backlog were full (0!)
``rejected``           samples the store refused (kept in ``<spool>/rejected/``)
``store_ok``           the last write to the store succeeded
``cpu_percent``        process CPU (user+system) over the last heartbeat period, percent
                       of one core
``cpu_ms_per_run``     that CPU divided by the runs of the period (includes scheduling,
                       writing and coordination: the whole agent's cost per probe run)
``maintenance``        true if this agent holds the store-maintenance lock
``live_agents``        agents of this site that hold their presence lock
``backend_pid``        PostgreSQL backend of this agent's coordination session
=====================  ================================================================
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

LAG_WINDOW_S = 60.0
_LAG_MAX_POINTS = 200_000


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


@dataclass
class AgentStats:
    runs: int = 0
    runs_failed: int = 0
    skipped: int = 0
    skipped_by: Counter[str] = field(default_factory=Counter)
    config_errors: int = 0
    lags: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=_LAG_MAX_POINTS))
    all_lags_ms: list[float] | None = None  # benchmarks: keep every lag
    _cpu_mark: tuple[float, float, int] = field(
        default_factory=lambda: (time.monotonic(), time.process_time(), 0)
    )
    cpu_percent: float = 0.0
    cpu_ms_per_run: float | None = None

    def record_lag(self, lag_ms: float) -> None:
        self.lags.append((time.monotonic(), lag_ms))
        if self.all_lags_ms is not None:
            self.all_lags_ms.append(lag_ms)

    def record_skip(self, reason: str) -> None:
        self.skipped += 1
        self.skipped_by[reason] += 1

    def lag_summary(self) -> dict[str, float]:
        horizon = time.monotonic() - LAG_WINDOW_S
        while self.lags and self.lags[0][0] < horizon:
            self.lags.popleft()
        values = sorted(v for _, v in self.lags)
        return {
            "p50": round(percentile(values, 50), 3),
            "p95": round(percentile(values, 95), 3),
            "p99": round(percentile(values, 99), 3),
            "max": round(values[-1], 3) if values else 0.0,
            "n": len(values),
        }

    def sample_cpu(self) -> None:
        wall0, cpu0, runs0 = self._cpu_mark
        wall, cpu = time.monotonic(), time.process_time()
        if wall - wall0 > 0:
            self.cpu_percent = round(100 * (cpu - cpu0) / (wall - wall0), 2)
        runs = self.runs + self.skipped
        self.cpu_ms_per_run = (
            round(1000 * (cpu - cpu0) / (runs - runs0), 4) if runs > runs0 else None
        )
        self._cpu_mark = (wall, cpu, runs)

    def snapshot(self) -> dict[str, Any]:
        self.sample_cpu()
        return {
            "lag_ms": self.lag_summary(),
            "runs": self.runs,
            "runs_failed": self.runs_failed,
            "skipped": self.skipped,
            "skipped_by": dict(self.skipped_by),
            "config_errors": self.config_errors,
            "cpu_percent": self.cpu_percent,
            "cpu_ms_per_run": self.cpu_ms_per_run,
        }
