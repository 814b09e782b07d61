"""Maintenance: partitions ahead, rollups, and retention that drops whole partitions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings
from app.store.write.ingest import write_samples
from app.store.write.maintenance import maintain
from app.store.write.partitions import partitions_of
from tests.store.conftest import make_series, ok

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _settings() -> Settings:
    return Settings(
        retention_raw_days=35, retention_1m_days=400, retention_1h_days=1826, partition_days_ahead=3
    )


def test_partitions_are_created_ahead(engine: Engine) -> None:
    rep = maintain(engine, _settings(), now=NOW)
    with engine.connect() as conn:
        days = partitions_of(conn, "samples")
        months = partitions_of(conn, "rollup_1m")
    assert "samples_p20261124" in days and "rollup_1m_p202611" in months
    assert rep.partitions_created >= 2
    assert maintain(engine, _settings(), now=NOW).partitions_created == 0


def test_retention_drops_old_partitions_and_keeps_rollups(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    old = NOW - timedelta(days=40)  # past the raw horizon, within the 1-minute one
    recent = NOW - timedelta(days=2)
    ancient = NOW - timedelta(days=500)  # past the 1-minute horizon, within the 1-hour one
    with engine.begin() as conn:
        write_samples(
            conn,
            [
                ok(sid, t + timedelta(seconds=10 * i), 50)
                for t in (old, recent, ancient)
                for i in range(6)
            ],
        )
    # The first pass rolls the old days up before dropping them.
    rep = maintain(engine, _settings(), now=NOW)
    assert rep.rollup.minutes == 3
    assert f"samples_p{old:%Y%m%d}" in rep.retention.dropped
    assert f"samples_p{ancient:%Y%m%d}" in rep.retention.dropped
    assert f"rollup_1m_p{ancient:%Y%m}" in rep.retention.dropped
    with engine.connect() as conn:
        days = partitions_of(conn, "samples")
        assert f"samples_p{recent:%Y%m%d}" in days and f"samples_p{old:%Y%m%d}" not in days
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 6
        # rollups outlive raw data: 1-minute for 400 days, hours and days for 5 years
        assert conn.execute(text("select count(*) from rollup_1m")).scalar_one() == 2
        assert conn.execute(text("select count(*) from rollup_1h")).scalar_one() == 3
        assert conn.execute(text("select count(*) from rollup_1d")).scalar_one() == 3


def test_raw_day_waiting_for_rollup_is_not_dropped(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    old = NOW - timedelta(days=40)
    with engine.begin() as conn:
        write_samples(conn, [ok(sid, old, 50)])
    # Retention alone (no rollup pass possible: budget spent elsewhere) keeps the day.
    from app.store.write.partitions import apply_retention

    with engine.begin() as conn:
        rep = apply_retention(conn, raw_days=35, minute_days=400, hour_days=1826, now=NOW)
    assert rep.kept_pending == [f"samples_p{old:%Y%m%d}"] and not rep.dropped
    assert maintain(engine, _settings(), now=NOW).retention.dropped == [f"samples_p{old:%Y%m%d}"]


def test_old_day_rollups_are_pruned_beyond_five_years(engine: Engine) -> None:
    sid = make_series(engine, "t1")["dedicated"]
    with engine.begin() as conn:
        write_samples(
            conn, [ok(sid, NOW - timedelta(days=1900), 50), ok(sid, NOW - timedelta(days=3), 50)]
        )
    rep = maintain(engine, _settings(), now=NOW)
    assert rep.retention.deleted_1d_rows == 1
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from rollup_1d")).scalar_one() == 1
        assert conn.execute(text("select count(*) from rollup_1w")).scalar_one() == 1
        assert conn.execute(text("select count(*) from rollup_1h")).scalar_one() == 1
