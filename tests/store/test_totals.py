"""Cumulative totals per series (what /metrics exports as counters and histograms):
exact against the samples, and unchanged by compaction and retention."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample
from app.store.histogram.buckets import bucket_index
from app.store.read.totals import EXPORT_GROUP, FIRST_GROUP, LAST_GROUP, totals
from app.store.write.packed import compact_pending
from app.store.write.partitions import apply_retention
from tests.store.conftest import T0, failed, make_series, ok, store


def _fill(engine: Engine) -> tuple[int, int, np.ndarray]:
    ids = make_series(engine, "t", {"dedicated": 60000, "shared": 60000})
    d, s = ids["dedicated"], ids["shared"]
    rng = np.random.default_rng(3)
    logons = (40e6 * np.exp(rng.normal(0, 0.4, 500))).astype(np.int64)
    samples: list[Sample] = []
    for i, v in enumerate(logons):  # three weeks, one sample every hour
        samples.append(ok(d, T0 + timedelta(hours=i), 50, logon_ns=int(v)))
    samples += [failed(d, T0 + timedelta(hours=i, minutes=30)) for i in range(7)]
    probe = failed(d, T0 + timedelta(hours=3, minutes=20), "PROBE-IndexError", ErrorClass.PROBE)
    samples += [probe, ok(s, T0, 10, logon_ns=5_000)]  # shared: one sub-bound logon
    store(engine, samples)
    return d, s, logons


def _check(got: dict[int, object], d: int, logons: np.ndarray) -> None:
    t = got[d]
    assert t.counts == {  # type: ignore[attr-defined]
        "n": 508, "n_ok": 500, "n_error": 7, "n_timeout": 0, "n_skipped": 0, "n_probe": 1,
    }  # fmt: skip
    pt = t.phases["logon"]  # type: ignore[attr-defined]
    assert pt.count == 500 and pt.sum_ns == float(logons.sum())
    group = np.ceil(bucket_index(logons) / EXPORT_GROUP)
    want = [int((group <= j).sum()) for j in range(FIRST_GROUP, LAST_GROUP + 1)]
    assert pt.cumulative == want and want[-1] == 500 and want[0] == 0


def test_totals_are_exact(engine: Engine) -> None:
    d, s, logons = _fill(engine)
    with engine.connect() as conn:
        got = totals(conn, [d, s, 99999])
    _check(got, d, logons)
    assert set(got) == {d, s}  # a series without samples is absent
    assert got[s].phases["logon"].cumulative[0] == 1  # below the first bound: in it
    assert got[s].phases["ping"].count == 0


def test_compaction_and_retention_change_nothing(engine: Engine) -> None:
    d, _, logons = _fill(engine)
    now = T0 + timedelta(days=60)
    compact_pending(engine, after_days=2, now=now, max_days=30)
    with engine.begin() as conn:
        # a 1-hour horizon of 40 days: the first two weeks' rows are folded away
        apply_retention(conn, raw_days=35, minute_days=35, hour_days=40, now=now)
    with engine.connect() as conn:
        weeks = conn.execute(text("select count(*) from rollup_1w where series_id = :d"), {"d": d})
        retired = conn.execute(text("select n from rollup_retired where series_id = :d"), {"d": d})
        assert weeks.scalar_one() == 1 and retired.scalar_one() > 0
        _check(totals(conn, [d]), d, logons)
    with engine.begin() as conn:  # everything retired, twice: still the same totals
        apply_retention(conn, raw_days=35, minute_days=35, hour_days=1, now=now)
        apply_retention(conn, raw_days=35, minute_days=35, hour_days=1, now=now)
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from rollup_1w")).scalar_one() == 0
        _check(totals(conn, [d]), d, logons)
