"""weekly(): true weekly percentiles per target and mode, with week-over-week change."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.store.read.weekly import weekly
from tests.store.conftest import T0, close, failed, make_series, ok, store


def test_week_over_week(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    d = ids["dedicated"]
    samples = []
    for day in range(7):  # week 1: 50 ms; week 2: 60 ms and one failure in ten
        base = T0 + timedelta(days=day, hours=9)
        samples += [ok(d, base + timedelta(minutes=i), 50) for i in range(10)]
        base2 = base + timedelta(weeks=1)
        samples += [ok(d, base2 + timedelta(minutes=i), 60) for i in range(9)]
        samples.append(failed(d, base2 + timedelta(minutes=9)))
    samples.append(ok(ids["shared"], T0 + timedelta(weeks=1), 40))
    store(engine, samples)
    with engine.connect() as conn:
        rows = weekly(conn, T0 + timedelta(weeks=1), T0 + timedelta(weeks=2))
        only_shared = weekly(conn, T0, T0 + timedelta(weeks=2), target_ids=[999])
    assert only_shared == []
    assert [(r.mode, r.week) for r in rows] == [
        ("dedicated", T0 + timedelta(weeks=1)),
        ("shared", T0 + timedelta(weeks=1)),
    ]
    w = rows[0]
    assert (w.n, w.n_ok, w.n_failed, w.count) == (70, 63, 7, 63)
    assert close(w.p50_ms, 60.0) and close(w.prev_p50_ms, 50.0)
    assert w.change_p50_pct is not None and abs(w.change_p50_pct - 20.0) < 4.5
    assert w.availability == 90.0 and w.prev_availability == 100.0
    assert w.change_availability_pts == -10.0
    assert rows[1].prev_p50_ms is None and rows[1].change_p50_pct is None


def test_probe_keeps_one_probe_kind(engine: Engine) -> None:
    d = make_series(engine, "t1")["dedicated"]
    with engine.begin() as conn:
        sp = conn.execute(
            text(
                "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                "select mode_id, 'sessionping', 5000, 5000 from series where id = :d returning id"
            ),
            {"d": d},
        ).scalar_one()
    samples = [ok(d, T0 + timedelta(hours=h), 50) for h in range(20)]
    samples += [ok(sp, T0 + timedelta(hours=h, minutes=1), 5) for h in range(30)]
    samples += [failed(sp, T0 + timedelta(hours=40))]
    samples += [ok(d, T0 + timedelta(weeks=1, hours=h), 60) for h in range(10)]
    store(engine, samples)
    end = T0 + timedelta(weeks=2)
    with engine.connect() as conn:
        conn_rows = weekly(conn, T0, end, probe="connping")
        sess_rows = weekly(conn, T0, end, probe="sessionping")
        pooled = weekly(conn, T0, end)
        none = weekly(conn, T0, end, probe="commit")
    assert none == []
    assert [(r.week, r.n, r.p50_ms) for r in conn_rows] == [
        (T0, 20, 50.0),
        (T0 + timedelta(weeks=1), 10, 60.0),
    ]
    assert conn_rows[1].prev_p50_ms == 50.0 and close(conn_rows[1].change_p50_pct or 0, 20.0)
    assert [(r.week, r.n, r.n_failed, r.p50_ms) for r in sess_rows] == [(T0, 31, 1, 5.0)]
    assert (pooled[0].n, pooled[0].count) == (51, 50)


def test_a_week_without_samples_breaks_week_over_week(engine: Engine) -> None:
    # The change is against the week just before, never against an older one.
    d = make_series(engine, "t1")["dedicated"]
    samples = [ok(d, T0 + timedelta(hours=h), 50) for h in range(5)]
    samples += [ok(d, T0 + timedelta(weeks=2, hours=h), 70) for h in range(5)]
    samples += [ok(d, T0 + timedelta(weeks=3, hours=h), 35) for h in range(5)]
    store(engine, samples)
    with engine.connect() as conn:
        rows = weekly(conn, T0, T0 + timedelta(weeks=4))
    assert [(r.week, r.p50_ms, r.prev_p50_ms) for r in rows] == [
        (T0, 50.0, None),
        (T0 + timedelta(weeks=2), 70.0, None),
        (T0 + timedelta(weeks=3), 35.0, 70.0),
    ]
    assert rows[1].change_p50_pct is None and rows[2].change_p50_pct == -50.0
    assert rows[2].change_availability_pts == 0.0
