"""The sample column layout the writer and readers share matches the migrated table."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.store.layout import COLUMNS, SAMPLE_TYPES


def test_columns_and_copy_types_are_the_tables_in_order(migrated_engine: Engine) -> None:
    with migrated_engine.connect() as conn:
        rows = conn.execute(
            text(
                "select a.attname, format_type(a.atttypid, null) from pg_attribute a "
                "where a.attrelid = 'samples'::regclass and a.attnum > 0 "
                "and not a.attisdropped order by a.attnum"
            )
        ).all()
    names = tuple(r[0] for r in rows)
    assert names == COLUMNS
    pg_short = {
        "integer": "int4",
        "bigint": "int8",
        "smallint": "int2",
        "timestamp with time zone": "timestamptz",
        "text": "text",
        "jsonb": "jsonb",
    }
    assert tuple(pg_short[r[1]] for r in rows) == SAMPLE_TYPES
