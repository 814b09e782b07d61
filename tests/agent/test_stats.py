"""Self-monitoring figures: lag percentiles over the window, CPU per run."""

from __future__ import annotations

import random

from app.agent.stats import LAG_WINDOW_S, AgentStats, percentile


def test_lag_summary_is_the_nearest_rank_of_the_window() -> None:
    rng = random.Random(5)
    values = [rng.expovariate(1.0) * 10 for _ in range(10_001)]
    st = AgentStats()
    for v in values:
        st.record_lag(v)
    ordered = sorted(values)
    got = st.lag_summary()
    assert got["n"] == len(values)
    for q in (50, 95, 99):
        assert got[f"p{q}"] == round(percentile(ordered, q), 3)
    assert got["max"] == round(ordered[-1], 3)


def test_lags_older_than_the_window_are_dropped() -> None:
    st = AgentStats()
    st.record_lag(500.0)
    st.lag_at[0] -= LAG_WINDOW_S + 1  # recorded a window ago
    st.record_lag(2.0)
    st.record_lag(4.0)
    st.record_lag(6.0)
    got = st.lag_summary()
    assert got["n"] == 3 and got["max"] == 6.0 and got["p50"] == 4.0
    assert len(st.lag_at) == len(st.lag_ms) == 3


def test_empty_window() -> None:
    assert AgentStats().lag_summary() == {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0, "n": 0}
