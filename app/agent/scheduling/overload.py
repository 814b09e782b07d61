"""Graceful overload: run as many runs as the event loop can start on time, skip the rest.

When demand exceeds what one event loop can do, an agent that simply tries everything
collapses: callbacks queue up, every run starts late, replies are read late, runs hit
their deadlines, and the agent records TIMEOUT samples that a user reads as the
database's fault (issue 16: at twice its capacity the old agent completed 13 % of its
runs). This module keeps the loop below saturation instead:

- :class:`LoopMonitor` measures the loop itself. **Busy** is the share of wall time
  spent outside the selector's ``select()`` (running callbacks, or waiting for the GIL
  or for a CPU: on a crowded host the process is descheduled while it has work, which
  counts as busy, as it should). **Lag** is how late a sentinel timer (every
  ``SENTINEL_S``) fires; its lateness beyond ``STALL_FLOOR_S`` (20 ms of jitter, as on a
  crowded host) summed over time is the **stall** clock, which tells how long during
  any interval the loop was stuck (:meth:`LoopMonitor.stall`).
- :class:`OverloadControl` turns that into the **share** of due runs to start, once per
  ``WINDOW_S``, by feedback: once the loop is busier than its target utilisation
  (``target_busy``, 0.9 by default, lowered while the loop's lag p99 stays above
  ``lag_target_ms``) the share is multiplied by target / busy (by 2/3 while the loop is
  saturated), and it grows back the same way, by at most ``MAX_RISE`` per window, when
  demand falls. No cost model is needed: whatever the runs, the skips and the writer
  cost, the loop settles at its target. The capacity shown (runs/s at the target) and
  the overload factor (demand / capacity, demand = the instants due per second of every
  series the agent runs) are read from the same windows.
- :meth:`OverloadControl.admit` gives each series a credit: every instant adds the
  share, a run takes 1. So with share 0.5 every series runs every other instant,
  exactly, and the skipped instants of all series are spread evenly over time (each
  series' credit starts at a hash of its id); no series starves.

- **Late starts** are the second signal: the scheduler counts the runs whose real start
  (the run's first step, after its run slot and logon token) would be more than
  ``late_s`` (15 ms) late. While the share is below 1 such a run is skipped
  (``OVERLOAD``, "would have started N ms late"), so the runs executed under overload
  start within ``late_s`` of their instant; when more than ``LATE_SHARE`` of a window's
  runs are late the share leaves 1 (so the late runs are skipped), and returns to 1
  only after ``CALM_WINDOWS`` calm windows. Several worker processes, the
  simulator and the store on few cores make a loop late before its busy share says so.
  A series whose admitted runs are skipped as late ``OWED_AFTER`` times in a row is owed
  one run (scheduler), so a phase that keeps colliding with something cannot starve.

The scheduler records the instants not admitted as SKIPPED samples with code
``OVERLOAD``, and turns a TIMEOUT during which the loop itself stalled for a good part of
the deadline into a SKIPPED ``OVERLOAD`` sample: the agent's lateness is never recorded
as the target's timeout.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

SENTINEL_S = 0.01  # the lag sentinel's period
STALL_FLOOR_S = 0.02  # lateness up to this is jitter (a crowded host), not a stall
WINDOW_S = 0.5  # how often the share is recomputed
TARGET_BUSY = 0.9  # utilisation the loop is kept at while overloaded
MIN_TARGET_BUSY = 0.6
LAG_TARGET_MS = 10.0  # lag p99 above this lowers the utilisation target
STALL_SHARE = 0.2  # a TIMEOUT whose run saw the loop stall this share of the deadline
LATE_S = 0.015  # while overloaded, a run that would start later than this is skipped
LATE_SHARE = 0.05  # more late starts than this share of a window's runs: overloaded
LATE_MIN_BUSY = 0.5  # ... if the loop was this busy (else the lateness is the host's)
LATE_SHARE_MAX = 0.99  # the share while late starts are seen (below 1: they are skipped)
CALM_WINDOWS = 6  # windows without late starts before the share may return to 1
SATURATED = 0.98  # busy share at which the loop has no idle time left to measure
MAX_RISE = 1.25  # the share grows by at most this factor per window
MIN_SHARE = 0.01  # even at 100x overload, every series still runs now and then
SMOOTHING = 0.5  # weight of the newest window in the smoothed busy share
MIN_RUNS = 10  # fewer runs than this in a window cannot be what keeps the loop busy


def initial_credit(series_id: int) -> float:
    """A series' starting credit in [0, 1): spreads which series run at a given instant."""
    d = hashlib.blake2b(f"connwatch-credit-{series_id}".encode(), digest_size=4).digest()
    return int.from_bytes(d, "big") / 2**32


class LoopMonitor:
    """Busy share, lag and stall clock of one asyncio event loop (see module docs)."""

    def __init__(self) -> None:
        self.idle_s = 0.0  # wall time spent inside select(), summed
        self.stall_s = 0.0  # sentinel lateness, summed: the loop's "behind" clock
        self._lags: array[float] = array("d")  # sentinel lateness (ms) of this window
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._restore: Callable[[], None] | None = None
        self.measures_busy = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        selector = getattr(loop, "_selector", None)  # BaseSelectorEventLoop (CPython)
        select = getattr(selector, "select", None)
        if selector is not None and callable(select):
            perf = time.perf_counter

            def timed_select(timeout: float | None = None) -> Any:
                t0 = perf()
                try:
                    return select(timeout)
                finally:
                    self.idle_s += perf() - t0

            selector.select = timed_select
            self.measures_busy = True

            def restore() -> None:
                selector.select = select

            self._restore = restore
        self._arm(loop.time())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._restore is not None:
            self._restore()
            self._restore = None

    def _arm(self, due: float) -> None:
        assert self._loop is not None
        self._handle = self._loop.call_at(due + SENTINEL_S, self._tick, due + SENTINEL_S)

    def _tick(self, due: float) -> None:
        assert self._loop is not None
        now = self._loop.time()
        late = max(0.0, now - due)
        self.stall_s += max(0.0, late - STALL_FLOOR_S)
        self._lags.append(1000 * late)
        self._arm(now)

    def stall(self) -> float:
        """The stall clock now (seconds); the difference over an interval is how long the
        loop was behind during it."""
        return self.stall_s

    def take_lags(self) -> array[float]:
        lags, self._lags = self._lags, array("d")
        return lags


@dataclass
class Window:
    """What one control window saw."""

    wall_s: float
    busy: float  # 0..1
    lag_p99_ms: float
    executed: int
    demand_per_s: float
    late: int = 0  # runs whose start was more than ``late_s`` late (run or skipped)


class OverloadControl:
    """The share of due runs to start; see the module docs."""

    def __init__(
        self,
        monitor: LoopMonitor,
        demand_per_s: Callable[[], float],
        *,
        target_busy: float = TARGET_BUSY,
        lag_target_ms: float = LAG_TARGET_MS,
        late_s: float = LATE_S,
        stall_share: float = STALL_SHARE,
    ) -> None:
        self.monitor = monitor
        self.demand_per_s = demand_per_s
        self.max_target = target_busy
        self.target = target_busy
        self.lag_target_ms = lag_target_ms
        self.late_s = late_s
        self.stall_share = stall_share
        self.share = 1.0
        self.executed = 0  # runs started since the last window (the scheduler counts)
        self.late = 0  # of the runs due since then, those that would start > late_s late
        self.calm = CALM_WINDOWS  # consecutive windows without late starts
        self.busy = 0.0  # smoothed
        self._first = True
        self.lag_p99_ms = 0.0
        self.capacity_per_s: float | None = None  # runs/s the loop sustains at the target
        self.overloaded_since: float | None = None  # wall clock (time.time())
        self.skipped = 0  # instants recorded as OVERLOAD since start
        self.message = "agent overloaded (not the target's fault)"  # of the OVERLOAD samples
        self._mark = (time.monotonic(), monitor.idle_s)
        self._task: asyncio.Task[None] | None = None

    # -- per instant ----------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.share < 1.0

    def admit(self, job: Any) -> bool:
        """Add the share to the series' credit; run if a whole run's worth is there."""
        credit: float = job.credit + self.share
        if credit >= 1.0:
            job.credit = credit - 1.0
            return True
        job.credit = credit
        return False

    def timed_out_by_stall(self, stall_s: float, deadline_s: float) -> bool:
        """Was a TIMEOUT the loop's fault? (it stalled a good part of the deadline)"""
        return stall_s >= self.stall_share * deadline_s

    # -- per window -------------------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="connwatch-overload")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(WINDOW_S)
            w = self.measure()
            self.update(w)
            log.debug(
                "window %.2f s: busy %.3f, lag p99 %.1f ms, %d runs, %d late, demand %.0f/s "
                "-> share %.3f (target %.2f)",
                w.wall_s, w.busy, w.lag_p99_ms, w.executed, w.late, w.demand_per_s,
                self.share, self.target,
            )  # fmt: skip

    def measure(self) -> Window:
        now, idle = time.monotonic(), self.monitor.idle_s
        t0, idle0 = self._mark
        self._mark = (now, idle)
        wall = max(1e-6, now - t0)
        lags = self.monitor.take_lags()
        p99 = float(np.percentile(np.frombuffer(lags), 99)) if len(lags) else 0.0
        busy = min(1.0, max(0.0, 1.0 - (idle - idle0) / wall)) if self.monitor.measures_busy else 0
        executed, self.executed = self.executed, 0
        late, self.late = self.late, 0
        return Window(wall, busy, p99, executed, self.demand_per_s(), late)

    def update(self, w: Window) -> None:
        """Feedback on the loop's busy share and on late starts (see :meth:`_wanted`).

        Busy is smoothed over about a second (``SMOOTHING``): a single slow window (a GC
        pass, the host busy elsewhere) must not shed a burst of runs. The lag decides how
        busy the loop may be: bursts (a batch encoded, a GC pass) make a loop at 90 %
        late more often on some hosts than on others. Only a loop near its own limit
        counts: on a crowded host the lag is high whatever we do."""
        self.busy = w.busy if self._first else SMOOTHING * w.busy + (1 - SMOOTHING) * self.busy
        self._first = False
        self.lag_p99_ms = w.lag_p99_ms
        busy = self.busy
        if w.lag_p99_ms > self.lag_target_ms and busy >= self.target - 0.05:
            self.target = max(MIN_TARGET_BUSY, self.target - 0.01)
        elif w.lag_p99_ms < self.lag_target_ms or busy < self.target - 0.2:
            self.target = min(self.max_target, self.target + 0.01)
        rate = w.executed / w.wall_s
        if busy > 0 and w.executed > 0:
            est = rate * self.target / busy  # runs/s at the target, all overhead in
            prev = self.capacity_per_s
            self.capacity_per_s = est if prev is None else 0.5 * (prev + est)
        wanted = self._wanted(w, busy)
        if wanted is None:
            return
        self.share = max(MIN_SHARE, min(1.0, wanted))
        if self.share > 0.995:
            self.share = 1.0
        if self.active and self.overloaded_since is None:
            self.overloaded_since = time.time()
        elif not self.active:
            self.overloaded_since = None
        self.message = (
            f"agent overloaded: {w.demand_per_s:.0f} runs/s due, about "
            f"{self.capacity_per_s or 0:.0f} runs/s possible, so {100 * self.share:.0f} % of "
            "each series' instants run (not the target's fault)"
        )

    def _wanted(self, w: Window, busy: float) -> float | None:
        """The next share, or None to keep it. Two signals:

        - **busy**: share x target / busy each window, so the loop settles at the target
          whatever the runs, the skips and the rest cost (the fixed point is stable: the
          share moves less than the busy error); a saturated loop (busy >=
          ``SATURATED``) says nothing about by how much: cut by a third;
        - **late starts**: more than ``LATE_SHARE`` of the window's runs would have
          started over ``late_s`` late while the loop was at least ``LATE_MIN_BUSY``
          busy (several worker processes, the simulator and the store on few cores
          make a loop late before it is busy by its own clock): the share leaves 1, so
          that late runs are skipped at their start (the scheduler skips runs over
          ``late_s`` late only while the share is below 1), and may return to 1 only
          after ``CALM_WINDOWS`` windows without late starts. Late starts neither cut
          the share nor stop it rising (the busy share does that): they come in bursts
          (a stall of the loop or the host) that shedding would not prevent; cutting on
          them left the loop idle for seconds, and holding the share while they lasted
          ratcheted it down (busy cuts, no rises)."""
        due = w.executed + w.late
        late_share = w.late / due if due else 0.0
        lagging = late_share > LATE_SHARE and busy >= LATE_MIN_BUSY and due >= MIN_RUNS
        self.calm = 0 if lagging else self.calm + 1
        if not self.active and busy < self.target and not lagging:
            return None  # headroom: nothing to shed
        if w.executed < MIN_RUNS and busy >= self.target and not lagging:
            return None  # the loop is busy with something else: shedding would not help
        if busy >= SATURATED:
            wanted = self.share * 2 / 3
        else:
            wanted = self.share * self.target / max(busy, 0.05)
        if lagging:  # leave 1: late runs are skipped from now on
            wanted = min(wanted, LATE_SHARE_MAX)
        wanted = min(wanted, self.share * MAX_RISE)  # a lull must not let a flood in
        if self.calm < CALM_WINDOWS:
            wanted = min(wanted, LATE_SHARE_MAX)  # stay active (late runs skipped) a while
        return wanted

    def snapshot(self) -> dict[str, Any]:
        """The ``overload`` document of the agent's stats (see docs/agent.md)."""
        demand = self.demand_per_s()
        cap = self.capacity_per_s
        return {
            "active": self.active,
            "share": round(self.share, 4),
            "demand_per_s": round(demand, 2),
            "capacity_per_s": round(cap, 1) if cap is not None else None,
            "factor": round(demand / cap, 3) if cap else None,
            "busy": round(self.busy, 3),
            "loop_lag_p99_ms": round(self.lag_p99_ms, 2),
            "target_busy": round(self.target, 3),
            "since": self.overloaded_since,
            "skipped": self.skipped,
        }
