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
# Counts of a rollup row: every run (n) = ok + error + timeout + skipped + probe.
# ``n_error`` counts the target's errors only; ``n_probe`` the probe-side errors
# (status 'error', class PROBE: app.samples.ErrorClass.PROBE), which never count against
# a target: availability = n_ok / (n - n_skipped - n_probe) (app.samples.availability_ratio).
COUNT_COLUMNS: tuple[str, ...] = ("n", "n_ok", "n_error", "n_timeout", "n_skipped", "n_probe")
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


def probe_side_sql(alias: str = "") -> str:
    """SQL predicate over raw samples: a probe-side error (not the target's failure)."""
    a = f"{alias}." if alias else ""
    return f"({a}status = 'error' and {a}error_class = 'PROBE')"


def target_error_sql(alias: str = "") -> str:
    """SQL predicate over raw samples: an error of the target (status 'error', not PROBE)."""
    a = f"{alias}." if alias else ""
    return f"({a}status = 'error' and {a}error_class is distinct from 'PROBE')"


def failed_sql(alias: str = "") -> str:
    """SQL predicate over raw samples: the target failed (its error, or a timeout).
    Probe-side errors and skipped runs are neither ok nor failed."""
    a = f"{alias}." if alias else ""
    return f"({a}status = 'timeout' or {target_error_sql(alias)})"


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


# The count columns before migration 0023 added ``n_probe`` (for migrations that run
# store code against the tables as they were then).
COUNT_COLUMNS_0022: tuple[str, ...] = COUNT_COLUMNS[:5]


def rollup_value_columns(
    phases: tuple[str, ...] = PHASES, counts: tuple[str, ...] = COUNT_COLUMNS
) -> list[str]:
    """Columns of a rollup row other than its key (series_id, bucket)."""
    return [*counts, *ERROR_COLUMNS, *phase_columns(phases)]


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
