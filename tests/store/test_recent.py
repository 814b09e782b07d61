"""The last minutes per series: counts, the newest sample, stored per-minute points."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from app.store.read.recent import activity, minute_points
from tests.store.conftest import T0, close, failed, make_series, ok, store


def test_activity_counts_the_last_5_and_15_minutes(engine: Engine) -> None:
    ids = make_series(engine, "r", {"dedicated": 10000, "shared": 10000})
    now = T0 + timedelta(minutes=30)
    samples = []
    for i in range(180):  # 30 minutes at 10 s; shared fails between minutes 20 and 27
        at = T0 + timedelta(seconds=10 * i)
        samples.append(ok(ids["dedicated"], at, 10.0))
        bad = T0 + timedelta(minutes=20) <= at < T0 + timedelta(minutes=27)
        samples.append(failed(ids["shared"], at) if bad else ok(ids["shared"], at, 10.0))
    samples.append(ok(ids["dedicated"], now + timedelta(seconds=5), 10.0))  # future: left out
    store(engine, samples)
    with engine.connect() as conn:
        got = activity(conn, list(ids.values()), now)
        assert activity(conn, [], now) == {}
    d, s = got[ids["dedicated"]], got[ids["shared"]]
    assert d.last_at == now - timedelta(seconds=10)
    assert (d.n_15m, d.n_5m, d.ok_5m, d.failed_15m) == (90, 30, 30, 0)
    assert (s.n_15m, s.n_5m, s.ok_5m, s.failed_15m) == (90, 30, 18, 42)


def test_minute_points_are_the_stored_rows(engine: Engine) -> None:
    ids = make_series(engine, "m")
    sid = ids["dedicated"]
    store(
        engine,
        [ok(sid, T0 + timedelta(seconds=10 * i), 10.0 + i // 6) for i in range(30)],
    )
    with engine.connect() as conn:
        pts = minute_points(
            conn, [sid], T0 + timedelta(seconds=70), T0 + timedelta(minutes=4), phase="total"
        )
        with pytest.raises(ValueError, match="phase"):
            minute_points(conn, [sid], T0, T0 + timedelta(minutes=1), phase="nope")
    assert [p.bucket for p in pts] == [T0 + timedelta(minutes=k) for k in (1, 2, 3)]
    assert all(p.n == p.count == 6 for p in pts)
    assert [close(p.p50_ms, 11.0 + k) for k, p in enumerate(pts)] == [True] * 3
