"""Rollups against exact computation over the same raw samples; backfills and imports land."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import ErrorClass
from app.store.histogram.buckets import MAX_RELATIVE_ERROR, exact_quantiles
from app.store.write.ingest import write_samples
from app.store.write.rollups import mark_dirty, roll_up_pending
from tests.store.conftest import T0, failed, make_series, ok


def _values(n: int, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(v) for v in rng.lognormal(np.log(60.0), 0.35, n)]  # milliseconds


def _check_row(row: dict[str, object], ns: list[int]) -> None:
    assert row["total_n"] == len(ns)
    assert row["total_min"] == min(ns) and row["total_max"] == max(ns)
    assert row["total_sum"] == sum(ns)
    for got, want in zip(
        (row["total_p50"], row["total_p95"], row["total_p99"]), exact_quantiles(ns), strict=True
    ):
        assert isinstance(got, float)
        assert abs(got - want) / want <= MAX_RELATIVE_ERROR + 1e-6


def test_rollups_match_exact_computation(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    vals = _values(3 * 360, seed=1)  # three hours at 10 s
    samples = []
    for i, v in enumerate(vals):
        at = T0 + timedelta(seconds=10 * i)
        if i % 97 == 5:
            samples.append(failed(sid, at))
        elif i % 211 == 7:
            samples.append(failed(sid, at, "TIMEOUT", ErrorClass.TIMEOUT))
        else:
            samples.append(ok(sid, at, v))
    with engine.begin() as conn:
        write_samples(conn, samples)
    rep = roll_up_pending(engine)
    assert (rep.minutes, rep.hours, rep.days) == (180, 3, 1)
    ok_ns = {s.scheduled_at: s.total_ns for s in samples if s.total_ns is not None}
    with engine.connect() as conn:
        day = conn.execute(text("select * from rollup_1d")).mappings().one()
        hours = conn.execute(text("select * from rollup_1h order by bucket")).mappings().all()
        minute = (
            conn.execute(
                text("select * from rollup_1m where bucket = :b"), {"b": T0 + timedelta(minutes=7)}
            )
            .mappings()
            .one()
        )
    _check_row(dict(day), list(ok_ns.values()))
    n_err = sum(1 for s in samples if s.status == "error")
    n_to = sum(1 for s in samples if s.status == "timeout")
    assert (day["n"], day["n_error"], day["n_timeout"]) == (len(samples), n_err, n_to)
    assert day["n_ok"] == len(ok_ns)
    assert day["err_class"] == {"TNS": n_err, "TIMEOUT": n_to}
    assert day["err_code"] == {"TNS-12520": n_err, "TIMEOUT": n_to}
    for h, row in enumerate(hours):
        lo, hi = T0 + timedelta(hours=h), T0 + timedelta(hours=h + 1)
        _check_row(dict(row), [v for t, v in ok_ns.items() if lo <= t < hi])
    m0 = T0 + timedelta(minutes=7)
    _check_row(dict(minute), [v for t, v in ok_ns.items() if m0 <= t < m0 + timedelta(minutes=1)])
    with engine.connect() as conn:
        week = conn.execute(text("select * from rollup_1w")).mappings().one()
    assert week["bucket"] == T0  # a Monday
    _check_row(dict(week), list(ok_ns.values()))
    assert week["err_code"] == day["err_code"]
    # a second pass finds nothing to do and changes nothing
    assert roll_up_pending(engine).minutes == 0


def test_backfill_lands_in_existing_rollups(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    with engine.begin() as conn:
        write_samples(conn, [ok(sid, T0 + timedelta(seconds=20 * i), 50) for i in range(180)])
    roll_up_pending(engine)
    # an agent's spool replays the missing odd slots of the same hour, late
    late = [ok(sid, T0 + timedelta(seconds=20 * i + 10), 100) for i in range(180)]
    with engine.begin() as conn:
        write_samples(conn, late)
    roll_up_pending(engine)
    with engine.connect() as conn:
        h = conn.execute(text("select * from rollup_1h")).mappings().one()
        d = conn.execute(text("select n, total_n from rollup_1d")).one()
    assert (h["n"], h["total_n"], d.n, d.total_n) == (360, 360, 360, 360)
    _check_row(dict(h), [50_000_000] * 180 + [100_000_000] * 180)


def test_bulk_import_outside_the_writer_is_picked_up_after_mark_dirty(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    start = T0 - timedelta(days=3)
    with engine.begin() as conn:
        conn.execute(text("select connwatch_ensure_sample_partitions(:d, :d)"), {"d": start.date()})
        conn.execute(
            text(
                "insert into samples (series_id, scheduled_at, started_at, status, total_ns) "
                "select :s, t, t, 'ok', 42000000 from generate_series("
                "cast(:a as timestamptz), cast(:a as timestamptz) + interval '2 hours' "
                "- interval '1 minute', interval '1 minute') t"
            ),
            {"s": sid, "a": start},
        )
        assert mark_dirty(conn, start, start + timedelta(days=1)) == 120
    rep = roll_up_pending(engine)
    assert (rep.minutes, rep.hours, rep.days) == (120, 2, 1)
    with engine.connect() as conn:
        assert conn.execute(text("select total_n from rollup_1d")).scalar_one() == 120


def test_rollups_keep_series_apart(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    with engine.begin() as conn:
        write_samples(
            conn, [ok(ids["dedicated"], T0 + timedelta(seconds=10 * i), 60) for i in range(6)]
        )
        write_samples(
            conn, [ok(ids["shared"], T0 + timedelta(seconds=10 * i), 40) for i in range(6)]
        )
    roll_up_pending(engine)
    with engine.connect() as conn:
        rows = dict(conn.execute(text("select series_id, total_p50 from rollup_1h")).all())
    assert abs(rows[ids["dedicated"]] - 60e6) / 60e6 <= MAX_RELATIVE_ERROR
    assert abs(rows[ids["shared"]] - 40e6) / 40e6 <= MAX_RELATIVE_ERROR


def test_a_rollup_pass_never_loses_samples_still_being_written(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    with engine.begin() as conn:
        write_samples(conn, [ok(sid, T0, 50)])  # minute T0 is now pending
    writer = engine.connect()
    try:
        tx = writer.begin()
        write_samples(writer, [ok(sid, T0 + timedelta(seconds=10), 70)])  # not committed yet
        # the pass must leave the minute alone while the writer holds it...
        assert roll_up_pending(engine).minutes == 0
        tx.commit()
    finally:
        writer.close()
    # ...and pick it up, with both samples, once the write is visible
    assert roll_up_pending(engine).minutes == 1
    with engine.connect() as conn:
        assert conn.execute(text("select n from rollup_1m")).scalar_one() == 2


def test_catch_up_after_an_outage_works_through_days_in_batches(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    other = make_series(engine, "t2")["dedicated"]
    # three days written while no maintenance ran: one sample every 5 minutes each
    samples = [
        ok(s, T0 + timedelta(minutes=5 * i), 40 + i % 7)
        for s in (sid, other)
        for i in range(3 * 288)
    ]
    with engine.begin() as conn:
        write_samples(conn, samples)
    reports = []
    while True:  # what successive maintain() calls do with a small budget
        rep = roll_up_pending(engine, batch=200, budget_s=0.0)
        reports.append(rep)
        if not rep.more_pending:
            break
    assert sum(r.minutes for r in reports) == len(samples)
    assert len(reports) > 3 and all(r.batches <= 1 for r in reports)
    with engine.connect() as conn:
        per_day = conn.execute(
            text("select series_id, count(*), sum(n) from rollup_1d group by 1 order by 1")
        ).all()
        weeks = conn.execute(text("select sum(n) from rollup_1w")).scalar_one()
    assert [tuple(r) for r in per_day] == [(sid, 3, 864), (other, 3, 864)]
    assert weeks == len(samples)
