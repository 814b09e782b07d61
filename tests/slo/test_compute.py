"""SLO counts from raw samples and from rollups agree; attainment, budget and burn rates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.engine import Engine

from app.samples import ErrorClass
from app.slo.compute import Counts, SloStatus, burn_rate, series_counts, slo_status
from app.slo.definitions import SloSpec, get_slo, upsert_slo
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.selector import Selector
from tests.store.conftest import failed, make_series, ok


def _write(engine: Engine, samples: list) -> None:  # type: ignore[type-arg]
    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)


def test_counts_from_raw_and_from_rollups(migrated_engine: Engine) -> None:
    sid = make_series(migrated_engine, "sales")["dedicated"]
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=2)
    start = end - timedelta(minutes=20)
    samples = []
    for i in range(120):  # every 10 s for 20 minutes
        at = start + timedelta(seconds=10 * i)
        if i % 10 == 0:
            samples.append(failed(sid, at))
        else:  # logon = 0.8 x total: 80 ms or 240 ms
            samples.append(ok(sid, at, 100.0 if i % 3 else 300.0))
    _write(migrated_engine, samples)
    n_failed = 12
    n_slow = sum(1 for i in range(120) if i % 10 and not i % 3)
    with migrated_engine.connect() as conn:
        raw = series_counts(conn, [sid], start, end, threshold_ms=200)
        avail = series_counts(conn, [sid], start, end)
        # the same 20 minutes inside a 40-minute window: read from 1-minute rollups
        rolled = series_counts(conn, [sid], end - timedelta(minutes=40), end, threshold_ms=200)
    assert raw[sid] == Counts(120, 120 - n_failed - n_slow)
    assert avail[sid] == Counts(120, 108)
    assert rolled[sid] == raw[sid]


def test_probe_side_and_skipped_runs_do_not_count(migrated_engine: Engine) -> None:
    from app.samples import Sample, SampleStatus

    sid = make_series(migrated_engine, "hr")["dedicated"]
    t0 = datetime.now(UTC) - timedelta(minutes=5)
    skipped = Sample(sid, t0 + timedelta(seconds=1), t0, SampleStatus.SKIPPED)
    _write(
        migrated_engine,
        [
            ok(sid, t0, 50.0),
            skipped,
            failed(sid, t0 + timedelta(seconds=2), "TIMEOUT", ErrorClass.TIMEOUT),
            failed(sid, t0 + timedelta(seconds=3), "PROBE-IndexError", ErrorClass.PROBE),
        ],
    )
    with migrated_engine.connect() as conn:
        got = series_counts(conn, [sid], t0 - timedelta(minutes=1), t0 + timedelta(minutes=1))
    assert got[sid] == Counts(2, 1)


def test_status_budget_and_burn() -> None:
    s = SloStatus.of(Counts(10_000, 9_970), 99.5)
    assert s.attainment == pytest.approx(99.7)
    assert s.budget_total == pytest.approx(50)
    assert s.budget_remaining_pct == pytest.approx(40.0)
    assert s.met
    assert burn_rate(Counts(1000, 928), 99.5) == pytest.approx(14.4)
    assert SloStatus.of(Counts(), 99.5).attainment is None


def test_slo_definitions_round_trip_and_status(migrated_engine: Engine) -> None:
    ids = make_series(migrated_engine, "sales", {"dedicated": 10000, "pooled": 10000})
    spec = SloSpec(
        name="logons-fast",
        selector=Selector(targets=["sales"]),
        objective=99.0,
        phase="logon",
        threshold_ms=200,
        window_days=30,
    )
    with migrated_engine.begin() as conn:
        upsert_slo(conn, spec)
        got = get_slo(conn, "logons-fast")
    assert got is not None and got.spec == spec
    assert "99 % of runs of targets sales" in spec.describe()
    end = datetime.now(UTC).replace(microsecond=0)
    at = end - timedelta(minutes=3)
    _write(migrated_engine, [ok(ids["dedicated"], at, 100.0), failed(ids["pooled"], at)])
    with migrated_engine.connect() as conn:
        status = slo_status(
            conn,
            spec,
            {"dedicated": [ids["dedicated"]], "pooled": [ids["pooled"]]},
            end,
            window=timedelta(minutes=10),
        )
    assert status["dedicated"].attainment == 100.0 and status["dedicated"].met
    assert status["pooled"].attainment == 0.0
    assert status["pooled"].budget_remaining_pct == pytest.approx(-9900.0)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"name": "x", "objective": 100}, "objective"),
        ({"name": "x", "objective": 99, "phase": "lgon"}, "phase"),
        ({"name": "-x", "objective": 99}, "name"),
        ({"name": "x", "objective": 99, "selector": {"probe": "pingg"}}, "selector.probe"),
    ],
)
def test_bad_slos_name_the_field(doc: dict[str, object], message: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        SloSpec.model_validate(doc)
    assert ".".join(str(p) for p in err.value.errors()[0]["loc"]) == message
