"""Store tests run against a real PostgreSQL migrated to head (one fresh database per test)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.samples import ErrorClass, Sample, SampleStatus


@pytest.fixture
def engine(migrated_engine: Engine) -> Engine:
    return migrated_engine


def make_target(
    conn: Connection, name: str, kind: str, modes: dict[str, list[tuple[str, int]]]
) -> dict[tuple[str, str], int]:
    """Create one target with the given modes (name -> [(probe, interval ms)]);
    (mode, probe) -> series id."""
    tid = conn.execute(
        text(
            "insert into targets (name, kind, dsn, username) "
            "values (:n, :k, 'db:1521/svc', 'u') returning id"
        ),
        {"n": name, "k": kind},
    ).scalar_one()
    out: dict[tuple[str, str], int] = {}
    for mode, probes in modes.items():
        mid = conn.execute(
            text("insert into modes (target_id, name, kind) values (:t, :m, :m) returning id"),
            {"t": tid, "m": mode},
        ).scalar_one()
        for probe, interval_ms in probes:
            out[(mode, probe)] = conn.execute(
                text(
                    "insert into series (mode_id, probe, interval_ms, timeout_ms) "
                    "values (:m, :p, :i, :i) returning id"
                ),
                {"m": mid, "p": probe, "i": interval_ms},
            ).scalar_one()
    return out


def make_series(engine: Engine, target: str, modes: dict[str, int] | None = None) -> dict[str, int]:
    """Create one Oracle target with the given modes (name -> interval ms); mode -> series id."""
    modes = modes or {"dedicated": 10000}
    with engine.begin() as conn:
        ids = make_target(conn, target, "oracle", {m: [("connping", i)] for m, i in modes.items()})
    return {mode: sid for (mode, _), sid in ids.items()}


def ok(series_id: int, at: datetime, total_ms: float, **kw: Any) -> Sample:
    ns = int(total_ms * 1_000_000)
    return Sample(
        series_id=series_id,
        scheduled_at=at,
        started_at=at + timedelta(microseconds=250),
        status=SampleStatus.OK,
        total_ns=ns,
        logon_ns=kw.pop("logon_ns", int(ns * 0.8)),
        logoff_ns=kw.pop("logoff_ns", ns - int(ns * 0.8)),
        **kw,
    )


def failed(
    series_id: int, at: datetime, code: str = "TNS-12520", cls: ErrorClass = ErrorClass.TNS
) -> Sample:
    status = SampleStatus.TIMEOUT if cls is ErrorClass.TIMEOUT else SampleStatus.ERROR
    return Sample(
        series_id=series_id,
        scheduled_at=at,
        started_at=at,
        status=status,
        error_class=cls,
        error_code=code,
        error_phase="logon",
        error_message="listener could not find available handler",
    )


T0 = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)  # a Monday


def store(engine: Engine, samples: list[Sample]) -> None:
    """Write samples and roll them up, as the agent and its maintenance loop would."""
    from app.store.write.ingest import write_samples
    from app.store.write.rollups import roll_up_pending

    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)


def close(got: float | None, want: float, tol: float = 0.0196) -> bool:
    return got is not None and abs(got - want) <= tol * abs(want) + 1e-9
