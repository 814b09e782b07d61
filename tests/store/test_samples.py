"""Reading raw samples: keyset pages, filters, CSV export, windows around an instant."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import ErrorClass, SampleStatus
from app.store.read.samples import export_csv, read_samples, samples_around
from app.store.write.ingest import write_samples
from tests.store.conftest import T0, failed, make_series, ok


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
