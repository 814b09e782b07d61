"""Bounded concurrency: runs in flight, and logons per second (globally and per target).

A monitor must never cause the connection storm it watches for. Every run that will
log on takes a token from the agent's bucket and from its target's bucket (token
buckets, burst = one second's worth). The buckets are the process's own
(:class:`LocalLogonBuckets`) or, for an agent with several worker processes, in shared
memory (:class:`app.agent.workers.buckets.SharedLogonBuckets`), so the caps hold for the
agent as a whole. A run waits for its tokens and for a free
slot among ``max_in_flight`` only until its latest start (its scheduled instant
plus the grace); past that it is not run but recorded as SKIPPED (``RATE_LIMIT``
or ``BUSY``), so overload shows in the data instead of silently thinning it.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol


class TokenBucket:
    def __init__(self, rate: float, burst: float | None = None) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate!r}")
        self.rate = rate
        self.burst = max(1.0, burst if burst is not None else rate)
        self.tokens = self.burst
        self.stamp = time.monotonic()

    def _refill(self, now: float) -> None:
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait_for(self, n: float, now: float) -> float:
        """Seconds until ``n`` tokens are there (0 if now)."""
        self._refill(now)
        return max(0.0, (n - self.tokens) / self.rate)

    def take(self, n: float, now: float) -> None:
        """Take ``n`` tokens (the balance may go negative: a reservation)."""
        self._refill(now)
        self.tokens -= n


class LogonBuckets(Protocol):
    def reserve(self, target_id: int, n: int, now: float, latest: float) -> float | None:
        """Take ``n`` tokens from the agent's and the target's bucket if both have them by
        ``latest`` (monotonic s); the seconds to wait for them, or None (nothing taken)."""
        ...


class LocalLogonBuckets:
    """The buckets of one process."""

    def __init__(self, logons_per_s: float, target_logons_per_s: float) -> None:
        self.bucket = TokenBucket(logons_per_s)
        self.target_rate = target_logons_per_s
        self.targets: dict[int, TokenBucket] = {}

    def _target(self, target_id: int) -> TokenBucket:
        b = self.targets.get(target_id)
        if b is None:
            b = self.targets[target_id] = TokenBucket(self.target_rate)
        return b

    def reserve(self, target_id: int, n: int, now: float, latest: float) -> float | None:
        tb = self._target(target_id)
        wait = max(self.bucket.wait_for(n, now), tb.wait_for(n, now))
        if now + wait > latest:
            return None
        self.bucket.take(n, now)
        tb.take(n, now)
        return wait


class Limiter:
    def __init__(
        self,
        max_in_flight: int,
        logons_per_s: float,
        target_logons_per_s: float,
        buckets: LogonBuckets | None = None,
    ):
        self.slots = asyncio.Semaphore(max_in_flight)
        self.max_in_flight = max_in_flight
        self.buckets = buckets or LocalLogonBuckets(logons_per_s, target_logons_per_s)
        self.in_flight = 0

    async def logons(self, target_id: int, n: int, latest: float) -> bool:
        """Wait for ``n`` logon tokens; False (nothing taken) if they come after ``latest``."""
        if n <= 0:
            return True
        wait = self.buckets.reserve(target_id, n, time.monotonic(), latest)
        if wait is None:
            return False
        if wait > 0:
            await asyncio.sleep(wait)
        return True

    async def slot(self, latest: float) -> bool:
        """Take a run slot, waiting until ``latest`` at most."""
        if not self.slots.locked():
            await self.slots.acquire()
        else:
            left = latest - time.monotonic()
            if left <= 0:
                return False
            try:
                async with asyncio.timeout(left):
                    await self.slots.acquire()
            except TimeoutError:
                return False
        self.in_flight += 1
        return True

    def release(self) -> None:
        self.in_flight -= 1
        self.slots.release()
