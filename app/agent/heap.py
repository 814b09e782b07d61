"""Keep Python's cyclic garbage collector from pausing the event loop for long.

A full (generation 2) collection walks every tracked object of the process. With a
thousand kept Oracle sessions plus the web stack's modules that is about half a
million objects and took 160-210 ms on the benchmark machine, every few seconds
(samples wait up to a second for their batch, so they survive into the old
generation and keep triggering it). Every run due during such a pause starts late.

:class:`HeapSettler` moves the long-lived objects out of the collector's way
(``gc.freeze()``, the technique CPython documents for exactly this): once when the
agent starts, and again when kept sessions (sessionping, commit, poolacquire) have
logged on and no more have for a few seconds. Each settle is ``gc.unfreeze(); gc.collect();
gc.freeze()``, so garbage from before is collected first and nothing leaks: objects
frozen earlier that died since are collected at the next settle. Later collections
walk only what was allocated since, and stay short.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)


def settle() -> float:
    """Collect everything, then exempt the survivors from later collections.

    Returns the pause in milliseconds.
    """
    t0 = time.perf_counter_ns()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return (time.perf_counter_ns() - t0) / 1e6


class HeapSettler:
    """Settles the heap when the kept sessions have been renewed and then held still.

    ``observe(logons)`` is called about once a second with the scheduler's count of
    logons of kept sessions so far (:attr:`SeriesScheduler.kept_logons`); once it has
    not grown for ``quiet_s`` it settles, at most once every ``min_gap_s`` (the
    settle at :meth:`start` does not count).
    """

    def __init__(self, quiet_s: float = 3.0, min_gap_s: float = 60.0) -> None:
        self.quiet_s = quiet_s
        self.min_gap_s = min_gap_s
        self.settled_at_built = 0
        self._last_built = 0
        self._changed_at = time.monotonic()
        self._last_settle = float("-inf")
        self.settles = 0
        self.last_pause_ms = 0.0

    def start(self) -> None:
        self._settle(0)
        self._last_settle = float("-inf")

    def observe(self, built: int, now: float | None = None) -> bool:
        """Settle if due; True if it did (the caller's thread pauses for the collection)."""
        now = time.monotonic() if now is None else now
        if built != self._last_built:
            self._last_built = built
            self._changed_at = now
            return False
        if built == self.settled_at_built:
            return False
        if now - self._changed_at < self.quiet_s or now - self._last_settle < self.min_gap_s:
            return False
        self._settle(built)
        self._last_settle = now
        return True

    def release(self) -> None:
        """Hand the frozen objects back to the collector (the agent stopped)."""
        gc.unfreeze()

    def _settle(self, built: int) -> None:
        self.last_pause_ms = settle()
        self.settled_at_built = built
        self.settles += 1
        log.debug("heap settled (%d kept-session logons): %.1f ms", built, self.last_pause_ms)
