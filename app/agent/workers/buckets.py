"""Logon token buckets in shared memory, so the caps hold across an agent's workers.

A monitor must not cause the connection storm it watches for, and an agent that runs
its series in N worker processes is still one agent: ``CONNWATCH_AGENT_LOGONS_PER_S``
and ``CONNWATCH_AGENT_TARGET_LOGONS_PER_S`` bound the logons of all of them together.
The supervisor creates one :class:`SharedLogonBuckets` before it starts the workers
and hands it to each (``multiprocessing`` shares the arrays and the lock with the child
processes it spawns). Buckets are plain ``(tokens, stamp)`` pairs over
``time.monotonic()`` (one clock for every process of the host): the agent's, and one per
target in an open-addressing table of ``slots`` entries (keyed by target id; targets
beyond that share the last probe position's bucket, which only makes the cap
stricter). The lock is held for a few arithmetic operations; a worker killed while
holding it would stall the others, so they wait at most ``LOCK_WAIT_S`` and then go on
without the shared cap (logged once), rather than stop probing.
"""

from __future__ import annotations

import logging
import multiprocessing
from multiprocessing.context import BaseContext
from typing import Any

log = logging.getLogger(__name__)

LOCK_WAIT_S = 0.2


class SharedLogonBuckets:
    def __init__(
        self,
        logons_per_s: float,
        target_logons_per_s: float,
        *,
        slots: int = 4096,
        ctx: BaseContext | None = None,
    ) -> None:
        ctx = ctx or multiprocessing.get_context()
        self.rate = logons_per_s
        self.target_rate = target_logons_per_s
        self.slots = slots
        self._lock: Any = ctx.Lock()
        self._agent: Any = ctx.RawArray("d", [max(1.0, logons_per_s), 0.0])
        self._keys: Any = ctx.RawArray("q", slots)  # target id + 1; 0 = free
        self._vals: Any = ctx.RawArray("d", 2 * slots)  # tokens, stamp per slot
        self._warned = False

    def _slot(self, target_id: int) -> int:
        key = target_id + 1
        keys = self._keys
        i = (key * 2654435761) % self.slots
        for _ in range(self.slots):
            k = keys[i]
            if k == key:
                return i
            if k == 0:
                keys[i] = key
                self._vals[2 * i] = max(1.0, self.target_rate)  # a full bucket
                self._vals[2 * i + 1] = -1.0  # stamp set at first use
                return i
            i = (i + 1) % self.slots
        return i  # table full: share a bucket (stricter, never looser)

    @staticmethod
    def _refill(arr: Any, at: int, rate: float, now: float) -> float:
        tokens, stamp = arr[at], arr[at + 1]
        if stamp >= 0:
            tokens = min(max(1.0, rate), tokens + (now - stamp) * rate)
        arr[at + 1] = now
        return float(tokens)

    def reserve(self, target_id: int, n: int, now: float, latest: float) -> float | None:
        """As :meth:`app.agent.scheduling.limits.LocalLogonBuckets.reserve`, for all
        processes of the agent together."""
        if not self._lock.acquire(timeout=LOCK_WAIT_S):
            if not self._warned:
                self._warned = True
                log.error(
                    "the shared logon buckets are locked by a worker that died: logons of "
                    "this worker are capped by nothing until it is restarted"
                )
            return 0.0
        try:
            i = self._slot(target_id)
            mine = self._refill(self._agent, 0, self.rate, now)
            theirs = self._refill(self._vals, 2 * i, self.target_rate, now)
            wait = max((n - mine) / self.rate, (n - theirs) / self.target_rate, 0.0)
            if now + wait > latest:
                self._agent[0], self._vals[2 * i] = mine, theirs
                return None
            self._agent[0], self._vals[2 * i] = mine - n, theirs - n
            return wait
        finally:
            self._lock.release()
