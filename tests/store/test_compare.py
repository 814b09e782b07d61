"""compare(): per-mode distributions and the ratio of medians with its interval."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from sqlalchemy.engine import Engine

from app.store.histogram.buckets import exact_quantiles
from app.store.read.compare import compare
from tests.store.conftest import T0, close, make_series, ok, store


def test_shared_is_faster_and_pooled_is_not_different(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 30000, "shared": 30000, "pooled": 30000})
    rng = np.random.default_rng(5)
    medians = {"dedicated": 61.0, "shared": 44.0, "pooled": 61.0}
    values: dict[str, list[float]] = {}
    samples = []
    for mode, med in medians.items():
        values[mode] = [float(v) for v in rng.lognormal(np.log(med), 0.15, 240)]
        for i, v in enumerate(values[mode]):
            samples.append(ok(ids[mode], T0 + timedelta(seconds=30 * i), v))
    store(engine, samples)
    with engine.connect() as conn:
        tid = conn.exec_driver_sql("select id from targets").scalar_one()
        r = compare(conn, tid, T0, T0 + timedelta(hours=2), seed=1)
    assert r.baseline == "dedicated" and r.source == "1m" and r.block == timedelta(minutes=1)
    by = {m.kind: m for m in r.modes}
    for mode, vals in values.items():
        m = by[mode]
        ns = [int(v * 1e6) / 1e6 for v in vals]
        assert m.n == m.count == 240 and m.availability == 1.0
        want = exact_quantiles(ns)
        assert close(m.p50_ms, want[0]) and close(m.p95_ms, want[1]) and close(m.p99_ms, want[2])
        assert sum(c for _, c in m.histogram) == 240
    sh, po = by["shared"], by["pooled"]
    true_ratio = np.median(values["shared"]) / np.median(values["dedicated"])
    assert sh.ratio is not None and abs(sh.ratio - true_ratio) <= 0.04 * true_ratio
    assert sh.significant is True and sh.ci_high is not None and sh.ci_high < 1.0
    assert sh.p_value is not None and sh.p_value < 0.01
    assert po.significant is False and po.ci_low is not None and po.ci_low < 1.0 < (po.ci_high or 0)
    assert by["dedicated"].ratio == 1.0 and by["dedicated"].ci_low is None


def test_mode_without_data_and_target_without_baseline(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"shared": 10000, "pooled": 10000})
    store(engine, [ok(ids["shared"], T0 + timedelta(seconds=10 * i), 40) for i in range(30)])
    with engine.connect() as conn:
        tid = conn.exec_driver_sql("select id from targets").scalar_one()
        r = compare(conn, tid, T0, T0 + timedelta(hours=1))
    assert r.baseline is None
    by = {m.kind: m for m in r.modes}
    assert by["pooled"].n == 0 and by["pooled"].p50_ms is None and by["pooled"].availability is None
    assert by["shared"].ratio is None and close(by["shared"].p50_ms, 40.0)


def test_probe_filter_keeps_one_probe_kind(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000})
    with engine.begin() as conn:
        mode_id = conn.exec_driver_sql("select id from modes").scalar_one()
        commit_sid = conn.exec_driver_sql(
            "insert into series (mode_id, probe, interval_ms, timeout_ms) "
            f"values ({mode_id}, 'commit', 10000, 10000) returning id"
        ).scalar_one()
    store(engine, [ok(ids["dedicated"], T0 + timedelta(seconds=10 * i), 60) for i in range(30)])
    store(engine, [ok(commit_sid, T0 + timedelta(seconds=10 * i), 5) for i in range(30)])
    with engine.connect() as conn:
        tid = conn.exec_driver_sql("select id from targets").scalar_one()
        pooled = compare(conn, tid, T0, T0 + timedelta(hours=1))
        only = compare(conn, tid, T0, T0 + timedelta(hours=1), probe="connping")
        none = compare(conn, tid, T0, T0 + timedelta(hours=1), probe="sweep")
    assert pooled.modes[0].count == 60 and pooled.modes[0].series_ids == [
        ids["dedicated"],
        commit_sid,
    ]
    assert only.modes[0].count == 30 and close(only.modes[0].p50_ms, 60.0)
    assert only.modes[0].series_ids == [ids["dedicated"]]
    assert none.modes[0].count == 0 and none.modes[0].p50_ms is None
