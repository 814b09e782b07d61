"""spikes() and outages() on hand-built incidents, with the raw samples around them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample
from app.store.read.incidents import outages, spikes
from app.store.write.ingest import write_samples
from app.store.write.partitions import apply_retention
from app.store.write.rollups import roll_up_pending
from tests.store.conftest import T0, close, failed, make_series, ok, store


def _weeks_of_mondays(sid: int, weeks: int, spike_ms: float) -> list:
    out = []
    for w in range(weeks):
        base = T0 + timedelta(weeks=w, hours=10)
        value = spike_ms if w == weeks - 1 else 50.0
        out += [ok(sid, base + timedelta(minutes=2 * i), value + i % 5) for i in range(30)]
    return out


def test_spike_against_the_same_hour_of_previous_weeks(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    store(engine, _weeks_of_mondays(sid, 5, 200.0))
    week5 = T0 + timedelta(weeks=4)
    with engine.connect() as conn:
        hourly = spikes(conn, [sid], week5 - timedelta(days=3), week5 + timedelta(days=1))
        minutes = spikes(conn, [sid], week5, week5 + timedelta(days=1), max_results=3, min_count=1)
        none = spikes(conn, [sid], week5, week5 + timedelta(days=1), factor=5.0)
    assert len(hourly) == 1
    s = hourly[0]
    assert s.start == week5 + timedelta(hours=10) and s.end == s.start + timedelta(hours=1)
    assert close(s.p95_ms, 204.0) and close(s.baseline_ms, 54.0) and 3.5 < s.factor < 4.0
    assert s.count == 30 and len(s.samples) == 30  # the context window holds the hour's samples
    assert len(minutes) == 3 and all(m.end - m.start == timedelta(minutes=1) for m in minutes)
    assert none == []


def test_no_spike_without_two_weeks_of_baseline(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    store(engine, _weeks_of_mondays(sid, 2, 200.0))
    week2 = T0 + timedelta(weeks=1)
    with engine.connect() as conn:
        assert spikes(conn, [sid], week2, week2 + timedelta(days=3)) == []


def test_outage_from_raw_runs(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    at = [T0 + timedelta(seconds=10 * i) for i in range(40)]
    samples = [ok(sid, t, 50) for t in at]
    for i in range(10, 15):
        samples[i] = failed(sid, at[i])  # 5 in a row
    samples[12] = failed(sid, at[12], "TIMEOUT", ErrorClass.TIMEOUT)
    samples[20] = failed(sid, at[20])
    samples[21] = failed(sid, at[21])  # only 2: below min_failed
    store(engine, samples)
    with engine.connect() as conn:
        found = outages(conn, [sid], T0, T0 + timedelta(hours=1))
    assert len(found) == 1
    o = found[0]
    assert (o.start, o.end, o.failed, o.source) == (at[10], at[14], 5, "raw")
    assert o.codes == {"TNS-12520": 4, "TIMEOUT": 1}
    assert [s.scheduled_at for s in o.samples] == at[:27]  # 2 minutes either side


def test_outage_from_minute_rollups_after_raw_retention(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    old = now - timedelta(days=40)
    at = [old + timedelta(seconds=10 * i) for i in range(60)]  # 10 minutes
    samples = [failed(sid, t) if 12 <= i < 36 else ok(sid, t, 50) for i, t in enumerate(at)]
    store(engine, [*samples, ok(sid, now - timedelta(hours=1), 50)])
    with engine.begin() as conn:
        assert apply_retention(conn, raw_days=35, minute_days=400, hour_days=1826, now=now).dropped
    with engine.connect() as conn:
        found = outages(conn, [sid], old - timedelta(hours=1), now)
    assert len(found) == 1
    o = found[0]
    # minutes 2..5 were all failed; the partial minutes around them are left out
    assert (o.source, o.start, o.end) == ("1m", at[12], at[36])
    assert o.failed == 24 and o.codes == {"TNS-12520": 24} and o.samples == []


def _failures_every(sid: int, start: datetime, step_s: int, n: int) -> list[Sample]:
    return [failed(sid, start + timedelta(seconds=step_s * i)) for i in range(n)]


def test_raw_outages_are_found_before_their_minutes_are_rolled_up(engine: Engine) -> None:
    # Raw samples are read only where the 1-minute rollups show failures, or where a
    # rollup is still pending: an outage written a moment ago is found all the same.
    sid = make_series(engine, "t1")["dedicated"]
    at = T0 + timedelta(hours=3)
    with engine.begin() as conn:
        write_samples(conn, _failures_every(sid, at, 10, 4))  # not rolled up yet
    with engine.connect() as conn:
        pending = outages(conn, [sid], T0, T0 + timedelta(hours=6))
    roll_up_pending(engine)
    with engine.connect() as conn:
        rolled = outages(conn, [sid], T0, T0 + timedelta(hours=6))
    assert [(o.start, o.end, o.failed, o.source) for o in pending] == [
        (at, at + timedelta(seconds=30), 4, "raw")
    ]
    assert [(o.start, o.end, o.failed) for o in rolled] == [
        (o.start, o.end, o.failed) for o in pending
    ]


def test_a_run_of_a_slow_series_spans_minutes_without_failures(engine: Engine) -> None:
    # At a 2-minute interval the failed minutes of one run are 2 minutes apart: they
    # still form one run, and a lone failure elsewhere is no outage.
    sid = make_series(engine, "t1", {"dedicated": 120_000})["dedicated"]
    at = T0 + timedelta(hours=1)
    lone = T0 + timedelta(hours=4)
    store(engine, [*_failures_every(sid, at, 120, 3), failed(sid, lone)])
    with engine.connect() as conn:
        found = outages(conn, [sid], T0, T0 + timedelta(hours=6), min_failed=3)
        ones = outages(conn, [sid], T0, T0 + timedelta(hours=6), min_failed=1)
    assert [(o.start, o.end, o.failed) for o in found] == [(at, at + timedelta(minutes=4), 3)]
    assert [(o.start, o.failed) for o in ones] == [(lone, 1), (at, 3)]
