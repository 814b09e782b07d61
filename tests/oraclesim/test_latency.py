"""Latency model: distribution, drift, spikes, load sensitivity, and what the driver sees
with latency on."""

from __future__ import annotations

import statistics
import time

from app.oraclesim import SimConfig
from app.oraclesim.config import LatencyProfile, PhaseLatency, default_latency
from app.oraclesim.latency import LatencyModel

from ._driver import connect


def _flat(median: float, **kw: float) -> LatencyProfile:
    return LatencyProfile(
        phases={"logon": PhaseLatency(median, 0.0)}, drift=0.0, spike_probability=0.0, **kw
    )


def test_off_injects_nothing():
    assert LatencyModel(enabled=False).sample_ms(default_latency()["dedicated"], "logon") == 0.0


def test_lognormal_median_and_spread():
    model = LatencyModel(enabled=True, seed=1)
    prof = LatencyProfile(
        phases={"logon": PhaseLatency(20.0, 0.3)}, drift=0.0, spike_probability=0.0
    )
    values = [model.sample_ms(prof, "logon") for _ in range(4000)]
    assert 19.0 < statistics.median(values) < 21.0
    assert min(values) < 15 < 27 < max(values)


def test_drift_follows_the_day():
    model = LatencyModel(enabled=True, seed=1)
    prof = LatencyProfile(
        phases={"logon": PhaseLatency(10.0, 0.0)}, drift=0.2, spike_probability=0.0
    )
    peak = model.sample_ms(prof, "logon", now=15 * 3600.0)  # 15:00 UTC
    trough = model.sample_ms(prof, "logon", now=3 * 3600.0)
    assert abs(peak - 12.0) < 1e-6 and abs(trough - 8.0) < 1e-6


def test_spikes_are_rare_and_large():
    model = LatencyModel(enabled=True, seed=3)
    prof = _flat(10.0)
    prof.spike_probability, prof.spike_factor = 0.01, 8.0
    values = [model.sample_ms(prof, "logon") for _ in range(5000)]
    spikes = [v for v in values if v > 10.0]
    assert 20 <= len(spikes) <= 90
    assert all(v == 80.0 for v in spikes)


def test_concurrent_logons_slow_each_other_dedicated_most():
    model = LatencyModel(enabled=True)
    lat = default_latency()
    for prof in lat.values():
        prof.drift = prof.spike_probability = 0.0
        for ph in prof.phases.values():
            ph.spread = 0.0
    ratio = {
        m: model.sample_ms(p, "logon", 5) / model.sample_ms(p, "logon", 1) for m, p in lat.items()
    }
    assert ratio["dedicated"] > ratio["pooled"] > ratio["shared"] > 1.0
    assert (
        model.sample_ms(lat["dedicated"], "ping", 5) == lat["dedicated"].phases["ping"].median_ms
    )  # calls are not load-sensitive


def test_default_connect_disconnect_medians_follow_the_seed():
    totals = {
        m: sum(p.phases[ph].median_ms for ph in ("accept", "negotiate", "logon", "logoff"))
        for m, p in default_latency().items()
    }
    assert round(totals["dedicated"]) == 61
    assert round(totals["shared"]) == 44
    assert round(totals["pooled"]) == 46


def test_driver_sees_the_injected_logon_latency(oraclesim_factory):
    cfg = SimConfig.default()
    prof = cfg.services["FREEPDB1"].latency["shared"]
    prof.drift = prof.spike_probability = 0.0
    for ph in prof.phases.values():
        ph.median_ms, ph.spread = 0.0, 0.0
    prof.phases["logon"].median_ms = 40.0
    sim = oraclesim_factory(cfg)
    t0 = time.perf_counter_ns()
    conn = connect(sim, mode="shared")
    elapsed = time.perf_counter_ns() - t0
    conn.close()
    logon = next(p for p in sim.ground_truth()[-1]["phases"] if p["phase"] == "logon")
    assert logon["injected_ns"] == 40_000_000
    assert elapsed >= logon["end_ns"] - logon["start_ns"] >= 40_000_000
