"""Figures a web app reuses for a moment instead of reading the store for every request.

The overview's statistics (every mode's counts and percentiles of the last 15 minutes,
an hour's sparkline) and the ``/metrics`` exposition read the store for every series:
0.1-0.5 s at 300 series on the benchmark machine (docs/benchmarks.md, "serve under
load"). Wall screens, several people and a scraper asking within the same second get
the same answer: :class:`Recent` keeps a value for ``ttl_s`` seconds after it was
computed, per key, and computes one at a time (requests arriving meanwhile wait and
take that result). ``ttl_s`` 0 computes every time, still one at a time per key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
KEEP = 8  # keys kept (the overview has one per set of modes; /metrics one)


class Recent(Generic[T]):
    """Values kept ``ttl_s`` seconds after they were computed, per key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[Hashable, tuple[float, T]] = {}
        self.computed = 0

    def get(self, key: Hashable, ttl_s: float, compute: Callable[[], T]) -> T:
        asked = time.monotonic()
        with self._lock:  # one computation at a time; the waiting requests reuse it
            held = self._values.get(key)
            if held is not None and (time.monotonic() - held[0] < ttl_s or held[0] >= asked):
                return held[1]
            value = compute()
            if len(self._values) >= KEEP:
                self._values.clear()
            self._values[key] = (time.monotonic(), value)
            self.computed += 1
            return value
