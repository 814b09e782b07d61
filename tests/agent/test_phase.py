"""Phases: deterministic, spread over the interval, anchored on the epoch grid."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.agent.scheduling.phase import (
    grace_s,
    instant_after,
    instant_at_or_before,
    phase_offset_ms,
    to_ms,
)


def test_offset_is_deterministic_and_within_the_interval() -> None:
    for sid in range(1, 200):
        off = phase_offset_ms(sid, 10_000)
        assert 0 <= off < 10_000
        assert off == phase_offset_ms(sid, 10_000)


def test_thousand_series_spread_over_the_second_not_a_burst() -> None:
    offsets = [phase_offset_ms(sid, 1000) for sid in range(1, 1001)]
    per_100ms = [0] * 10
    for off in offsets:
        per_100ms[off // 100] += 1
    # uniform would be 100 per tenth; a burst would put them all in one
    assert max(per_100ms) < 150 and min(per_100ms) > 50
    assert len(set(offsets)) > 550  # 1000 draws from 1000 slots: ~632 distinct


def test_instants_lie_on_the_grid_and_bracket_now() -> None:
    now = datetime(2026, 11, 21, 12, 0, 0, 123456, tzinfo=UTC)
    for sid, interval in ((7, 1000), (8, 10_000), (9, 60_000), (10, 150)):
        before = instant_at_or_before(sid, interval, now)
        after = instant_after(sid, interval, now)
        assert before <= now < after
        assert after - before == timedelta(milliseconds=interval)
        assert (to_ms(before) - phase_offset_ms(sid, interval)) % interval == 0


def test_instant_exactly_on_the_grid_is_its_own_floor() -> None:
    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    at = instant_at_or_before(3, 1000, now)
    assert instant_at_or_before(3, 1000, at) == at


def test_grace_is_half_an_interval_capped() -> None:
    assert grace_s(1000, 5.0) == 0.5
    assert grace_s(60_000, 5.0) == 5.0
