"""Backtests replay a rule over stored rollups/samples through the evaluator's state
machine: they agree with what the evaluator does on the same data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.alerts.backtest import backtest
from app.alerts.rules import RuleSpec
from tests.alerts.conftest import World, bad


def test_latency_backtest_matches_the_evaluator(world: World) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=5)
    start = end - timedelta(minutes=60)
    # 60 minutes: fast, then 10 slow minutes at 20-30, then 3 slow minutes at 45-48 (too short)
    for k in range(60):
        slow = 20 <= k < 30 or 45 <= k < 48
        world.minutes("pooled", start + timedelta(minutes=k), 1, 400.0 if slow else 80.0)
    world.rollup()
    spec = RuleSpec(
        name="r",
        kind="latency",
        threshold_ms=200,
        window="2m",
        pending="4m",
        selector={"modes": ["pooled"]},
    )
    with world.engine.connect() as conn:
        res = backtest(conn, spec, end + timedelta(minutes=5), days=1)
    assert res.supported and res.instances == 1
    assert res.fired == 1
    (ep,) = res.episodes
    assert ep.start == start + timedelta(minutes=25)  # slow from 20, seen at 21, +4m pending
    assert ep.end == start + timedelta(minutes=32)  # first fully fast 2-minute window
    assert (
        res.sentence()
        == "Over the last 1 days this rule would have fired 1 time, for a total of 7 minutes."
    )
    # the evaluator, cycle by cycle over the same minutes, fires once too
    world.rule(**{**spec.export(), "name": "live"})
    for k in range(1, 61):
        world.cycle(start + timedelta(minutes=k))
    assert world.transitions("live", "pooled").count(("pending", "firing")) == 1


def test_error_rate_and_m_of_n_backtests(world: World) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=2)
    start = end - timedelta(minutes=30)
    sid = world.sid["dedicated"]
    world.minutes("dedicated", start, 10, 80.0)
    world.write([bad(sid, start + timedelta(minutes=10, seconds=10 * i)) for i in range(12)])
    world.minutes("dedicated", start + timedelta(minutes=12), 18, 80.0)
    world.rollup()
    rate = RuleSpec(
        name="r",
        kind="availability",
        error_rate_pct=30,
        window="2m",
        selector={"modes": ["dedicated"]},
    )
    mofn = RuleSpec(name="m", kind="availability", m=3, n=5, selector={"modes": ["dedicated"]})
    unsupported = RuleSpec(name="b", kind="slo_burn", slo="x")
    with world.engine.connect() as conn:
        r1 = backtest(conn, rate, end, days=1)
        r2 = backtest(conn, mofn, end, days=1)
        r3 = backtest(conn, unsupported, end, days=1)
    assert r1.fired == 1 and r2.fired == 1
    assert not r3.supported and "cannot be backtested" in r3.sentence()


def test_nodata_backtest_finds_the_gap_and_round_trip_rules_say_why_not(world: World) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=2)
    start = end - timedelta(minutes=30)
    world.minutes("dedicated", start, 10, 80.0)  # last sample at 9:50
    world.minutes("dedicated", start + timedelta(minutes=20), 10, 80.0)  # back at 20:00
    spec = RuleSpec(name="s", kind="nodata", intervals=3, selector={"modes": ["dedicated"]})
    round_trip = RuleSpec(name="a", kind="latency", phase="auth2", threshold_ms=50)
    with world.engine.connect() as conn:
        res = backtest(conn, spec, end, days=1)
        rt = backtest(conn, round_trip, end, days=1)
    assert res.supported and res.instances == 1
    first, gap = res.episodes  # silent before the first sample, then the 10-minute gap
    assert first.end == start
    assert (gap.start, gap.end) == (start + timedelta(minutes=11), start + timedelta(minutes=20))
    assert not rt.supported and "auth2" in rt.sentence() and "raw samples only" in rt.sentence()
