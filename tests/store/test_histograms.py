"""Merged per-series histograms over the 1-minute rollups, on hand-built data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from app.store.read.window_histograms import histograms
from tests.store.conftest import T0, close, failed, make_series, ok, store


def test_counts_sums_and_buckets_per_series(engine: Engine) -> None:
    ids = make_series(engine, "h", {"dedicated": 10000, "shared": 10000})
    samples = []
    for i in range(90):  # 15 minutes
        at = T0 + timedelta(seconds=10 * i)
        samples.append(ok(ids["dedicated"], at, 50.0, logon_ns=(10 if i % 3 else 40) * 1_000_000))
        samples.append(failed(ids["shared"], at))
    store(engine, samples)
    with engine.connect() as conn:
        got = histograms(
            conn, list(ids.values()), T0 + timedelta(seconds=30), T0 + timedelta(minutes=10),
            phase="logon",
        )  # fmt: skip
    assert set(got) == {ids["dedicated"]}  # shared: no successful logon, absent
    h = got[ids["dedicated"]]
    assert h.count == 60  # minutes 0..9: the start is floored to its minute
    assert close(h.sum_ms, 40 * 10.0 + 20 * 40.0, 1e-9)  # exact sums, not bucket values
    assert len(h.buckets) == 2 and [c for _, c in h.buckets] == [40, 20]
    assert close(h.buckets[0][0], 10.0) and close(h.buckets[1][0], 40.0)


def test_nothing_asked_nothing_read(engine: Engine) -> None:
    with engine.connect() as conn:
        assert histograms(conn, [], T0, T0 + timedelta(hours=1)) == {}
        with pytest.raises(ValueError, match="phase"):
            histograms(conn, [1], T0, T0 + timedelta(hours=1), phase="connect")
