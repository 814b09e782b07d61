"""Latency model: a lognormal per service, mode and phase, with slow drift over the day,
rare spikes and load sensitivity (concurrent logons slow each other, dedicated most).

It shapes the numbers a probe sees; it is not a performance model of Oracle.
"""

from __future__ import annotations

import math
import random
import time

from app.oraclesim.config import LatencyProfile

LOAD_PHASES = frozenset({"accept", "negotiate", "logon", "logoff"})


class LatencyModel:
    def __init__(self, enabled: bool, seed: int | None = None) -> None:
        self.enabled = enabled
        self.rng = random.Random(seed)

    def drift_factor(self, now: float | None = None) -> float:
        """1 +- drift along a sinusoid with a 24 h period (peak mid-afternoon UTC)."""
        t = time.time() if now is None else now
        return math.sin(2 * math.pi * ((t % 86400) / 86400 - 0.375))

    def sample_ms(
        self,
        profile: LatencyProfile,
        phase: str,
        concurrent_logons: int = 1,
        now: float | None = None,
    ) -> float:
        """Milliseconds to inject for one phase (0 when latency is off)."""
        if not self.enabled:
            return 0.0
        ph = profile.phases.get(phase)
        if ph is None or ph.median_ms <= 0:
            return 0.0
        value = (
            ph.median_ms * math.exp(self.rng.gauss(0.0, ph.spread)) if ph.spread else ph.median_ms
        )
        value *= 1.0 + profile.drift * self.drift_factor(now)
        if profile.spike_probability and self.rng.random() < profile.spike_probability:
            value *= profile.spike_factor
        if phase in LOAD_PHASES and concurrent_logons > 1:
            value *= 1.0 + profile.load * (concurrent_logons - 1)
        return max(value, 0.0)
