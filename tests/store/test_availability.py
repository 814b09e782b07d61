"""availability(): counts by status and the error breakdown."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from app.samples import ErrorClass, SampleStatus
from app.store.read.availability import ErrorCount, availability, code_class, failure_codes
from tests.store.conftest import T0, failed, make_series, ok, store


def test_counts_and_error_breakdown(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    d, s = ids["dedicated"], ids["shared"]
    at = [T0 + timedelta(seconds=10 * i) for i in range(20)]
    samples = [ok(d, at[i], 50) for i in range(10)]
    samples += [
        failed(d, at[10]),
        failed(d, at[11]),
        failed(d, at[12], "NET-ECONNREFUSED", ErrorClass.NET),
    ]
    samples += [failed(d, at[13], "TIMEOUT", ErrorClass.TIMEOUT)]
    skipped = ok(d, at[14], 1)
    skipped.status, skipped.total_ns = SampleStatus.SKIPPED, None
    samples += [skipped]
    samples += [ok(s, at[i], 40) for i in range(4)]
    store(engine, samples)
    with engine.connect() as conn:
        r = availability(conn, [d, s], T0, T0 + timedelta(hours=1))
    by = {x.series_id: x for x in r.series}
    a = by[d]
    assert (a.n, a.n_ok, a.n_error, a.n_timeout, a.n_skipped) == (15, 10, 3, 1, 1)
    assert a.availability == 10 / 14
    assert a.errors == [
        ErrorCount("TNS", "TNS-12520", 2),
        ErrorCount("NET", "NET-ECONNREFUSED", 1),
        ErrorCount("TIMEOUT", "TIMEOUT", 1),
    ]
    assert by[s].availability == 1.0 and by[s].errors == []
    assert r.total.n == 19 and r.total.availability == 14 / 18 and r.source == "1m"


def test_code_class() -> None:
    assert [code_class(c) for c in ("ORA-01017", "DPY-4011", "PG-28P01", "ValueError")] == [
        "ORA",
        "DPY",
        "PG",
        "OTHER",
    ]


def test_failure_codes_per_bucket_from_rollups(engine: Engine) -> None:
    ids = make_series(engine, "t1", {"dedicated": 10000, "shared": 10000})
    d, s = ids["dedicated"], ids["shared"]
    samples = [ok(d, T0 + timedelta(hours=h), 50) for h in range(30)]
    samples += [failed(d, T0 + timedelta(hours=1, minutes=m)) for m in (1, 2, 3)]
    samples += [failed(d, T0 + timedelta(hours=1, minutes=30), code="ORA-12541")]
    samples += [failed(d, T0 + timedelta(hours=26, minutes=5), code="DPY-4011", cls=ErrorClass.DPY)]
    samples += [failed(s, T0 + timedelta(hours=5, minutes=1), code="ORA-12520")]
    store(engine, samples)
    with engine.connect() as conn:
        hourly = failure_codes(conn, [d, s], T0, T0 + timedelta(days=2), timedelta(hours=1))
        daily = failure_codes(conn, [d], T0, T0 + timedelta(days=2), timedelta(days=1))
        six = failure_codes(conn, [s], T0, T0 + timedelta(days=2), timedelta(hours=6))
        with pytest.raises(ValueError, match="whole minutes"):
            failure_codes(conn, [d], T0, T0 + timedelta(hours=1), timedelta(seconds=30))
    assert hourly == {
        (d, T0 + timedelta(hours=1)): {"TNS-12520": 3, "ORA-12541": 1},
        (d, T0 + timedelta(hours=26)): {"DPY-4011": 1},
        (s, T0 + timedelta(hours=5)): {"ORA-12520": 1},
    }
    assert daily == {
        (d, T0): {"TNS-12520": 3, "ORA-12541": 1},
        (d, T0 + timedelta(days=1)): {"DPY-4011": 1},
    }
    assert six == {(s, T0): {"ORA-12520": 1}}
