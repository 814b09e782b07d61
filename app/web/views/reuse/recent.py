"""Figures a web app reuses for a moment instead of reading the store for every request.

The overview's statistics (every mode's counts and percentiles of the last 15 minutes,
an hour's sparkline) and the ``/metrics`` exposition read the store for every series:
0.1-0.5 s at 300 series on the benchmark machine (docs/benchmarks.md, "serve under
load"). A chart's, a comparison's or a sample table's reads cost 5-30 ms each. Wall
screens, several people and a scraper asking the same within the same second get the
same answer: :class:`Recent` keeps a value for ``ttl_s`` seconds after it was computed,
per key, and computes one at a time per key: requests arriving meanwhile take the value
before it if that is less than ``2 ttl_s`` old, else wait and take the new one. ``ttl_s``
0 computes every time, still one at a time per key.

Keys say everything the value depends on: the request's parameters (a preset range by
its name, so "the last hour" asked twice within the second is one read) and the
configuration read (app.web.views.lookups.config_key), so a mode or series added,
removed or changed is read at once, never answered from before the change.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
KEEP = 8  # keys kept (the overview has one per set of modes; /metrics one)
KEEP_READS = 64  # a web process's charts, comparisons and sample pages


class Recent(Generic[T]):
    """Values kept ``ttl_s`` seconds after they were computed, per key; the ``keep``
    most recently used keys."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._lock = threading.Lock()  # guards the two dicts, never held while computing
        self._busy: dict[Hashable, threading.Lock] = {}  # one computation per key at a time
        self._values: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()
        self.computed = 0

    def get(self, key: Hashable, ttl_s: float, compute: Callable[[], T]) -> T:
        asked = time.monotonic()
        with self._lock:
            busy = self._busy.setdefault(key, threading.Lock())
            held = self._values.get(key)
        recent_enough = held is not None and asked - held[0] < 2 * ttl_s
        if not busy.acquire(blocking=not recent_enough):
            # another request is reading it again: take the last value, less than 2 ttl_s
            # old, instead of queueing behind that read (each renewal used to stall the
            # requests that arrived during it: the tail of the latency under load)
            assert held is not None
            return held[1]
        try:  # the requests that waited for the lock take what the one ahead computed
            return self._fresh(key, ttl_s, asked, compute)
        finally:
            busy.release()

    def _fresh(self, key: Hashable, ttl_s: float, asked: float, compute: Callable[[], T]) -> T:
        with self._lock:
            held = self._values.get(key)
            if held is not None and (time.monotonic() - held[0] < ttl_s or held[0] >= asked):
                self._values.move_to_end(key)
                return held[1]
        try:
            value = compute()
        except BaseException:
            with self._lock:
                if key not in self._values:  # nothing kept: neither is its lock
                    self._busy.pop(key, None)
            raise
        with self._lock:
            self._values[key] = (time.monotonic(), value)
            self._values.move_to_end(key)
            while len(self._values) > self.keep:
                old, _ = self._values.popitem(last=False)
                self._busy.pop(old, None)
            self.computed += 1
        return value


class Reuse:
    """A web process's reads of charts, comparisons and sample tables, reused for
    ``CONNWATCH_READS_CACHE_S`` (``app.state.reuse``; routes take it as ``ReuseDep``)."""

    def __init__(self, ttl_s: float, keep: int = KEEP_READS) -> None:
        self.ttl_s = ttl_s
        self.recent: Recent[Any] = Recent(keep)

    def __call__(self, key: Hashable, compute: Callable[[], T]) -> T:
        value: T = self.recent.get(key, self.ttl_s, compute)
        return value
