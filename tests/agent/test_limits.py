"""Token buckets and run slots: bounded, and a run that cannot get them in time is told so."""

from __future__ import annotations

import asyncio
import time

from app.agent.scheduling.limits import Limiter, TokenBucket


def test_bucket_allows_a_burst_then_the_rate() -> None:
    b = TokenBucket(10)
    now = 100.0
    b.stamp = now
    for _ in range(10):
        assert b.wait_for(1, now) == 0
        b.take(1, now)
    assert abs(b.wait_for(1, now) - 0.1) < 1e-9
    assert b.wait_for(1, now + 0.1) < 1e-9


def test_logons_refused_when_tokens_come_too_late() -> None:
    async def go() -> tuple[int, int]:
        lim = Limiter(100, logons_per_s=1000, target_logons_per_s=5)
        latest = time.monotonic() + 0.05
        ok = [await lim.logons(1, 1, latest) for _ in range(8)]
        other = await lim.logons(2, 1, latest)  # another target has its own bucket
        return sum(ok), int(other)

    granted, other = asyncio.run(go())
    assert granted == 5  # the burst of one second's worth; the rest would come too late
    assert other == 1


def test_slots_bound_runs_in_flight() -> None:
    async def go() -> list[bool]:
        lim = Limiter(2, 100, 100)
        latest = time.monotonic() + 0.05
        got = [await lim.slot(latest), await lim.slot(latest), await lim.slot(latest)]
        lim.release()
        got.append(await lim.slot(time.monotonic() + 0.05))
        return got

    assert asyncio.run(go()) == [True, True, False, True]
