"""heatmap(): weekday x hour cells in the requested time zone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.engine import Engine

from app.store.read.heatmap import heatmap
from tests.store.conftest import T0, close, failed, make_series, ok, store


def test_cells_by_weekday_and_hour(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    mon10 = T0 + timedelta(hours=10)  # T0 is a Monday 00:00 UTC
    tue15 = T0 + timedelta(days=1, hours=15)
    samples = [ok(sid, mon10 + timedelta(minutes=i), 10 + i % 3) for i in range(30)]
    samples += [ok(sid, tue15 + timedelta(minutes=i), 20) for i in range(20)]
    samples += [ok(sid, tue15 + timedelta(days=7, minutes=i), 40) for i in range(20)]
    samples.append(failed(sid, tue15 + timedelta(minutes=30)))
    store(engine, samples)
    with engine.connect() as conn:
        r = heatmap(conn, [sid], T0, T0 + timedelta(days=14))
        paris = heatmap(conn, [sid], T0, T0 + timedelta(days=14), tz="Europe/Paris")
    cells = {(c.weekday, c.hour): c for c in r.cells}
    assert set(cells) == {(1, 10), (2, 15)}
    assert close(cells[(1, 10)].p50_ms, 11.0) and cells[(1, 10)].n == 30
    tue = cells[(2, 15)]  # two Tuesdays merged: 20 at 20 ms, 20 at 40 ms
    assert (tue.n, tue.n_failed, tue.count) == (41, 1, 40)
    assert close(tue.p50_ms, 20.0) and close(tue.p95_ms, 40.0)
    assert {(c.weekday, c.hour) for c in paris.cells} == {(1, 11), (2, 16)}  # CET = UTC+1


def test_unknown_time_zone_is_refused(engine: Engine) -> None:
    with engine.connect() as conn, pytest.raises(ValueError, match="unknown time zone"):
        heatmap(conn, [1], T0, T0 + timedelta(days=1), tz="Mars/Olympus")
