"""The histogram scheme: every value's bucket representative is within 1.96 %."""

from __future__ import annotations

import numpy as np

from app.store.histogram.buckets import (
    MAX_RELATIVE_ERROR,
    bucket_index,
    bucket_value,
    exact_quantiles,
    quantiles,
)


def test_bucket_representative_is_within_the_bound() -> None:
    rng = np.random.default_rng(0)
    v = np.concatenate([rng.uniform(1, 1e12, 20000), np.exp(rng.uniform(0, 27, 20000))])
    rep = bucket_value(bucket_index(v))
    assert float(np.max(np.abs(rep - v) / v)) <= MAX_RELATIVE_ERROR + 1e-12
    assert MAX_RELATIVE_ERROR < 0.02
    assert int(bucket_index([1e12])[0]) < 32767  # fits smallint


def test_merged_histograms_give_the_quantiles_of_the_union() -> None:
    rng = np.random.default_rng(1)
    parts = [rng.lognormal(np.log(5e7), 0.4, n) for n in (7, 500, 3000, 1)]
    idx = np.concatenate([bucket_index(p) for p in parts])
    cnt = np.ones(idx.size, dtype=np.int64)  # repeated indexes are allowed
    allv = np.concatenate(parts)
    got = quantiles(idx, cnt, (0.5, 0.95, 0.99), float(allv.min()), float(allv.max()))
    for g, w in zip(got, exact_quantiles(allv), strict=True):
        assert g is not None and abs(g - w) / w <= MAX_RELATIVE_ERROR


def test_quantiles_of_nothing_are_none_and_nearest_rank_is_used() -> None:
    assert quantiles([], []) == [None, None, None]
    assert exact_quantiles([1, 2, 3, 4]) == [2.0, 4.0, 4.0]
