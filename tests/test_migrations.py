"""Migrations: an empty database goes to head and back to base, and head matches the models."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Engine

import app.auth.tables  # noqa: F401  (its tables join the metadata compared below)
from app import migrate
from app.models import metadata


@pytest.fixture
def engine(pg_url: str) -> Engine:
    eng = create_engine(pg_url)
    yield eng
    eng.dispose()


def test_upgrade_to_head_and_back_to_base(engine: Engine) -> None:
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.is_at_head(engine)
    tables = set(inspect(engine).get_table_names())
    assert {"targets", "modes", "series", "samples", "agents"} <= tables
    migrate.downgrade(engine)
    assert migrate.current_revision(engine) is None
    left = set(inspect(engine).get_table_names()) - {"alembic_version"}
    assert left == set()


def test_head_has_every_model_column(engine: Engine) -> None:
    migrate.upgrade(engine)
    insp = inspect(engine)
    for table in metadata.sorted_tables:
        db_cols = {c["name"] for c in insp.get_columns(table.name)}
        assert db_cols == {c.name for c in table.columns}, table.name


def test_samples_are_partitioned_by_day_ahead_of_time(engine: Engine) -> None:
    migrate.upgrade(engine)
    with engine.begin() as conn:
        parts = (
            conn.execute(
                text(
                    "select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid "
                    "join pg_class p on p.oid = i.inhparent where p.relname = 'samples'"
                )
            )
            .scalars()
            .all()
        )
        today = datetime.now(UTC).date()
        assert f"samples_p{today:%Y%m%d}" in parts
        assert len(parts) >= 8
        created = conn.execute(
            text("select connwatch_ensure_sample_partitions(current_date, current_date + 2)")
        ).scalar_one()
        assert created == 0  # idempotent: they exist already


def test_writing_the_same_sample_twice_is_harmless(engine: Engine) -> None:
    migrate.upgrade(engine)
    now = datetime.now(UTC).replace(microsecond=0)
    row = {"s": 1, "t": now, "st": "ok"}
    insert = text(
        "insert into samples (series_id, scheduled_at, started_at, status) "
        "values (:s, :t, :t, :st) on conflict do nothing"
    )
    with engine.begin() as conn:
        conn.execute(insert, row)
        conn.execute(insert, row)
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 1
        # the row lands in the partition of its UTC day
        part = conn.execute(text("select tableoid::regclass::text from samples")).scalar_one()
        assert part == f"samples_p{now:%Y%m%d}"
