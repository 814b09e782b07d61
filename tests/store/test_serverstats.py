"""Server stats in the store: readings leave the sample for their own table (once, also on
a replay), hours are recomputed from raw rows, series follow the latency charts' grid, a
window's summary compares with the stretch before it, and retention prunes both."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import Sample, SampleStatus
from app.store.read.serverstats import server_series, server_window, serverstats_series_ids
from app.store.write.ingest import write_samples
from app.store.write.serverstats import prune_server_stats
from tests.store.conftest import make_target

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


def reading(series_id: int, at: datetime, per_inst: dict[int, dict[str, Any]], **kw: Any) -> Sample:
    instances = [
        {
            "inst_id": i,
            "instance": f"SALES{i}",
            "startup": "2026-11-01 00:00:00",
            "interval_s": 60.0,
            "reset": kw.get("reset", False),
            "metrics": m,
            "classes": {"SCOTT.X": {"requests_per_s": m.get("pool_requests_per_s", 0)}},
        }
        for i, m in per_inst.items()
    ]
    return Sample(
        series_id=series_id,
        scheduled_at=at,
        started_at=at,
        status=SampleStatus.OK,
        query_ns=2_000_000,
        extra={
            "serverstats": {
                "source": "GV$",
                "instances": instances,
                "unavailable": kw.get("unavailable", {}),
            }
        },
    )


def setup(engine: Engine) -> tuple[int, int]:
    with engine.begin() as conn:
        ids = make_target(conn, "sales", "oracle", {"dedicated": [("serverstats", 60000)]})
        tid = conn.execute(text("select id from targets where name = 'sales'")).scalar_one()
    return tid, ids[("dedicated", "serverstats")]


def write(engine: Engine, samples: list[Sample]) -> int:
    with engine.begin() as conn:
        return write_samples(conn, samples)


def test_readings_go_to_their_table_once_and_the_sample_keeps_a_summary(engine: Engine) -> None:
    tid, sid = setup(engine)
    batch = [
        reading(
            sid,
            T0 + timedelta(minutes=i),
            {1: {"logons_per_s": float(i), "cm_ms_per_logon": None}, 2: {"logons_per_s": 1.0}},
            unavailable={"V$AUTHPOOL_STATS": "ORA-00942"},
        )
        for i in range(3)
    ]
    assert write(engine, batch) == 3
    assert write(engine, batch) == 0  # a replay: nothing new, nothing doubled
    with engine.begin() as conn:
        assert serverstats_series_ids(conn, tid) == [sid]
        n = conn.execute(text("select count(*) from server_stats")).scalar_one()
        extra = conn.execute(
            text("select extra from samples order by scheduled_at limit 1")
        ).scalar_one()
        hour = conn.execute(text("select n, metrics from server_stats_1h where inst_id = 1")).one()
    assert n == 6
    assert "serverstats" not in extra
    assert extra["server_instances"] == ["SALES1", "SALES2"]
    assert extra["server_unavailable"] == {"V$AUTHPOOL_STATS": "ORA-00942"}
    assert hour.n == 3
    mean, top, count = hour.metrics["logons_per_s"]
    assert (mean, top, count) == (1.0, 2.0, 3)
    assert "cm_ms_per_logon" not in hour.metrics  # only null values: nothing to average


def test_a_later_batch_of_the_same_hour_recomputes_it(engine: Engine) -> None:
    _, sid = setup(engine)
    write(engine, [reading(sid, T0, {1: {"pool_waits_per_s": 0.0}})])
    write(engine, [reading(sid, T0 + timedelta(minutes=5), {1: {"pool_waits_per_s": 4.0}})])
    with engine.begin() as conn:
        metrics = conn.execute(text("select metrics from server_stats_1h")).scalar_one()
    assert metrics["pool_waits_per_s"] == [2.0, 4.0, 2]


def test_series_on_the_latency_grid_and_from_hours_for_long_ranges(engine: Engine) -> None:
    _, sid = setup(engine)
    write(
        engine,
        [
            reading(sid, T0 + timedelta(minutes=i), {1: {"pool_waits_per_s": float(i % 3)}})
            for i in range(0, 180)
        ]
        + [reading(sid, T0 + timedelta(minutes=181), {1: {}}, reset=True)],
    )
    with engine.begin() as conn:
        short = server_series(conn, [sid], T0, T0 + timedelta(hours=1), max_points=60)
        long = server_series(conn, [sid], T0 - timedelta(days=20), T0 + timedelta(days=10))
    assert short.source == "raw" and short.step == timedelta(minutes=1)
    pts = short.instances[0].metrics["pool_waits_per_s"]
    assert len(pts) == 60 and [p.mean for p in pts[:3]] == [0.0, 1.0, 2.0]
    assert long.source == "1h"
    hours = long.instances[0].metrics["pool_waits_per_s"]
    assert sum(1 for _ in hours) >= 1
    assert abs(sum(p.mean for p in hours) / len(hours) - 1.0) < 0.01
    assert max(p.max for p in hours) == 2.0
    assert long.instances[0].resets  # the restart is marked on the chart


def test_window_summary_against_the_stretch_before(engine: Engine) -> None:
    _, sid = setup(engine)
    quiet = [
        reading(sid, T0 + timedelta(minutes=i), {1: {"pool_waits_per_s": 0.0}}) for i in range(10)
    ]
    busy = [
        reading(
            sid,
            T0 + timedelta(minutes=10 + i),
            {1: {"pool_waits_per_s": 3.0 + i, "pool_requests_per_s": 5.0}},
            unavailable={"V$AUTHPOOL_STATS": "ORA-00942"},
        )
        for i in range(5)
    ]
    write(engine, quiet + busy)
    with engine.begin() as conn:
        w = server_window(conn, [sid], T0 + timedelta(minutes=10), T0 + timedelta(minutes=15))
        empty = server_window(conn, [sid], T0 + timedelta(days=1), T0 + timedelta(days=1, hours=1))
    (inst,) = w.instances
    assert inst.readings == 5 and inst.instance == "SALES1"
    waits = inst.metrics["pool_waits_per_s"]
    assert (waits.mean, waits.max, waits.before_mean) == (5.0, 7.0, 0.0)
    assert w.unavailable == {"V$AUTHPOOL_STATS": "ORA-00942"}
    assert w.classes["SCOTT.X"]["requests_per_s"] == 5.0
    assert empty.instances == []


def test_retention_prunes_raw_and_hours(engine: Engine) -> None:
    _, sid = setup(engine)
    write(engine, [reading(sid, T0, {1: {"logons_per_s": 1.0}})])
    with engine.begin() as conn:
        gone = prune_server_stats(conn, raw_days=1, hour_days=400, now=T0 + timedelta(days=2))
        hours = conn.execute(text("select count(*) from server_stats_1h")).scalar_one()
        prune_server_stats(conn, raw_days=1, hour_days=1, now=T0 + timedelta(days=2))
        left = conn.execute(text("select count(*) from server_stats_1h")).scalar_one()
    assert gone == 1 and hours == 1 and left == 0


def test_charts_read_the_chart_array_and_older_rows_the_jsonb(engine: Engine) -> None:
    _, sid = setup(engine)
    write(engine, [reading(sid, T0, {1: {"pool_waits_per_s": 2.0}})])
    with engine.begin() as conn:
        chart = conn.execute(text("select chart from server_stats")).scalar_one()
        conn.execute(  # a row written before migration 0016: no chart array
            text(
                "insert into server_stats (series_id, scheduled_at, inst_id, metrics) "
                "values (:s, :t, 1, '{\"pool_waits_per_s\": 6.0}')"
            ),
            {"s": sid, "t": T0 + timedelta(minutes=1)},
        )
        res = server_series(conn, [sid], T0, T0 + timedelta(minutes=10), max_points=10)
    assert chart[2] == 2.0 and chart[0] is None  # SERVER_CHART_METRICS order
    (inst,) = res.instances
    assert [p.max for p in inst.metrics["pool_waits_per_s"]] == [2.0, 6.0]  # array, jsonb
