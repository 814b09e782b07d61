"""logon_phases(): the median of each logon round trip per bucket, from raw samples."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.engine import Engine

from app.store.read.phases import MAX_SPAN, logon_phases
from app.store.write.packed import compact_day
from tests.store.conftest import T0, failed, make_series, ok, store


def _phases(i: int) -> dict[str, int]:
    # auth2 varies 10..19 ms; the others are fixed; key order here is the wire order
    return {
        "tcp_connect": 1_000_000,
        "connect": 30_000_000,
        "protocol": 2_000_000,
        "data_types": 2_000_000,
        "auth1": 3_000_000,
        "auth2": (10 + i % 10) * 1_000_000,
    }


def test_median_per_phase_and_bucket(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    samples = [
        ok(sid, T0 + timedelta(seconds=10 * i), 60.0, logon_phases=_phases(i)) for i in range(30)
    ]
    samples.append(failed(sid, T0 + timedelta(seconds=305)))  # no phases, not counted
    store(engine, samples)
    with engine.connect() as conn:
        r = logon_phases(conn, [sid], T0, T0 + timedelta(minutes=5), max_points=1)
    assert r.step == timedelta(minutes=5) and not r.cut
    got = {p.phase: (p.p50_ms, p.n) for p in r.points}
    assert got["connect"] == (30.0, 30)
    assert got["auth2"] == (14.0, 30)  # nearest-rank median of 10..19 three times each
    assert set(got) == set(_phases(0))


def test_packed_days_are_read_and_a_long_window_is_cut_to_its_last_two_days(
    engine: Engine,
) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    day = T0 - timedelta(days=1)
    store(
        engine,
        [ok(sid, day + timedelta(hours=h), 50.0, logon_phases=_phases(h)) for h in range(24)],
    )
    assert compact_day(engine, day.date()).samples == 24  # now only in packed rows
    with engine.connect() as conn:
        whole = logon_phases(conn, [sid], day, T0)
        long = logon_phases(conn, [sid], T0 - timedelta(days=30), T0)
    assert sum(p.n for p in whole.points if p.phase == "connect") == 24
    assert long.cut and long.start >= T0 - MAX_SPAN - long.step
    assert sum(p.n for p in long.points if p.phase == "connect") == 24
