"""Names shared by the store's SQL: timing phases, rollup grains and their columns."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import timedelta
from typing import Any

import psycopg
from sqlalchemy.engine import Connection

from app.samples import Sample

# Timing phases kept in rollups (``<phase>_ns`` in samples). ``total`` first.
PHASES: tuple[str, ...] = ("total", "logon", "ping", "query", "logoff", "commit", "acquire")

# Every bucket boundary is a multiple of its width from this instant (a Monday, UTC),
# so minutes, hours, days and weeks all align and no session time zone matters.
ORIGIN_SQL = "timestamptz '2000-01-03 00:00:00+00'"

PHASE_COLUMNS: tuple[str, ...] = ("n", "min", "max", "sum", "p50", "p95", "p99", "hi", "hc")
COUNT_COLUMNS: tuple[str, ...] = ("n", "n_ok", "n_error", "n_timeout", "n_skipped")
ERROR_COLUMNS: tuple[str, ...] = ("err_class", "err_code")

# The columns of ``samples`` in table order, and their PostgreSQL types (for binary COPY).
# ``row_to_sample`` builds a Sample from a row positionally, so the table's column
# order is the dataclass's field order (tests/store/test_layout.py checks the table).
COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Sample))
SAMPLE_TYPES: tuple[str, ...] = (
    "int4",
    "timestamptz",
    "timestamptz",
    "text",
    *(["int8"] * 7),
    "int2",
    "jsonb",
    "text",
    "text",
    "text",
    "text",
    "int4",
    "int4",
    "text",
    "text",
    "text",
    "text",
    "text",
    "jsonb",
)


# The serverstats figures the server charts draw, in the order of ``server_stats.chart``
# (a real[] beside the jsonb, so a chart reads 8 floats per row instead of the whole jsonb).
SERVER_CHART_METRICS: tuple[str, ...] = (
    "logons_per_s",
    "cm_ms_per_logon",
    "pool_waits_per_s",
    "pool_busy_pct",
    "dispatcher_busy_pct",
    "common_wait_ms",
    "processes_pct",
    "sessions_pct",
)


@dataclass(frozen=True, slots=True)
class Grain:
    name: str  # "raw", "1m", "1h", "1d"
    table: str
    width: timedelta
    sql_width: str


RAW = Grain("raw", "samples", timedelta(0), "0")
MINUTE = Grain("1m", "rollup_1m", timedelta(minutes=1), "1 minute")
HOUR = Grain("1h", "rollup_1h", timedelta(hours=1), "1 hour")
DAY = Grain("1d", "rollup_1d", timedelta(days=1), "1 day")
WEEK = Grain("1w", "rollup_1w", timedelta(days=7), "7 days")


def phase_columns(phases: tuple[str, ...] = PHASES) -> list[str]:
    return [f"{p}_{c}" for p in phases for c in PHASE_COLUMNS]


def rollup_value_columns(phases: tuple[str, ...] = PHASES) -> list[str]:
    """Columns of a rollup row other than its key (series_id, bucket)."""
    return [*COUNT_COLUMNS, *ERROR_COLUMNS, *phase_columns(phases)]


def check_phase(phase: str) -> str:
    if phase not in PHASES:
        raise ValueError(f"unknown timing phase {phase!r}; expected one of {', '.join(PHASES)}")
    return phase


def driver_connection(conn: Connection | psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    """The psycopg connection under a SQLAlchemy connection (or the argument itself)."""
    if isinstance(conn, psycopg.Connection):
        return conn
    raw = conn.connection.driver_connection
    if not isinstance(raw, psycopg.Connection):
        raise TypeError("the store needs the psycopg (postgresql+psycopg://) driver")
    return raw


def no_jit(conn: Connection) -> None:
    """Turn JIT off for the rest of this transaction.

    The store's reads are short, but long ranges are costed high enough for
    PostgreSQL's JIT, whose compile time (up to seconds with optimisation) exceeds
    the whole query's run time.
    """
    conn.exec_driver_sql("set local jit = off")
