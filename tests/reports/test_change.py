"""Week over week only where it is real: the verdicts on simulated weeks with known truth."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from app.reports.content.change import (
    ModeBlocks,
    availability_verdict,
    history_noise,
    interp_quantile,
    latency_verdict,
    mode_blocks,
)
from app.reports.content.figures import Blocks
from app.store.histogram.buckets import bucket_index, bucket_value

A = datetime(2026, 1, 5, tzinfo=UTC)  # a Monday
B = A + timedelta(days=7)
BLOCK = timedelta(hours=6)


def _blocks(weeks: list[list[np.ndarray]]) -> Blocks:
    """One series; ``weeks[w][k]`` = the logon values (ms) of block k of week w."""
    rows, starts = [], []
    for w, blocks in enumerate(weeks):
        for k, values in enumerate(blocks):
            rows.append(bucket_index(np.asarray(values) * 1e6).astype(np.int64))
            starts.append(A + w * timedelta(days=7) + k * BLOCK)
    lo = min(int(r.min()) for r in rows)
    width = max(int(r.max()) for r in rows) - lo + 1
    hist = np.zeros((len(rows), width))
    for i, r in enumerate(rows):
        np.add.at(hist[i], r - lo, 1)
    n = np.array([len(v) for blocks in weeks for v in blocks])
    counts = np.stack([n, n, 0 * n, 0 * n, 0 * n], axis=1)
    flat = [v for blocks in weeks for v in blocks]
    return Blocks(
        series=np.ones(len(rows), dtype=np.int64),
        block=starts,
        counts=counts,
        mins=np.array([v.min() * 1e6 for v in flat]),
        maxs=np.array([v.max() * 1e6 for v in flat]),
        hist=hist,
        lo=lo,
    )


def _week(rng: np.random.Generator, level: float, drift: float) -> list[np.ndarray]:
    """28 blocks of 6 h, 4320 samples each (every 5 s); each block drifts as a whole."""
    return [level * np.exp(rng.normal(0, drift) + rng.normal(0, 0.15, 4320)) for _ in range(28)]


def _p95(values: list[np.ndarray]) -> float:
    return float(np.quantile(np.concatenate(values), 0.95, method="inverted_cdf"))


def _verdict(
    prev: list[np.ndarray], cur: list[np.ndarray], history: list[float | None]
) -> tuple[str, float]:
    b = _blocks([prev, cur])
    p, c = _p95(prev), _p95(cur)
    v = latency_verdict(
        c, p, mode_blocks(b, (1,), B, B + timedelta(days=7)), mode_blocks(b, (1,), A, B),
        [*history, p], seed=1,
    )  # fmt: skip
    return v.word, (c / p - 1) * 100


def test_weeks_that_only_drift_are_no_clear_change_though_they_differ_by_more_than_4_pct() -> None:
    rng = np.random.default_rng(7)
    words, changes = [], []
    for _ in range(20):
        word, change = _verdict(_week(rng, 50, 0.12), _week(rng, 50, 0.12), [])
        words.append(word)
        changes.append(change)
    # the naive rule (anything beyond the 4 % resolution) would call several of these real
    assert sum(abs(c) > 4 for c in changes) >= 4
    assert sum(w in ("slower", "faster") for w in words) <= 2


def test_a_real_shift_is_called_slower() -> None:
    rng = np.random.default_rng(11)
    words = [_verdict(_week(rng, 50, 0.08), _week(rng, 62.5, 0.08), [])[0] for _ in range(10)]
    assert words.count("slower") >= 9
    words = [_verdict(_week(rng, 50, 0.08), _week(rng, 40, 0.08), [])[0] for _ in range(10)]
    assert words.count("faster") >= 9


def test_a_change_no_larger_than_ordinary_weeks_is_no_clear_change() -> None:
    rng = np.random.default_rng(3)
    prev, cur = _week(rng, 50, 0.01), _week(rng, 54, 0.01)  # +8 %, very tight intervals
    jumpy = [50.0, 55.0, 49.0, 54.0, 50.0, 45.0, 50.0, 55.0, 50.0]  # ±10 % every week
    flat = [50.0, 50.5, 49.8, 50.2, 50.0, 49.9, 50.1, 50.0, 50.3]
    assert _verdict(prev, cur, jumpy)[0] == "no clear change"
    assert _verdict(prev, cur, flat)[0] == "slower"
    noise = history_noise(jumpy)
    assert noise is not None and 10 < noise < 40
    assert history_noise([50.0, 51.0, 52.0]) is None  # fewer than 4 earlier changes


def test_within_resolution_and_too_few_blocks() -> None:
    rng = np.random.default_rng(5)
    prev, cur = _week(rng, 50, 0.0), _week(rng, 51.5, 0.0)  # +3 %: below one bucket
    b = _blocks([prev, cur])
    v = latency_verdict(
        _p95(cur), _p95(prev), mode_blocks(b, (1,), B, B + timedelta(days=7)),
        mode_blocks(b, (1,), A, B), [], seed=0,
    )  # fmt: skip
    assert v.word == "no clear change" and "resolution" in v.reason
    short = _blocks([prev, cur[:2]])  # Monday morning: two blocks so far
    v = latency_verdict(
        _p95(cur[:2]) * 1.3, _p95(prev), mode_blocks(short, (1,), B, B + timedelta(days=7)),
        mode_blocks(short, (1,), A, B), [], seed=0,
    )  # fmt: skip
    assert v.word == "no clear change" and "too few" in v.reason


def test_interpolated_quantile_stays_in_its_bucket() -> None:
    values = np.linspace(40e6, 60e6, 1000)
    idx = bucket_index(values).astype(np.int64)
    lo = int(idx.min())
    h = np.bincount(idx - lo).astype(np.float64)[None, :]
    got = float(interp_quantile(h, lo, 0.95)[0])
    exact = float(np.quantile(values, 0.95, method="inverted_cdf"))
    assert got == pytest.approx(exact, rel=0.0196 * 2)
    rank_bucket = int(bucket_index([exact])[0])
    assert bucket_value(rank_bucket - 1) / 1.04 < got <= bucket_value(rank_bucket) * 1.02


def test_availability_is_what_happened() -> None:
    assert availability_verdict(99.5, 100.0).word == "lower"
    assert availability_verdict(100.0, 99.0).word == "higher"
    assert availability_verdict(99.995, 100.0).word == "no clear change"
    assert availability_verdict(99.0, None).word == "no previous period"


def test_the_summary_names_the_worst_few_not_hundreds() -> None:
    from app.reports.content.build import ReportRow, VerdictOut
    from app.reports.content.period import last_week
    from app.reports.content.summary import summarise

    def row(i: int) -> ReportRow:
        same = VerdictOut(word="no clear change", change=0.0)
        return ReportRow(
            target=f"t{i:03d}", mode="dedicated", kind="dedicated", probe="connping",
            samples=100, ok=99, failed=1, skipped=0, availability_pct=99.0,
            prev_availability_pct=100.0, change_availability_pts=-1.0 - i / 100,
            availability_change=VerdictOut(word="lower", change=-1.0 - i / 100),
            logon_p50_ms=1.0, logon_p95_ms=1.0, prev_logon_p95_ms=1.0, change_logon_p95_pct=0.0,
            logon_change=same, ping_p95_ms=None, prev_ping_p95_ms=None,
            change_ping_p95_pct=None, ping_change=same,
        )  # fmt: skip

    text = summarise([row(i) for i in range(120)], last_week(B))
    lower = next(s for s in text if "lower availability" in s)
    assert lower.startswith("120 modes had lower availability")
    assert "t119/dedicated (-2.19 pts)" in lower  # the worst first
    assert "and 114 more (see the table)" in lower and "t000/" not in lower


def test_a_step_of_one_bucket_is_never_a_change() -> None:
    """Two p95s one bucket apart (+4.0 % / -3.8 %) are within the store's resolution, for
    every bucket: rounding of the bucket values used to let about half of them through as
    "faster" or "slower" (seen in a 100-target report)."""
    none = ModeBlocks([], 0)
    for i in range(300, 560):
        lower, upper = bucket_value(i) / 1e6, bucket_value(i + 1) / 1e6
        for cur, prev in ((lower, upper), (upper, lower)):
            v = latency_verdict(cur, prev, none, none, [], seed=0)
            assert v.word == "no clear change" and "resolution" in v.reason, (i, v)
