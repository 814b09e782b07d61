"""The batch writer: idempotent, partitions on demand, every field round-trips."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample, SampleStatus
from app.store.samples import SampleWriteError, write_samples
from tests.store.conftest import T0, failed, make_series, ok


def test_double_write_stores_each_sample_once(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    batch = [ok(sid, T0 + timedelta(seconds=10 * i), 50 + i) for i in range(100)]
    with engine.begin() as conn:
        assert write_samples(conn, batch) == 100
    with engine.begin() as conn:
        assert write_samples(conn, batch) == 0
        # a batch overlapping the first by half stores only the new half
        more = [ok(sid, T0 + timedelta(seconds=10 * i), 1) for i in range(50, 150)]
        assert write_samples(conn, more) == 50
    with engine.connect() as conn:
        n, total = conn.execute(text("select count(*), sum(total_ns) from samples")).one()
    assert n == 150
    # the first write wins: the overlapping half kept its original timings
    assert total == sum(int((50 + i) * 1e6) for i in range(100)) + 50 * 1_000_000


def test_partitions_are_created_for_the_batch_days(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    old = T0 - timedelta(days=200)
    with engine.begin() as conn:
        assert write_samples(conn, [ok(sid, old, 10), ok(sid, old + timedelta(days=2), 10)]) == 2
        parts = set(
            conn.execute(text("select relname from pg_class where relname like 'samples_p%'"))
            .scalars()
            .all()
        )
    assert f"samples_p{old:%Y%m%d}" in parts
    assert f"samples_p{old + timedelta(days=2):%Y%m%d}" in parts
    # only the days the batch touches: a backfill does not create a partition per day between
    assert f"samples_p{old + timedelta(days=1):%Y%m%d}" not in parts


def test_every_field_round_trips(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    s = Sample(
        series_id=sid,
        scheduled_at=T0,
        started_at=T0 + timedelta(microseconds=7),
        status=SampleStatus.OK,
        total_ns=61_000_123,
        logon_ns=50_000_001,
        ping_ns=400_000,
        query_ns=500_000,
        logoff_ns=9_000_000,
        round_trips=7,
        logon_phases={"tcp_connect": 100, "auth2": 2000},
        sid=123,
        serial=4567,
        instance="ORCL1",
        service="svc",
        server_type="DEDICATED",
        agent="a1",
        site="lab",
        extra={"pool": {"min": 1}},
    )
    e = failed(sid, T0 + timedelta(seconds=10), "DPY-6005", ErrorClass.DPY)
    with engine.begin() as conn:
        assert write_samples(conn, [s, e]) == 2
    with engine.connect() as conn:
        rows = conn.execute(text("select * from samples order by scheduled_at")).mappings().all()
    r = rows[0]
    assert r["started_at"] == s.started_at and r["total_ns"] == 61_000_123
    assert r["logon_phases"] == {"tcp_connect": 100, "auth2": 2000}
    assert r["extra"] == {"pool": {"min": 1}}
    assert (r["sid"], r["serial"], r["instance"], r["site"]) == (123, 4567, "ORCL1", "lab")
    assert rows[1]["status"] == "error" and rows[1]["error_class"] == "DPY"
    assert rows[1]["error_code"] == "DPY-6005" and rows[1]["total_ns"] is None


def test_bad_sample_is_refused_before_anything_is_written(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    naive = ok(sid, T0, 10)
    naive.scheduled_at = naive.scheduled_at.replace(tzinfo=None)
    with engine.begin() as conn, pytest.raises(SampleWriteError, match=r"sample #1 .*naive"):
        write_samples(conn, [ok(sid, T0, 10), naive])
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 0
