"""The batch writer: idempotent, partitions on demand, every field round-trips."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample, SampleStatus
from app.store.ingest import SampleWriteError, write_samples
from app.store.samples import export_csv, read_samples, samples_around
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


def _three_series(engine: Engine) -> dict[str, int]:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    ids["other"] = make_series(engine, "t2")["dedicated"]
    batch = []
    for sid in ids.values():
        for i in range(20):
            at = T0 + timedelta(seconds=10 * i)
            batch.append(failed(sid, at) if i % 7 == 3 else ok(sid, at, 40 + i))
    with engine.begin() as conn:
        write_samples(conn, batch)
    return ids


def test_keyset_pages_cover_everything_once_in_order(engine: Engine) -> None:
    ids = _three_series(engine)
    for newest_first in (True, False):
        seen: list[tuple[datetime, int]] = []
        after = None
        with engine.connect() as conn:
            while True:
                page = read_samples(conn, limit=7, after=after, newest_first=newest_first)
                seen += [(s.scheduled_at, s.series_id or 0) for s in page.samples]
                if page.next_cursor is None:
                    break
                after = page.next_cursor
        assert len(seen) == 60 and len(set(seen)) == 60
        assert seen == sorted(seen, reverse=newest_first)
    assert set(ids.values()) == {sid for _, sid in seen}


def test_filters(engine: Engine) -> None:
    ids = _three_series(engine)
    with engine.connect() as conn:
        t1 = conn.execute(text("select id from targets where name = 't1'")).scalar_one()
        by_target = read_samples(conn, target_id=t1, limit=1000).samples
        errors = read_samples(conn, statuses=["error"], limit=1000).samples
        by_code = read_samples(conn, error_code="TNS-12520", series_ids=[ids["other"]]).samples
        window = read_samples(
            conn,
            series_ids=[ids["shared"]],
            start=T0 + timedelta(seconds=50),
            end=T0 + timedelta(seconds=80),
        ).samples
    assert len(by_target) == 40 and {s.series_id for s in by_target} == {
        ids["dedicated"],
        ids["shared"],
    }
    assert len(errors) == 9 and all(s.status is SampleStatus.ERROR for s in errors)
    assert errors[0].error_class is ErrorClass.TNS
    assert len(by_code) == 3
    assert [s.scheduled_at for s in window] == [T0 + timedelta(seconds=x) for x in (70, 60, 50)]


def test_bad_cursor_and_status_are_clear_errors(engine: Engine) -> None:
    with engine.connect() as conn:
        with pytest.raises(ValueError, match="invalid page cursor"):
            read_samples(conn, after="not-a-cursor")
        with pytest.raises(ValueError, match="unknown status 'broken'"):
            read_samples(conn, statuses=["broken"])


def test_csv_export_streams_every_sample(engine: Engine) -> None:
    ids = _three_series(engine)
    chunks = export_csv(
        engine,
        series_ids=[ids["dedicated"], ids["other"]],
        start=T0,
        end=T0 + timedelta(hours=1),
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(chunks).decode())))
    assert len(rows) == 40
    assert {r["target"] for r in rows} == {"t1", "t2"}
    first = rows[0]
    assert first["mode"] == "dedicated" and first["status"] == "ok"
    assert int(first["total_ns"]) == 40_000_000
    errs = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    export_csv(engine, statuses=["error"], start=T0, end=T0 + timedelta(hours=1))
                ).decode()
            )
        )
    )
    assert len(errs) == 9 and {r["error_code"] for r in errs} == {"TNS-12520"}


def test_samples_around_windows(engine: Engine) -> None:
    ids = _three_series(engine)
    with engine.connect() as conn:
        got = samples_around(
            conn,
            [
                (ids["shared"], T0, T0 + timedelta(seconds=30)),
                (ids["other"], T0 + timedelta(hours=5), T0 + timedelta(hours=6)),
            ],
        )
    assert [len(g) for g in got] == [3, 0]
    assert [s.scheduled_at for s in got[0]] == [T0 + timedelta(seconds=x) for x in (0, 10, 20)]
