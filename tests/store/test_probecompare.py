"""compare_probe: the mode comparison restricted to one probe kind, on hand-built data."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.store.compare import compare
from app.store.probecompare import compare_probe
from tests.store.conftest import T0, close, make_series, ok, store


def _add_series(engine: Engine, connping_id: int, probe: str) -> int:
    with engine.begin() as conn:
        return int(
            conn.execute(
                text(
                    "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                    "select mode_id, :p, 10000, 10000 from series where id = :s returning id"
                ),
                {"p": probe, "s": connping_id},
            ).scalar_one()
        )


@pytest.fixture
def mixed(engine: Engine) -> tuple[int, dict[str, int]]:
    """dedicated: connping 60 ms and sessionping reconnects 20 ms (3x as many); shared:
    connping 40 ms only. Two hours, one sample per 10 s per series."""
    ids = make_series(engine, "mixed", {"dedicated": 10000, "shared": 10000})
    sping = _add_series(engine, ids["dedicated"], "sessionping")
    samples = []
    for i in range(720):
        at = T0 + timedelta(seconds=10 * i)
        f = 1.0 + 0.02 * (i % 5 - 2)
        samples.append(ok(ids["dedicated"], at, 60.0 * f, logon_ns=int(60e6 * f)))
        samples.append(ok(ids["shared"], at, 40.0 * f, logon_ns=int(40e6 * f)))
        for k in range(3):
            t = at + timedelta(seconds=3 * k)
            samples.append(ok(sping, t, 20.0 * f, logon_ns=int(20e6 * f)))
    store(engine, samples)
    with engine.connect() as conn:
        tid = conn.execute(text("select id from targets where name = 'mixed'")).scalar_one()
    return int(tid), {**ids, "sessionping": sping}


def test_one_probe_kind_per_comparison(engine: Engine, mixed: tuple[int, dict[str, int]]) -> None:
    tid, ids = mixed
    with engine.connect() as conn:
        res = compare_probe(conn, tid, T0, T0 + timedelta(hours=2), probe="connping", phase="logon")
        pooled = compare(conn, tid, T0, T0 + timedelta(hours=2), phase="logon")
    by = {m.mode: m for m in res.modes}
    assert by["dedicated"].n == by["shared"].n == 720
    assert by["dedicated"].series_ids == [ids["dedicated"]]
    assert close(by["dedicated"].p50_ms, 60.0) and close(by["shared"].p50_ms, 40.0)
    assert by["shared"].ratio is not None and close(by["shared"].ratio, 40.0 / 60.0, 0.04)
    assert by["shared"].significant is True
    assert by["shared"].ci_low is not None and by["shared"].ci_low < by["shared"].ratio
    # the pooled comparison mixes the sessionping logons in: 4x the samples, a 20 ms median
    mixed_ded = next(m for m in pooled.modes if m.mode == "dedicated")
    assert mixed_ded.n == 4 * 720 and mixed_ded.p50_ms is not None and mixed_ded.p50_ms < 25


def test_a_mode_without_that_probe_is_empty(
    engine: Engine, mixed: tuple[int, dict[str, int]]
) -> None:
    tid, ids = mixed
    with engine.connect() as conn:
        res = compare_probe(conn, tid, T0, T0 + timedelta(hours=2), probe="sessionping")
    by = {m.mode: m for m in res.modes}
    assert by["dedicated"].n == 2160 and by["dedicated"].series_ids == [ids["sessionping"]]
    assert by["shared"].n == 0 and by["shared"].p50_ms is None and by["shared"].ratio is None
    assert by["shared"].series_ids == []
    assert by["dedicated"].ratio == 1.0 and res.baseline == "dedicated"


def test_unknown_probe_is_a_clear_error(engine: Engine) -> None:
    with engine.connect() as conn, pytest.raises(ValueError, match="probe: 'ping'"):
        compare_probe(conn, 1, T0, T0 + timedelta(hours=1), probe="ping")
