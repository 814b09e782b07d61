"""Probe-side errors (class PROBE) never count against a target, in every store reader.

A series with 6 ok samples, 2 errors of the target (TNS), 1 timeout and 3 probe-side
errors (python-oracledb's IndexError, a series connwatch could not build): the target
measured 9 runs and 6 succeeded, whatever reads it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample
from app.store.read.availability import availability, failure_codes
from app.store.read.compare import compare
from app.store.read.incidents import outages
from app.store.read.recent import activity
from app.store.read.samples import read_samples
from app.store.read.timeseries import summary, timeseries
from app.store.read.weekly import weekly
from tests.store.conftest import T0, failed, make_series, ok, store


def _probe_error(sid: int, at: datetime, code: str = "PROBE-IndexError") -> Sample:
    s = failed(sid, at, code, ErrorClass.PROBE)
    s.error_phase = "query"
    return s


def _fill(engine: Engine, t0: datetime) -> int:
    sid = make_series(engine, "t1")["dedicated"]
    at = [t0 + timedelta(seconds=10 * i) for i in range(12)]
    samples = [ok(sid, at[i], 50) for i in range(6)]
    samples += [failed(sid, at[6]), failed(sid, at[7])]
    samples += [failed(sid, at[8], "TIMEOUT", ErrorClass.TIMEOUT)]
    samples += [_probe_error(sid, at[9]), _probe_error(sid, at[10])]
    samples += [_probe_error(sid, at[11], "PROBE-CONFIG")]
    store(engine, samples)
    return sid


def test_rollups_count_probe_side_errors_apart(engine: Engine) -> None:
    sid = _fill(engine, T0)
    with engine.connect() as conn:
        r = availability(conn, [sid], T0, T0 + timedelta(hours=1))
        (a,) = r.series
        assert (a.n, a.n_ok, a.n_error, a.n_timeout, a.n_skipped, a.n_probe) == (12, 6, 2, 1, 0, 3)
        assert a.availability == 6 / 9 and r.total.availability == 6 / 9
        assert {e.code: e.error_class for e in a.errors} == {
            "TNS-12520": "TNS",
            "TIMEOUT": "TIMEOUT",
            "PROBE-IndexError": "PROBE",
            "PROBE-CONFIG": "PROBE",
        }
        assert [e.code for e in a.target_errors] == ["TNS-12520", "TIMEOUT"]
        # every grain agrees: raw, 1-minute (merged), hour, day, week
        for start, end in ((T0, T0 + timedelta(minutes=5)), (T0, T0 + timedelta(days=3))):
            (p,) = summary(conn, [sid], start, end, phase="logon").points
            assert (p.n, p.n_ok, p.n_failed, p.n_probe) == (12, 6, 3, 3), (start, end)
        (p,) = timeseries(conn, [sid], T0, T0 + timedelta(days=1), max_points=1).points
        assert (p.n_failed, p.n_probe) == (3, 3)
        (w,) = weekly(conn, T0, T0 + timedelta(days=7), phase="logon")
        assert (w.n, w.n_failed, w.n_probe) == (12, 3, 3) and w.availability == 100 * 6 / 9
        codes = failure_codes(conn, [sid], T0, T0 + timedelta(hours=1), timedelta(hours=1))
        assert codes[(sid, T0)]["PROBE-IndexError"] == 2  # listed, for markers shown apart


def test_compare_leaves_probe_side_errors_out_of_availability(engine: Engine) -> None:
    sid = _fill(engine, T0)
    with engine.connect() as conn:
        tid = conn.exec_driver_sql("select id from targets").scalar_one()
        res = compare(conn, tid, T0, T0 + timedelta(hours=1), phase="logon")
    (m,) = res.modes
    assert m.series_ids == [sid] and m.n_probe == 3 and m.availability == 6 / 9


def test_samples_filter_for_probe_side_errors(engine: Engine) -> None:
    sid = _fill(engine, T0)
    with engine.connect() as conn:
        only = read_samples(conn, series_ids=[sid], statuses=["error"], probe_side=True)
        none = read_samples(conn, series_ids=[sid], statuses=["error", "timeout"], probe_side=False)
    assert sorted(s.error_code or "" for s in only.samples) == [
        "PROBE-CONFIG",
        "PROBE-IndexError",
        "PROBE-IndexError",
    ]
    assert all(s.error_class is ErrorClass.PROBE for s in only.samples)
    assert sorted(s.error_code or "" for s in none.samples) == ["TIMEOUT", "TNS-12520", "TNS-12520"]


def test_recent_activity_and_outages_ignore_probe_side_errors(engine: Engine) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    sid = make_series(engine, "t1")["dedicated"]
    at = [now - timedelta(seconds=200 - 10 * i) for i in range(8)]
    samples = [ok(sid, at[0], 50), *[_probe_error(sid, t) for t in at[1:6]]]
    samples += [failed(sid, at[6]), failed(sid, at[7])]
    store(engine, samples)
    with engine.connect() as conn:
        a = activity(conn, [sid], now)[sid]
        found = outages(conn, [sid], now - timedelta(hours=1), now, min_failed=3)
    assert (a.n_5m, a.ok_5m, a.failed_15m, a.probe_15m, a.unmeasured_5m) == (8, 1, 2, 5, 5)
    assert found == []  # 2 failures of the target, the 5 probe-side errors are not a run
