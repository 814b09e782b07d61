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
                       ``RATE_LIMIT`` (logon token buckets empty), ``OVERLOAD`` (more
                       runs due than the event loop can start on time, or a timeout
                       during which the loop itself was behind), ``PAUSED`` (a
                       maintenance window with ``pause_probes`` was open)
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
``wal_pending``        samples in the write-ahead log not yet final (stored or spooled)
``wal_recovered``      samples the write-ahead log replayed at start (a crash before)
``store_ok``           the last write to the store succeeded
``cpu_percent``        process CPU (user+system) over the last heartbeat period, percent
                       of one core
``cpu_ms_per_run``     that CPU divided by the runs of the period (includes scheduling,
                       writing and coordination: the whole agent's cost per probe run)
``overload``           the event loop's load and the share of due runs it starts:
                       ``active``, ``share``, ``demand_per_s``, ``capacity_per_s``,
                       ``factor`` (demand / capacity), ``busy``, ``loop_lag_p99_ms``,
                       ``target_busy``, ``since`` (epoch s), ``skipped``
                       (:mod:`app.agent.scheduling.overload`)
``maintenance``        true if this agent holds the store-maintenance lock
``live_agents``        agents of this site that hold their presence lock
``backend_pid``        PostgreSQL backend of this agent's coordination session
=====================  ================================================================
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LAG_WINDOW_S = 60.0
_LAG_MAX_POINTS = 200_000


def _rank(n: int, q: float) -> int:
    """Index of the nearest-rank ``q`` percentile (q in 0..100) among ``n`` sorted values."""
    return max(0, min(n - 1, round(q / 100 * n + 0.5) - 1))


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return 0.0
    return sorted_values[_rank(len(sorted_values), q)]


@dataclass
class AgentStats:
    runs: int = 0
    runs_failed: int = 0
    skipped: int = 0
    skipped_by: Counter[str] = field(default_factory=Counter)
    config_errors: int = 0
    # the lags of the window: when (monotonic s) and how much (ms), in two flat arrays
    # (one append each per run; no tuple per run for the GC to track)
    lag_at: array[float] = field(default_factory=lambda: array("d"))
    lag_ms: array[float] = field(default_factory=lambda: array("d"))
    all_lags_ms: list[float] | None = None  # benchmarks: keep every lag
    _cpu_mark: tuple[float, float, int] = field(
        default_factory=lambda: (time.monotonic(), time.process_time(), 0)
    )
    cpu_percent: float = 0.0
    cpu_ms_per_run: float | None = None

    def record_lag(self, lag_ms: float) -> None:
        self.lag_at.append(time.monotonic())
        self.lag_ms.append(lag_ms)
        if self.all_lags_ms is not None:
            self.all_lags_ms.append(lag_ms)

    def record_skip(self, reason: str) -> None:
        self.skipped += 1
        self.skipped_by[reason] += 1

    def lag_summary(self) -> dict[str, float]:
        """Nearest-rank percentiles of the window's lags (numpy partition: about a
        millisecond for 60,000 runs, where sorting them in Python held the event loop
        for 10-20 ms every heartbeat)."""
        cut = max(
            bisect_left(self.lag_at, time.monotonic() - LAG_WINDOW_S),
            len(self.lag_at) - _LAG_MAX_POINTS,
        )
        if cut > 0:
            del self.lag_at[:cut]
            del self.lag_ms[:cut]
        n = len(self.lag_ms)
        if n == 0:
            return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0, "n": 0}
        values = np.array(self.lag_ms, dtype=np.float64)
        ranks = [_rank(n, q) for q in (50, 95, 99)] + [n - 1]
        values.partition(ranks)
        p50, p95, p99, top = (float(values[k]) for k in ranks)
        return {
            "p50": round(p50, 3),
            "p95": round(p95, 3),
            "p99": round(p99, 3),
            "max": round(top, 3),
            "n": n,
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


# counters and gauges that add up over an agent's workers
_SUMMED = (
    "runs",
    "runs_failed",
    "skipped",
    "config_errors",
    "series",
    "in_flight",
    "spool_samples",
    "spool_bytes",
    "memory_backlog",
    "queued",
    "written",
    "wal_pending",
    "wal_recovered",
    "dropped",
    "rejected",
    "cpu_percent",
)
# what each worker's entry in ``workers`` keeps (the agent-level figures are above it)
_PER_WORKER = (
    "worker", "pid", "alive", "redirect_safe", "series", "runs", "skipped", "cpu_percent",
    "in_flight",
)  # fmt: skip


def _overload(docs: list[dict[str, Any]]) -> dict[str, Any]:
    demand = sum(d.get("demand_per_s") or 0.0 for d in docs)
    caps = [d.get("capacity_per_s") for d in docs]
    cap = sum(c for c in caps if c) if all(caps) else None
    active = [d for d in docs if d.get("active")]
    since = [d["since"] for d in active if d.get("since")]
    return {
        "active": bool(active),
        "share": round(sum(d["share"] * (d.get("demand_per_s") or 0) for d in docs) / demand, 4)
        if demand
        else 1.0,
        "demand_per_s": round(demand, 2),
        "capacity_per_s": round(cap, 1) if cap else None,
        "factor": round(demand / cap, 3) if cap else None,
        "busy": max((d.get("busy") or 0.0 for d in docs), default=0.0),
        "loop_lag_p99_ms": max((d.get("loop_lag_p99_ms") or 0.0 for d in docs), default=0.0),
        "since": min(since) if since else None,
        "skipped": sum(d.get("skipped") or 0 for d in docs),
        "workers_overloaded": len(active),
    }


def combine(workers: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's stats document from its workers' (:meth:`ProbeWorker.snapshot`).

    Counters and gauges add up; ``lag_ms`` percentiles are the worst worker's (a merged
    percentile cannot be computed from summaries, and the worst is what a reader needs),
    ``n`` the total; ``overload`` is active if any worker is, with demand and capacity
    summed and the share weighted by demand; ``workers`` keeps a short entry per worker
    (its number, pid, series, runs, skips, CPU, lag p99 and overload).
    """
    doc: dict[str, Any] = {k: sum(w.get(k) or 0 for w in workers) for k in _SUMMED}
    doc["cpu_percent"] = round(doc["cpu_percent"], 2)
    by: Counter[str] = Counter()
    for w in workers:
        by.update(w.get("skipped_by") or {})
    doc["skipped_by"] = dict(by)
    lags = [w.get("lag_ms") or {} for w in workers]
    doc["lag_ms"] = {
        q: max((lag.get(q, 0.0) for lag in lags), default=0.0) for q in ("p50", "p95", "p99", "max")
    }
    doc["lag_ms"]["n"] = sum(lag.get("n", 0) for lag in lags)
    doc["spool_fill"] = max((w.get("spool_fill") or 0.0 for w in workers), default=0.0)
    # runs per second of each worker's last period: 10 x cpu_percent / cpu_ms_per_run
    rates = [(w.get("cpu_percent") or 0.0, 10 * w["cpu_percent"] / w["cpu_ms_per_run"])
             for w in workers if w.get("cpu_ms_per_run") and w.get("cpu_percent")]  # fmt: skip
    per_s = sum(r for _, r in rates)
    doc["cpu_ms_per_run"] = round(10 * sum(c for c, _ in rates) / per_s, 4) if per_s else None
    doc["store_ok"] = all(w.get("store_ok", True) for w in workers)
    doc["store_error"] = next((w["store_error"] for w in workers if w.get("store_error")), None)
    doc["overload"] = _overload([w.get("overload") or {} for w in workers])
    doc["live_workers"] = max((w.get("live_workers") or 0 for w in workers), default=0) or None
    doc["workers"] = [
        {
            **{k: w.get(k) for k in _PER_WORKER if k in w},
            "lag_p99_ms": (w.get("lag_ms") or {}).get("p99"),
            "overload": {
                k: (w.get("overload") or {}).get(k)
                for k in ("active", "share", "busy", "factor", "capacity_per_s")
            },
        }
        for w in workers
    ]
    return doc
