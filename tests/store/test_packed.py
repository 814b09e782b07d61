"""Packed raw samples: lossless compaction, reads of both forms, late writes, retention."""

from __future__ import annotations

import csv
import io
import threading
import time
from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from app import migrate
from app.config import Settings
from app.samples import ErrorClass, Sample, SampleStatus
from app.store.read.incidents import outages
from app.store.read.samples import export_csv, read_samples, samples_around
from app.store.read.timeseries import timeseries
from app.store.write.ingest import write_samples
from app.store.write.maintenance import maintain
from app.store.write.packed import compact_day, compactable_days, drop_packed_duplicates
from app.store.write.partitions import apply_retention, partitions_of
from app.store.write.rollups import roll_up_pending
from tests.store.conftest import failed, make_series, ok

DAY = (datetime.now(UTC) - timedelta(days=5)).date()
D0 = datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC)


def odd_samples(sid: int) -> list[Sample]:
    """Every column set, NULLs, jsonb, irregular times, all statuses, across two hours."""
    at = D0 + timedelta(hours=3, minutes=59, seconds=30, microseconds=123)
    out = [
        Sample(
            series_id=sid,
            scheduled_at=at,
            started_at=at - timedelta(microseconds=7),  # started before it was due
            status=SampleStatus.OK,
            total_ns=9_223_372_036_854_775_807,
            logon_ns=0,
            ping_ns=1,
            query_ns=None,
            logoff_ns=123_456_789,
            commit_ns=5,
            acquire_ns=6,
            round_trips=32767,
            logon_phases={"tcp_connect": 1, "auth1": 2, "nested": {"a": [1, 2]}},  # type: ignore[dict-item]
            sid=-2147483648,
            serial=2147483647,
            instance="ORCL1",
            service="svc.example",
            server_type="DEDICATED",
            agent="agent-1",
            site="site a",
            extra={"level": 3, "note": 'é ü "quoted", comma', "none": None},
        ),
        Sample(
            series_id=sid,
            scheduled_at=at + timedelta(seconds=10),
            started_at=at + timedelta(seconds=10),
            status=SampleStatus.TIMEOUT,
            error_class=ErrorClass.TIMEOUT,
            error_code="TIMEOUT",
            error_phase="logon",
            error_message='line one | line two, with "quotes"\nand a newline',
        ),
        Sample(
            series_id=sid,
            scheduled_at=at + timedelta(seconds=27, microseconds=999_999),
            started_at=at + timedelta(seconds=28),
            status=SampleStatus.SKIPPED,
            extra={},
        ),
        failed(sid, at + timedelta(seconds=35)),
        ok(sid, at + timedelta(minutes=1, seconds=11), 61.5, instance=""),
    ]
    return out


def regular(sid: int, start: datetime, n: int, step_s: int = 10) -> list[Sample]:
    return [
        ok(sid, start + timedelta(seconds=step_s * i), 40 + (i * 7919) % 50, sid=i, serial=i * 3)
        if i % 97
        else failed(sid, start + timedelta(seconds=step_s * i))
        for i in range(n)
    ]


def all_rows(engine: Engine, ids: list[int]) -> list[tuple[object, ...]]:
    with engine.begin() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "select * from connwatch_samples(cast(:ids as integer[]), "
                    "'-infinity', 'infinity') order by series_id, scheduled_at"
                ),
                {"ids": ids},
            )
        ]


def row_count(engine: Engine, day: date) -> int:
    with engine.begin() as conn:
        return int(conn.execute(text(f"select count(*) from samples_p{day:%Y%m%d}")).scalar_one())


def write(engine: Engine, samples: list[Sample]) -> int:
    with engine.begin() as conn:
        return write_samples(conn, samples)


def test_every_column_round_trips_exactly(engine: Engine) -> None:
    s = make_series(engine, "t", {"dedicated": 10000, "shared": 10000})
    a, b = s["dedicated"], s["shared"]
    write(engine, odd_samples(a) + regular(b, D0 + timedelta(minutes=30), 500))
    before = all_rows(engine, [a, b])
    assert len(before) == 505
    with engine.begin() as conn:
        pages_before = read_samples(conn, series_ids=[a], limit=10000).samples
    rep = compact_day(engine, DAY)
    assert (rep.samples, rep.rows_merged) == (505, 505)
    assert row_count(engine, DAY) == 0
    with engine.begin() as conn:
        packed = conn.execute(
            text("select series_id, hour, n, n_not_ok from samples_packed order by 1, 2")
        ).all()
    # series a: 3 samples in hour 3 (2 not ok), 2 in hour 4 (1 failed)
    assert [(r[0], r[1].hour, r[2], r[3]) for r in packed if r[0] == a] == [
        (a, 3, 3, 2),
        (a, 4, 2, 1),
    ]
    assert sum(r[2] for r in packed if r[0] == b) == 500
    assert all_rows(engine, [a, b]) == before
    with engine.begin() as conn:
        assert read_samples(conn, series_ids=[a], limit=10000).samples == pages_before
    assert pages_before[-1].extra == {"level": 3, "note": 'é ü "quoted", comma', "none": None}
    assert pages_before[-1].query_ns is None and pages_before[-1].total_ns == 2**63 - 1
    assert pages_before[0].instance == ""


def test_compaction_is_idempotent(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    write(engine, regular(sid, D0, 2000))
    compact_day(engine, DAY)
    with engine.begin() as conn:
        first = conn.execute(text("select * from samples_packed order by hour")).all()
    again = compact_day(engine, DAY)
    assert again.samples == 0 and again.packed_rows == 0
    with engine.begin() as conn:
        assert conn.execute(text("select * from samples_packed order by hour")).all() == first
        assert compactable_days(conn, after_days=2) == []


def _reads(engine: Engine, ids: list[int]) -> dict[str, object]:
    lo, hi = D0, D0 + timedelta(days=1)
    with engine.begin() as conn:
        pages = []
        cursor = None
        while True:
            page = read_samples(conn, series_ids=ids, limit=333, after=cursor)
            pages.append([(x.series_id, x.scheduled_at) for x in page.samples])
            cursor = page.next_cursor
            if cursor is None:
                break
        oldest_first = read_samples(conn, series_ids=ids, limit=50, newest_first=False)
        errors = read_samples(conn, series_ids=ids, statuses=["error", "timeout"], limit=1000)
        bounded = read_samples(
            conn, series_ids=ids, start=lo + timedelta(hours=1), end=lo + timedelta(hours=2)
        )
        around = samples_around(
            conn, [(ids[0], lo + timedelta(minutes=5), lo + timedelta(minutes=7))], limit=500
        )
        ts = timeseries(conn, ids, lo, hi, max_points=24)
        outs = outages(conn, ids, lo, hi, min_failed=3)
    csv_text = b"".join(export_csv(engine, series_ids=ids, start=lo, end=hi)).decode()
    csv_err = b"".join(
        export_csv(engine, series_ids=ids, statuses=["error"], start=lo, end=hi)
    ).decode()
    return {
        "pages": pages,
        "oldest_first": oldest_first,
        "errors": errors,
        "bounded": bounded,
        "around": around,
        "ts": ts,
        "outages": outs,
        "csv": csv_text,
        "csv_err": csv_err,
    }


def test_reads_are_identical_before_and_after_compaction(engine: Engine) -> None:
    s = make_series(engine, "t", {"dedicated": 10000, "shared": 10000})
    a, b = s["dedicated"], s["shared"]
    outage = [failed(a, D0 + timedelta(hours=3, seconds=10 * i)) for i in range(5)]
    write(engine, regular(a, D0, 2000) + regular(b, D0 + timedelta(seconds=3), 1500))
    with engine.begin() as conn:
        conn.execute(
            text(
                "delete from samples where series_id = :a "
                "and scheduled_at >= :t0 and scheduled_at < :t1"
            ),
            {"a": a, "t0": D0 + timedelta(hours=3), "t1": D0 + timedelta(hours=3, minutes=1)},
        )
    write(engine, outage)
    before = _reads(engine, [a, b])
    compact_day(engine, DAY)
    assert row_count(engine, DAY) == 0
    after = _reads(engine, [a, b])
    for key in before:
        assert after[key] == before[key], key
    # known answers
    assert sum(len(p) for p in before["pages"]) == 3499  # type: ignore[arg-type]
    errs = before["errors"].samples  # type: ignore[attr-defined]
    assert len(errs) == 5 + len(range(0, 2000, 97)) + len(range(0, 1500, 97))
    assert [o.failed for o in before["outages"]] == [5]  # type: ignore[attr-defined]
    rows = list(csv.reader(io.StringIO(before["csv"])))  # type: ignore[arg-type]
    assert rows[0][:4] == ["target", "mode", "series_id", "scheduled_at"]
    assert len(rows) == 3500 and rows[1][0] == "t" and rows[1][1] == "dedicated"
    assert [len(x) for x in before["around"]] == [12]  # type: ignore[attr-defined]
    assert before["bounded"].samples[0].scheduled_at == D0 + timedelta(hours=2) - timedelta(
        seconds=7
    )  # type: ignore[attr-defined]


def test_late_write_into_a_packed_day_is_stored_once_and_merged(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    first = regular(sid, D0, 600)
    write(engine, first)
    roll_up_pending(engine)
    compact_day(engine, DAY)
    late = [ok(sid, D0 + timedelta(seconds=5 + 10 * i), 99.0) for i in range(100)]
    replay = first[100:300] + late  # a spool replay: 200 already stored, 100 new
    with engine.begin() as conn:
        assert len(drop_packed_duplicates(conn, replay)) == 100
    assert write(engine, replay) == 100  # the writer drops the packed ones itself
    assert write(engine, replay) == 0
    assert row_count(engine, DAY) == 100
    rows = all_rows(engine, [sid])
    assert len(rows) == 700 and len({r[1] for r in rows}) == 700
    # rollups catch up with the backfill into the packed day
    roll_up_pending(engine)
    with engine.begin() as conn:
        n, n_ok = conn.execute(
            text("select sum(n), sum(n_ok) from rollup_1m where series_id = :s"), {"s": sid}
        ).one()
        assert n == 700 and n_ok == 700 - len(range(0, 600, 97))
        assert compactable_days(conn, after_days=2) == [DAY]
    rep = compact_day(engine, DAY)
    assert (rep.samples, rep.rows_merged) == (700, 100)
    assert row_count(engine, DAY) == 0
    assert all_rows(engine, [sid]) == rows


def test_maintain_compacts_due_days_after_their_rollups(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    now = datetime.now(UTC)
    days = [DAY, DAY + timedelta(days=1), (now - timedelta(days=1)).date()]
    for d in days:
        write(engine, regular(sid, datetime(d.year, d.month, d.day, tzinfo=UTC), 50))
    settings = Settings(compact_after_days=2)
    r1 = maintain(engine, settings, now=now)
    assert r1.rollup.minutes > 0
    assert [c.day for c in r1.compacted] == [DAY]  # one day per pass
    r2 = maintain(engine, settings, now=now)
    assert [c.day for c in r2.compacted] == [DAY + timedelta(days=1)]
    r3 = maintain(engine, settings, now=now)
    assert r3.compacted == []  # yesterday is not due
    assert len(all_rows(engine, [sid])) == 150
    with engine.begin() as conn:
        assert conn.execute(text("select sum(n) from rollup_1m")).scalar_one() == 150


def test_retention_drops_packed_partitions_with_the_row_ones(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    write(engine, regular(sid, D0, 50))
    roll_up_pending(engine)
    compact_day(engine, DAY)
    packed = f"samples_packed_p{DAY:%Y%m%d}"
    with engine.begin() as conn:
        assert packed in partitions_of(conn, "samples_packed")
        rep = apply_retention(
            conn, raw_days=4, minute_days=400, hour_days=1000, now=D0 + timedelta(days=5)
        )
        assert packed in rep.dropped and f"samples_p{DAY:%Y%m%d}" in rep.dropped
        assert packed not in partitions_of(conn, "samples_packed")
        assert conn.execute(text("select count(*) from samples_packed_days")).scalar_one() == 0
    assert all_rows(engine, [sid]) == []


def test_migration_upgrades_a_store_with_rows_and_downgrade_unpacks(pg_url: str) -> None:
    eng = create_engine(pg_url)
    try:
        migrate.upgrade(eng, "0003")
        sid = make_series(eng, "t")["dedicated"]
        with eng.begin() as conn:
            conn.execute(text("select connwatch_ensure_sample_partitions(:d, :d)"), {"d": DAY})
            conn.execute(
                text(
                    "insert into samples (series_id, scheduled_at, started_at, status, total_ns) "
                    "select :s, t, t, 'ok', 1000 from generate_series(cast(:a as timestamptz), "
                    "cast(:a as timestamptz) + interval '599 seconds', interval '10 seconds') t"
                ),
                {"s": sid, "a": D0},
            )
        migrate.upgrade(eng)
        rows = all_rows(eng, [sid])
        assert len(rows) == 60
        compact_day(eng, DAY)
        assert all_rows(eng, [sid]) == rows and row_count(eng, DAY) == 0
        migrate.downgrade(eng, "0003")
        with eng.begin() as conn:
            assert conn.execute(text("select count(*) from samples")).scalar_one() == 60
    finally:
        eng.dispose()


def test_a_day_waiting_for_its_rollup_is_not_compacted(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    write(engine, regular(sid, D0, 50))  # its minutes are dirty until rolled up
    with engine.begin() as conn:
        assert compactable_days(conn, after_days=2) == []
    roll_up_pending(engine)
    with engine.begin() as conn:
        assert compactable_days(conn, after_days=2) == [DAY]
        # not due yet when it ended less than compact_after_days ago
        assert compactable_days(conn, after_days=2, now=D0 + timedelta(days=2)) == []


def test_compaction_waits_for_a_writer_into_the_packed_day(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    write(engine, regular(sid, D0, 50))
    compact_day(engine, DAY)
    done = threading.Event()
    late = [ok(sid, D0 + timedelta(seconds=5 + 10 * i), 70.0) for i in range(10)]
    with engine.begin() as conn:
        assert write_samples(conn, late + regular(sid, D0, 50)) == 10
        # the writer holds the day's shared lock until it commits: compaction waits
        worker = threading.Thread(target=lambda: (compact_day(engine, DAY), done.set()))
        worker.start()
        assert not done.wait(1.0)
    worker.join(30)
    assert done.is_set()
    assert row_count(engine, DAY) == 0
    assert len(all_rows(engine, [sid])) == 60


def _wait_for_lock_waiters(engine: Engine, n: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with engine.begin() as conn:
            waiting = conn.execute(
                text("select count(*) from pg_locks where locktype = 'advisory' and not granted")
            ).scalar_one()
        if waiting >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} sessions waiting for an advisory lock")


def test_a_replay_racing_the_first_compaction_is_not_duplicated(engine: Engine) -> None:
    sid = make_series(engine, "t")["dedicated"]
    first = regular(sid, D0, 50)
    write(engine, first)
    roll_up_pending(engine)
    got: dict[str, object] = {}
    with engine.begin() as conn:
        write_samples(conn, [ok(sid, D0 + timedelta(seconds=5), 70.0)])  # holds the day
        comp = threading.Thread(target=lambda: got.update(c=compact_day(engine, DAY)))
        comp.start()
        _wait_for_lock_waiters(engine, 1)
        # a replay (10 stored samples, 1 new) arrives while the compaction waits
        replay = [*first[:10], ok(sid, D0 + timedelta(seconds=15), 80.0)]
        writer = threading.Thread(target=lambda: got.update(w=write(engine, replay)))
        writer.start()
        _wait_for_lock_waiters(engine, 2)
    comp.join(30)
    writer.join(30)
    assert got["w"] == 1
    rows = all_rows(engine, [sid])
    assert len(rows) == 52 and len({r[1] for r in rows}) == 52


@pytest.mark.parametrize("again_after_a_late_write", [False, True])
def test_a_reader_of_the_day_and_its_compaction_do_not_deadlock(
    engine: Engine, again_after_a_late_write: bool
) -> None:
    sid = make_series(engine, "t")["dedicated"]
    samples = regular(sid, D0, 400)
    write(engine, samples[:300] if again_after_a_late_write else samples)
    if again_after_a_late_write:
        compact_day(engine, DAY)
        write(engine, samples[300:])
    roll_up_pending(engine)
    got: dict[str, object] = {}
    end = D0 + timedelta(days=1)
    with engine.begin() as conn:
        first = read_samples(conn, series_ids=[sid], start=D0, end=end, limit=1000).samples
        comp = threading.Thread(target=lambda: got.update(c=compact_day(engine, DAY)))
        comp.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the compaction waits for this reader
            with engine.begin() as other:
                if other.execute(
                    text(
                        "select count(*) from pg_locks where locktype = 'relation' and not granted"
                    )
                ).scalar_one():
                    break
            time.sleep(0.05)
        again = read_samples(conn, series_ids=[sid], start=D0, end=end, limit=1000).samples
        assert again == first and len(first) == 400
    comp.join(30)
    assert got["c"].samples == 400  # type: ignore[attr-defined]
