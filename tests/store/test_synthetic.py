"""The synthetic history generator: shape, rollups through the real path, older rollups;
backfilling existing series up to their live data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import Sample, SampleStatus
from app.store.histogram.buckets import MAX_RELATIVE_ERROR
from app.store.read.timeseries import timeseries
from app.store.write.ingest import write_samples
from app.store.write.synthetic import MODE_MEDIAN_MS, HistorySeries, backfill, generate
from tests.store.conftest import make_target

END = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)


def test_small_history(engine: Engine) -> None:
    rep = generate(engine, series=4, days=2, rollup_days=5, interval_s=60, end=END)
    assert len(rep.series_ids) == 4
    with engine.connect() as conn:
        names = conn.execute(text("select name from targets order by name")).scalars().all()
        assert names == ["synthetic-01", "synthetic-02"]
        n, first, last = conn.execute(
            text("select count(*), min(scheduled_at), max(scheduled_at) from samples")
        ).one()
        # yesterday whole and today up to END, one sample a minute per series
        assert n == rep.raw_samples == 4 * (1440 + 360)
        assert first == END.replace(hour=0) - timedelta(days=1) and last < END
        medians = dict(
            conn.execute(
                text(
                    "select m.kind, percentile_disc(0.5) within group (order by s.total_ns) "
                    "from samples s join series se on se.id = s.series_id "
                    "join modes m on m.id = se.mode_id group by 1"
                )
            ).all()
        )
        assert medians["dedicated"] > medians["pooled"] > medians["shared"]
        assert 40e6 < medians["shared"] < 70e6
        # raw days were rolled up by the store's own path: every raw sample is counted
        assert conn.execute(text("select sum(n) from rollup_1m")).scalar_one() == n
        assert (
            conn.execute(
                text("select sum(n) from rollup_1d where bucket >= :d"), {"d": first}
            ).scalar_one()
            == n
        )
        # three older days of 1-hour and 1-day rollups, no raw behind them
        older = conn.execute(
            text("select count(*), sum(n) from rollup_1h where bucket < :d"), {"d": first}
        ).one()
        assert older == (3 * 24 * 4, 3 * 1440 * 4)
        weeks = conn.execute(text("select sum(n) from rollup_1w")).scalar_one()
        assert weeks == n + 3 * 1440 * 4  # every day, raw-backed or not, is in its week
        row = conn.execute(
            text("select total_p50, total_min, total_max from rollup_1d where bucket < :d limit 1"),
            {"d": first},
        ).one()
        assert row[1] <= row[0] <= row[2] * (1 + MAX_RELATIVE_ERROR)


def test_a_year_repeats_the_simulated_weeks_to_the_day(engine: Engine) -> None:
    """``simulate_days``: older 1-hour and 1-day rollups are the simulated weeks shifted back
    by whole multiples of them (same weekday and hour), every day counted in its week."""
    rep = generate(
        engine, series=2, days=1, rollup_days=22, interval_s=600, end=END, simulate_days=5
    )
    raw_first = END.replace(hour=0)
    sim = raw_first - timedelta(days=7)  # 5 days rounded up to a week
    with engine.connect() as conn:
        for table, per_day in (("rollup_1h", 24), ("rollup_1d", 1)):
            rows = conn.execute(
                text(
                    f"select series_id, bucket, n, n_ok, total_p95, total_hi, total_hc "
                    f"from {table} where bucket < :d order by 1, 2"
                ),
                {"d": raw_first},
            ).all()
            assert len(rows) == 21 * per_day * 2  # 21 older days, 2 series
            by_key = {(r[0], r[1]): (*r[2:5], tuple(r[5]), tuple(r[6])) for r in rows}
            simulated = {k: v for k, v in by_key.items() if k[1] >= sim}
            assert len(simulated) == 7 * per_day * 2
            for (sid, at), values in simulated.items():
                for weeks in (1, 2):
                    assert by_key[sid, at - timedelta(days=7 * weeks)] == values
            assert len({v for v in simulated.values()}) > 1  # not one row copied everywhere
        days = conn.execute(text("select sum(n) from rollup_1d")).scalar_one()
        assert conn.execute(text("select sum(n) from rollup_1w")).scalar_one() == days
    assert rep.rollup_rows == 21 * 25 * 2


# --------------------------------------------------------------------------- backfill

LIVE = datetime(2026, 11, 21, 3, 0, 2, tzinfo=UTC)  # first live sample of the connping series


def _history(engine: Engine) -> tuple[dict[tuple[str, str], int], list[HistorySeries]]:
    with engine.begin() as conn:
        ora = make_target(
            conn,
            "sales",
            "oracle",
            {
                "dedicated": [("connping", 5000), ("sessionping", 2000)],
                "pooled": [("connping", 5000), ("poolacquire", 15000)],
            },
        )
        pg = make_target(conn, "pg", "postgres", {"direct": [("connping", 5000)]})
    ids = {**ora, **{("pg-" + m, p): i for (m, p), i in pg.items()}}
    series = [
        HistorySeries(
            id=i,
            probe=probe,
            mode=mode.removeprefix("pg-"),
            target_kind="postgres" if mode.startswith("pg-") else "oracle",
            interval_ms={"sessionping": 2000, "poolacquire": 15000}.get(probe, 5000),
            offset_ms=(i * 937) % 2000,
            instances=("127.0.0.1:5432",) if mode.startswith("pg-") else ("SALES1", "SALES2"),
            service="postgres" if mode.startswith("pg-") else "FREEPDB1",
        )
        for (mode, probe), i in ids.items()
    ]
    return ids, series


def test_backfill_existing_series_ends_before_live_data_with_every_phase(engine: Engine) -> None:
    ids, series = _history(engine)
    ded = ids[("dedicated", "connping")]
    live = [
        Sample(ded, LIVE + timedelta(seconds=5 * k), LIVE, SampleStatus.OK, total_ns=1, agent="a1")
        for k in range(3)
    ]
    with engine.begin() as conn:
        write_samples(conn, live)
    rep = backfill(engine, series, raw_days=2, rollup_days=20, end=END)
    assert sorted(rep.series_ids) == sorted(ids.values()) and rep.skipped == []
    by_id = {s.id: s for s in series}
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select series_id, count(*), min(scheduled_at), max(scheduled_at), "
                "count(*) filter (where agent <> 'synthetic' or agent is null), "
                "count(*) filter (where extra ->> 'synthetic' = 'true') "
                "from samples group by 1"
            )
        ).all()
        assert len(rows) == len(ids)
        for sid, n, first, last, real, marked in rows:
            s = by_id[sid]
            if sid == ded:
                assert real == 3 and marked == n - 3
                # the last synthetic instant is the series' last one before the live start
                last_syn = conn.execute(
                    text(
                        "select max(scheduled_at) from samples "
                        "where series_id = :s and agent = 'synthetic'"
                    ),
                    {"s": sid},
                ).scalar_one()
                assert last_syn < LIVE <= last_syn + timedelta(milliseconds=s.interval_ms)
                assert rep.ends[sid] == last_syn
            else:
                assert real == 0 and marked == n and last <= END
                assert END - timedelta(milliseconds=s.interval_ms) < last
            # raw from the day before END's day, on the series' own grid
            assert first.date() == END.date() - timedelta(days=1)
            epoch_ms = round((first - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000)
            assert epoch_ms % s.interval_ms == s.offset_ms
        assert (
            conn.execute(
                text(
                    "select count(*) from samples where agent = 'synthetic' and scheduled_at >= :t"
                    " and series_id = :s"
                ),
                {"t": LIVE, "s": ded},
            ).scalar_one()
            == 0
        )
        # connping: every phase, identity columns; total covers the phases
        phase_rows = conn.execute(
            text(
                "select series_id, count(*) filter (where status = 'ok'), "
                "count(logon_ns), count(ping_ns), count(query_ns), count(logoff_ns), "
                "count(commit_ns), count(acquire_ns), count(serial), "
                "count(*) filter (where total_ns < coalesce(logon_ns, 0) + coalesce(ping_ns, 0)"
                " + coalesce(query_ns, 0) + coalesce(logoff_ns, 0) + coalesce(acquire_ns, 0)), "
                "array_agg(distinct instance) filter (where status = 'ok'), "
                "array_agg(distinct server_type) filter (where status = 'ok'), "
                "percentile_disc(0.5) within group (order by logon_ns), "
                "percentile_disc(0.5) within group (order by ping_ns), "
                "percentile_disc(0.5) within group (order by query_ns), "
                "percentile_disc(0.5) within group (order by logoff_ns) "
                "from samples where agent = 'synthetic' group by 1"
            )
        ).all()
    ms = 1e6
    for (
        sid,
        ok,
        logon,
        ping,
        query,
        logoff,
        commit,
        acquire,
        serial,
        short,
        inst,
        st,
        *med,
    ) in phase_rows:
        s = by_id[sid]
        assert short == 0 and commit == 0
        if s.probe == "connping":
            assert ok == logon == ping == query == logoff > 0 and acquire == 0
        elif s.probe == "sessionping":
            assert ok == ping == query > 0 and logon == logoff == acquire == 0
        else:
            assert ok == acquire == query > 0 and logon == ping == 0
        if s.target_kind == "oracle":
            assert serial == ok and sorted(inst) == ["SALES1", "SALES2"]
            assert st == [{"dedicated": "DEDICATED", "pooled": "POOLED"}[s.mode]]
            if s.probe == "connping":
                assert 0.3 * ms < med[1] < 1.0 * ms and 0.4 * ms < med[2] < 1.5 * ms
                assert 1 * ms < med[3] < 3 * ms
                expect = MODE_MEDIAN_MS[s.mode] * ms
                assert 0.85 * expect < med[0] < 1.2 * expect
        else:
            assert serial == 0 and inst == ["127.0.0.1:5432"] and st == ["DIRECT"]
            assert med[0] < 10 * ms and med[1] < 0.5 * ms and med[2] < 0.5 * ms


def test_backfill_rollups_cover_every_range_and_a_second_run_adds_nothing(engine: Engine) -> None:
    ids, series = _history(engine)
    rep = backfill(engine, series, raw_days=2, rollup_days=30, end=END)
    assert rep.raw_samples > 0 and rep.rollup_rows > 0
    ded = ids[("dedicated", "connping")]
    with engine.connect() as conn:
        days = dict(
            conn.execute(text("select series_id, count(*) from rollup_1d group by 1")).all()
        )
        assert days == {i: 30 for i in ids.values()}
        older = conn.execute(
            text(
                "select count(*), count(ping_p50), count(logoff_p50), sum(n_error + n_timeout) "
                "from rollup_1h where series_id = :s and bucket < :d"
            ),
            {"s": ded, "d": END.replace(hour=0) - timedelta(days=1)},
        ).one()
        assert older[0] == older[1] == older[2] == 28 * 24
        codes = (
            conn.execute(
                text(
                    "select distinct jsonb_object_keys(err_code) from rollup_1d "
                    "where err_code is not null"
                )
            )
            .scalars()
            .all()
        )
        assert set(codes) <= {e[2] for s in series for e in s.errors} and codes
        # every range of the target page has ping data for the series
        for span in (timedelta(hours=1), timedelta(days=1), timedelta(days=7), timedelta(days=365)):
            res = timeseries(conn, [ded], END - span, END, phase="ping")
            assert res.points, span
            assert all(p.p50_ms is not None and 0.1 < p.p50_ms < 2 for p in res.points)
        weeks = conn.execute(
            text("select sum(n) from rollup_1w where series_id = :s"), {"s": ded}
        ).scalar_one()
        total = conn.execute(
            text("select sum(n) from rollup_1d where series_id = :s"), {"s": ded}
        ).scalar_one()
        assert weeks == total
        before = conn.execute(
            text("select (select count(*) from samples), (select sum(n) from rollup_1h)")
        ).one()
    again = backfill(engine, series, raw_days=2, rollup_days=30, end=END + timedelta(hours=1))
    assert again.series_ids == [] and sorted(again.skipped) == sorted(ids.values())
    with engine.connect() as conn:
        after = conn.execute(
            text("select (select count(*) from samples), (select sum(n) from rollup_1h)")
        ).one()
    assert after == before


def test_backfill_rejects_a_shape_it_does_not_know(engine: Engine) -> None:
    bad = HistorySeries(
        id=1, probe="sweep", mode="dedicated", target_kind="oracle", interval_ms=5000
    )
    with pytest.raises(ValueError, match="no synthetic shape for sweep"):
        backfill(engine, [bad], end=END)
    odd = HistorySeries(
        id=1, probe="connping", mode="direct", target_kind="oracle", interval_ms=5000
    )
    with pytest.raises(ValueError, match="direct is not a oracle mode"):
        backfill(engine, [odd], end=END)
