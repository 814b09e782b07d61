"""The batch writer: idempotent, partitions on demand, every field round-trips, and every
stored sample queued for the rollups (fast COPY path and merge path alike)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.samples import ErrorClass, Sample, SampleStatus
from app.store.layout import ORIGIN_SQL
from app.store.write.ingest import SampleWriteError, minute_pairs, write_samples
from app.store.write.rollups import roll_up_pending
from tests.store.conftest import T0, failed, make_series, ok

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _dirty(conn: Connection) -> set[tuple[int, datetime]]:
    return {(r[0], r[1]) for r in conn.execute(text("select series_id, bucket from rollup_dirty"))}


def _expected_dirty(conn: Connection) -> set[tuple[int, datetime]]:
    """The pairs the rollups need for what ``samples`` holds, computed by PostgreSQL."""
    rows = conn.execute(
        text(
            f"select distinct series_id, date_bin('1 minute', scheduled_at, {ORIGIN_SQL}) "
            "from samples"
        )
    )
    return {(r[0], r[1]) for r in rows}


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


def test_a_sample_twice_in_one_batch_is_stored_once(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    batch = [ok(sid, T0, 10), ok(sid, T0 + timedelta(seconds=1), 20), ok(sid, T0, 30)]
    with engine.begin() as conn:
        assert write_samples(conn, batch) == 2
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 2


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


def test_a_day_dropped_by_retention_is_created_again(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    day = T0 - timedelta(days=300)
    with engine.begin() as conn:
        assert write_samples(conn, [ok(sid, day, 10)]) == 1  # the process now knows the day
    with engine.begin() as conn:
        conn.execute(text(f"drop table samples_p{day:%Y%m%d}"))
    with engine.begin() as conn:
        assert write_samples(conn, [ok(sid, day + timedelta(minutes=1), 10)]) == 1
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 1
        assert _expected_dirty(conn) <= _dirty(conn)


def test_a_day_whose_creation_rolled_back_is_created_again(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    day = T0 - timedelta(days=400)
    with engine.connect() as conn:
        tx = conn.begin()
        write_samples(conn, [ok(sid, day, 10)])
        tx.rollback()  # the partition is gone with the transaction
    with engine.begin() as conn:
        assert write_samples(conn, [ok(sid, day, 10), ok(sid, day + timedelta(hours=1), 5)]) == 2


def test_merge_path_after_a_missing_day_is_created_too(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    day = T0 - timedelta(days=500)
    with engine.begin() as conn:
        write_samples(conn, [ok(sid, T0, 10), ok(sid, day, 10)])
    with engine.begin() as conn:
        conn.execute(text(f"drop table samples_p{day:%Y%m%d}"))
    # a duplicate first (merge path), then a sample for the dropped day
    with engine.begin() as conn:
        assert write_samples(conn, [ok(sid, T0, 10), ok(sid, day, 10)]) == 1


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
        extra={"pool": {"min": 1}, "note": 'quote " and ünïcode'},
    )
    e = failed(sid, T0 + timedelta(seconds=10), "DPY-6005", ErrorClass.DPY)
    e.extra = {}
    with engine.begin() as conn:
        assert write_samples(conn, [s, e]) == 2
    with engine.connect() as conn:
        rows = conn.execute(text("select * from samples order by scheduled_at")).mappings().all()
    r = rows[0]
    assert r["started_at"] == s.started_at and r["total_ns"] == 61_000_123
    assert r["logon_phases"] == {"tcp_connect": 100, "auth2": 2000}
    assert r["extra"] == {"pool": {"min": 1}, "note": 'quote " and ünïcode'}
    assert (r["sid"], r["serial"], r["instance"], r["site"]) == (123, 4567, "ORCL1", "lab")
    assert r["status"] == "ok"
    assert rows[1]["status"] == "error" and rows[1]["error_class"] == "DPY"
    assert rows[1]["error_code"] == "DPY-6005" and rows[1]["total_ns"] is None
    assert rows[1]["logon_phases"] is None and rows[1]["extra"] == {}


def test_bad_sample_is_refused_before_anything_is_written(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    naive = ok(sid, T0, 10)
    naive.scheduled_at = naive.scheduled_at.replace(tzinfo=None)
    with engine.begin() as conn, pytest.raises(SampleWriteError, match=r"sample #1 .*naive"):
        write_samples(conn, [ok(sid, T0, 10), naive])
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 0


def test_a_plain_psycopg_connection_works_too(engine: Engine, pg_dsn: str) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    day = T0 - timedelta(days=600)
    with psycopg.connect(pg_dsn) as raw:
        assert write_samples(raw, [ok(sid, day, 10), ok(sid, T0, 10)]) == 2
        assert write_samples(raw, [ok(sid, day, 10)]) == 0
    with psycopg.connect(pg_dsn, autocommit=True) as raw:
        # no transaction of the caller's: the writer makes one
        assert write_samples(raw, [ok(sid, day, 10), ok(sid, day + timedelta(seconds=1), 1)]) == 1
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 3
        assert _dirty(conn) == _expected_dirty(conn)


@pytest.mark.parametrize(
    "at",
    [
        T0,
        T0 + timedelta(seconds=59, microseconds=999_999),
        T0 - timedelta(microseconds=1),
        T0 + timedelta(days=3, hours=5, minutes=7, seconds=31, microseconds=5),
        datetime(2000, 1, 3, tzinfo=UTC),  # ORIGIN itself
        datetime(1999, 12, 31, 23, 59, 30, tzinfo=UTC),  # before ORIGIN
        datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),  # before the Unix epoch
        datetime(2041, 7, 1, 12, 0, 0, 1, tzinfo=UTC),
        # the same instant written in other zones, incl. a 30-minute offset
        datetime(2026, 11, 2, 5, 45, 10, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(2026, 3, 29, 1, 30, 59, tzinfo=timezone(timedelta(hours=-9, minutes=-30))),
    ],
)
def test_minute_buckets_are_date_bin_of_the_scheduled_instant(engine: Engine, at: datetime) -> None:
    s = ok(1, at, 10)
    [(minute, sid)] = minute_pairs([s])
    assert sid == 1
    with engine.connect() as conn:
        want = conn.execute(
            text(f"select date_bin('1 minute', cast(:t as timestamptz), {ORIGIN_SQL})"),
            {"t": at},
        ).scalar_one()
    assert EPOCH + timedelta(minutes=minute) == want


def test_fast_path_queues_each_series_minute_once(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 1000, "shared": 1000})
    batch = [
        ok(sid, T0 + timedelta(milliseconds=700 * i), 10)
        for i in range(300)  # 3.5 minutes of samples per series
        for sid in ids.values()
    ]
    with engine.begin() as conn:
        assert write_samples(conn, batch) == 600
        got = _dirty(conn)
        assert got == _expected_dirty(conn)
    assert len(got) == 2 * 4


def test_merge_path_queues_only_what_it_inserted(engine: Engine) -> None:
    a, b = make_series(engine, "t1", {"dedicated": 1000, "shared": 1000}).values()
    first = [ok(a, T0 + timedelta(minutes=i), 10) for i in range(5)]
    with engine.begin() as conn:
        write_samples(conn, first)
        conn.execute(text("delete from rollup_dirty"))  # as if a rollup pass took them
    # half duplicates: minutes 3, 4 of series a again, minutes 5, 6 of a and 0 of b new
    again = [ok(a, T0 + timedelta(minutes=i), 99) for i in range(3, 7)] + [ok(b, T0, 1)]
    with engine.begin() as conn:
        assert write_samples(conn, again) == 3
        assert _dirty(conn) == {
            (a, T0 + timedelta(minutes=5)),
            (a, T0 + timedelta(minutes=6)),
            (b, T0),
        }


def test_rollups_see_every_sample_from_both_paths(engine: Engine) -> None:
    ids = list(make_series(engine, "t1", {"dedicated": 1000, "shared": 1000}).values())
    batch = [ok(sid, T0 + timedelta(seconds=7 * i), 10 + i % 13) for i in range(60) for sid in ids]
    with engine.begin() as conn:
        write_samples(conn, batch[:70])  # fast path
    roll_up_pending(engine)
    with engine.begin() as conn:
        write_samples(conn, batch[40:])  # merge path (40..69 stored already)
    roll_up_pending(engine)
    with engine.connect() as conn:
        in_rollups = conn.execute(text("select sum(n) from rollup_1m")).scalar_one()
        per_minute = conn.execute(
            text(
                "select count(*) from rollup_1m r where n <> (select count(*) from samples s "
                "where s.series_id = r.series_id and s.scheduled_at >= r.bucket "
                "and s.scheduled_at < r.bucket + interval '1 minute')"
            )
        ).scalar_one()
    assert in_rollups == len(batch) == 120
    assert per_minute == 0


def test_writers_sharing_a_minute_do_not_wait_for_each_other(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    with engine.begin() as conn:
        write_samples(conn, [ok(sid, T0, 10)])  # the pair (sid, T0) is queued
    one, two = engine.connect(), engine.connect()
    try:
        tx1, tx2 = one.begin(), two.begin()
        one.exec_driver_sql("set local lock_timeout = '5s'")
        two.exec_driver_sql("set local lock_timeout = '5s'")
        write_samples(one, [ok(sid, T0 + timedelta(seconds=10), 20)])
        # a second writer in the same minute is not held up by the first (both share the lock)
        write_samples(two, [ok(sid, T0 + timedelta(seconds=20), 30)])
        # ...but a rollup pass leaves the minute alone while either is open
        assert roll_up_pending(engine).minutes == 0
        tx1.commit()
        assert roll_up_pending(engine).minutes == 0
        tx2.commit()
    finally:
        one.close()
        two.close()
    assert roll_up_pending(engine).minutes == 1
    with engine.connect() as conn:
        assert conn.execute(text("select n from rollup_1m")).scalar_one() == 3


def test_concurrent_writers_on_new_minutes_store_and_queue_everything(engine: Engine) -> None:
    ids = [make_series(engine, f"t{i}")["dedicated"] for i in range(20)]
    errors: list[BaseException] = []

    def write(offset_ms: int) -> None:
        try:
            for k in range(10):
                batch = [
                    ok(sid, T0 + timedelta(seconds=k * 6, milliseconds=offset_ms), 10)
                    for sid in ids
                ]
                with engine.begin() as conn:
                    write_samples(conn, batch)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(ms,)) for ms in (0, 1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 4 * 10 * 20
        assert _dirty(conn) == _expected_dirty(conn)


@pytest.mark.parametrize(
    ("field", "value"),
    [("sid", 2**32 + 7), ("serial", -(2**31) - 1), ("round_trips", 70_000)],
)
def test_an_integer_its_column_cannot_hold_is_refused_not_wrapped(
    engine: Engine, field: str, value: int
) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    bad = ok(sid, T0 + timedelta(seconds=1), 10)
    setattr(bad, field, value)
    with (
        engine.begin() as conn,
        pytest.raises(
            SampleWriteError,
            match=rf"sample #1 .*: {field} {value} does not fit the store's column",
        ),
    ):
        write_samples(conn, [ok(sid, T0, 10), bad])
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 0
