"""What the state faults do to one instance now: the part of the fault set its pool, its
dispatchers, its process table and the listener ask about (see :mod:`app.oraclesim.faults`).
"""

from __future__ import annotations

import time

from app.oraclesim.faults import Fault, FaultSet


class Pressure:
    def __init__(self, faults: FaultSet | None, instance: str) -> None:
        self.faults = faults
        self.instance = instance

    def _state(self, kind: str, consume: bool = False) -> Fault | None:
        if self.faults is None:
            return None
        return self.faults.state(kind, self.instance, consume)

    def pool_wait_s(self) -> float:
        """Seconds a pooled-server request waits because other clients hold the pool (a
        ``pool_exhausted`` fault; its count is consumed), 0 without one."""
        f = self._state("pool_exhausted", consume=True)
        return f.delay_ms / 1000 if f is not None else 0.0

    def pool_full(self) -> bool:
        return self._state("pool_exhausted") is not None

    def dispatcher_delay_s(self) -> float:
        """Seconds one message waits in a saturated dispatcher's queue (0 if not saturated)."""
        f = self._state("dispatchers_saturated", consume=True)
        return f.delay_ms / 1000 if f is not None else 0.0

    def saturated_ns(self, since_ns: int, now_ns: int | None = None) -> int:
        """Nanoseconds of [since_ns, now_ns) during which the dispatchers were saturated by
        a fault (overlapping faults counted once)."""
        if self.faults is None:
            return 0
        now = time.perf_counter_ns() if now_ns is None else now_ns
        spans = sorted(
            (max(start, since_ns), min(end if end is not None else now, now))
            for start, end in self.faults.windows("dispatchers_saturated", self.instance)
        )
        total, reach = 0, since_ns
        for start, end in spans:
            start = max(start, reach)
            if end > start:
                total += end - start
                reach = end
        return total

    def processes_fault(self) -> Fault | None:
        """The ``processes_limit`` fault on this instance, if one is active."""
        return self._state("processes_limit")

    def down(self) -> bool:
        return self._state("instance_down") is not None
