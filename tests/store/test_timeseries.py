"""timeseries() on hand-built data: exact from raw, within 1.96 % from each rollup level."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from sqlalchemy.engine import Engine

from app.store.histogram.buckets import exact_quantiles
from app.store.read.timeseries import summary, timeseries
from tests.store.conftest import T0, close, failed, make_series, ok, store


def test_raw_buckets_are_exact(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    # three 10-minute buckets, each with totals 1..60 ms in a shuffled order, plus one error
    rng = np.random.default_rng(0)
    samples = []
    for b in range(3):
        for k, v in enumerate(rng.permutation(60) + 1):
            samples.append(ok(sid, T0 + timedelta(minutes=10 * b, seconds=10 * k), float(v)))
    samples[5] = failed(sid, samples[5].scheduled_at)  # its 6 ms value is gone
    store(engine, samples)
    with engine.connect() as conn:
        r = timeseries(conn, [sid], T0, T0 + timedelta(minutes=30), max_points=3)
    assert (r.source, r.step, len(r.points)) == ("raw", timedelta(minutes=10), 3)
    p = r.points[1]
    assert (p.n, p.n_ok, p.count, p.min_ms, p.max_ms) == (60, 60, 60, 1.0, 60.0)
    assert (p.p50_ms, p.p95_ms, p.p99_ms, p.mean_ms) == (30.0, 57.0, 60.0, 30.5)
    assert p.p5_ms == 3.0  # nearest rank ceil(0.05 * 60) = 3
    first = r.points[0]
    assert (first.n, first.n_error, first.count) == (60, 1, 59)
    vals = [s.total_ns / 1e6 for s in samples[:60] if s.total_ns is not None]
    assert [first.p50_ms, first.p95_ms, first.p99_ms] == exact_quantiles(vals)


def test_rollup_levels_agree_with_exact_percentiles(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    rng = np.random.default_rng(1)
    start = T0 - timedelta(days=3)
    vals = rng.lognormal(np.log(60), 0.3, 3 * 288)  # every 5 minutes for 3 days
    samples = [ok(sid, start + timedelta(minutes=5 * i), float(v)) for i, v in enumerate(vals)]
    store(engine, samples)
    by_time = {s.scheduled_at: s.total_ns for s in samples}
    with engine.connect() as conn:
        levels = (
            (300, "1m", timedelta(minutes=15)),
            (72, "1h", timedelta(hours=1)),
            (3, "1d", timedelta(days=1)),
        )
        for points, source, step in levels:
            r = timeseries(conn, [sid], start, T0, max_points=points)
            assert (r.source, r.step) == (source, step)
            assert sum(p.n for p in r.points) == len(samples)
            for p in r.points:
                inside = [v for t, v in by_time.items() if p.bucket <= t < p.bucket + step]
                want = exact_quantiles(inside, (0.05, 0.5, 0.95, 0.99))
                assert p.count == len(inside)
                assert p.min_ms == min(inside) / 1e6 and p.max_ms == max(inside) / 1e6
                got_q = (p.p5_ms, p.p50_ms, p.p95_ms, p.p99_ms)
                for got, w in zip(got_q, want, strict=True):
                    assert close(got, w / 1e6), (source, p.bucket, got, w)


def test_series_are_kept_apart_and_empty_buckets_are_absent(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    store(engine, [ok(ids["dedicated"], T0, 60), ok(ids["shared"], T0 + timedelta(hours=1), 40)])
    with engine.connect() as conn:
        r = timeseries(conn, list(ids.values()), T0, T0 + timedelta(hours=2), max_points=12)
    assert [(p.series_id, p.bucket, p.p50_ms) for p in r.points] == [
        (ids["dedicated"], T0, 60.0),
        (ids["shared"], T0 + timedelta(hours=1), 40.0),
    ]


def test_summary_is_one_point_per_series_over_the_whole_range(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    d, s = ids["dedicated"], ids["shared"]
    start = T0 - timedelta(days=5)
    samples = [ok(d, start + timedelta(minutes=10 * i), 10 + i % 50) for i in range(5 * 144)]
    samples += [ok(s, T0 - timedelta(hours=1) + timedelta(minutes=i), 40) for i in range(30)]
    store(engine, samples)
    with engine.connect() as conn:
        recent = summary(conn, [d, s], T0 - timedelta(hours=1), T0)
        long = summary(conn, [d, s], start, T0)
    assert recent.source == "raw" and recent.start == T0 - timedelta(hours=1)
    by = {p.series_id: p for p in recent.points}
    assert by[s].n == 30 and by[s].p50_ms == 40.0 and by[d].n == 6
    assert by[s].p5_ms == 40.0 and by[d].p5_ms == min(by[d].min_ms or 0, 60.0)
    assert long.source == "1h" and [p.series_id for p in long.points] == [d, s]
    dp = long.points[0]
    vals = [x.total_ns for x in samples[: 5 * 144] if x.total_ns is not None]
    want = exact_quantiles(vals, (0.05, 0.5, 0.99))
    assert dp.n == 720 and close(dp.p50_ms, want[1] / 1e6) and close(dp.p99_ms, want[2] / 1e6)
    assert close(dp.p5_ms, want[0] / 1e6)
