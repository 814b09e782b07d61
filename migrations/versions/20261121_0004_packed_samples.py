"""Packed raw samples: closed days rewritten into one compressed row per series and hour.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21

``samples_packed`` holds, per (series_id, hour), one array per sample column
(TOAST-compressed), partitioned by UTC day like ``samples`` (``samples_packed_pYYYYMMDD``).
``samples_packed_days`` lists the days that have been packed (the writer checks it
before writing into an old day). ``connwatch_samples(ids, lo, hi, failed_only)``
returns the raw samples of both forms in ``samples`` column order; every raw read
goes through it, or through ``connwatch_sample_timings`` (same arguments; only the
key, status, error class/code and timings, so fewer arrays are unpacked).
Layout and encoding: docs/store.md, "Bytes per sample".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (column of samples, its element type in samples_packed); scheduled_at and started_at
# are encoded (see below), the others are plain arrays in sample order.
_ARRAYS: tuple[tuple[str, str], ...] = (
    ("status", "text"),
    ("total_ns", "bigint"),
    ("logon_ns", "bigint"),
    ("ping_ns", "bigint"),
    ("query_ns", "bigint"),
    ("logoff_ns", "bigint"),
    ("commit_ns", "bigint"),
    ("acquire_ns", "bigint"),
    ("round_trips", "smallint"),
    ("logon_phases", "jsonb"),
    ("error_class", "text"),
    ("error_code", "text"),
    ("error_phase", "text"),
    ("error_message", "text"),
    ("sid", "integer"),
    ("serial", "integer"),
    ("instance", "text"),
    ("service", "text"),
    ("server_type", "text"),
    ("agent", "text"),
    ("site", "text"),
    ("extra", "jsonb"),
)

_TABLE_SQL = (
    """
create table samples_packed (
    series_id   integer     not null,
    hour        timestamptz not null,
    n           integer     not null,
    n_not_ok    integer     not null,
    at0_us      bigint      not null,
    step_us     bigint      not null,
    at_dev_us   bigint[]    not null,
    start_us    bigint[]    not null,
"""
    + ",\n".join(f"    {c:<13} {t}[]" for c, t in _ARRAYS)
    + """,
    constraint pk_samples_packed primary key (series_id, hour)
) partition by range (hour)
"""
)

# Columns of connwatch_sample_timings(): what rollups, charts and outages read.
_TIMING_COLUMNS: tuple[str, ...] = (
    "status",
    "error_class",
    "error_code",
    "total_ns",
    "logon_ns",
    "ping_ns",
    "query_ns",
    "logoff_ns",
    "commit_ns",
    "acquire_ns",
)


def _unpack(arrays: Sequence[str], started: bool) -> str:
    """SELECT of the packed samples of ``ids`` in [lo, hi): series_id, scheduled_at,
    started_at (if ``started``), then ``arrays``. Sample k (0-based) of a row is due at
    hour + at0_us + k * step_us + at_dev_us[k + 1] microseconds and started
    start_us[k + 1] microseconds after that. The arrays are unnested in the select list
    (in lockstep, a NULL array giving NULLs), about twice as fast as ROWS FROM."""
    unnested = ["at_dev_us", *(["start_us"] if started else []), *arrays]
    at = "y.at0_us + y.k * y.step_us + y.at_dev_us"
    return (
        "select x.series_id, x.scheduled_at, "
        + ("x.started_at, " if started else "")
        + ", ".join(f"x.{c}" for c in arrays)
        + " from (select y.hour_, y.series_id, "
        f"y.hour_ + ({at}) * interval '1 microsecond' as scheduled_at, "
        + (
            f"y.hour_ + ({at} + y.start_us) * interval '1 microsecond' as started_at, "
            if started
            else ""
        )
        + ", ".join(f"y.{c}" for c in arrays)
        + " from (select p.hour as hour_, p.series_id, p.at0_us, p.step_us, "
        "generate_series(0, p.n - 1) as k, "
        + ", ".join(f"unnest(p.{c}) as {c}" for c in unnested)
        + " from samples_packed p where p.series_id = any(ids) "
        "and p.hour > lo - interval '1 hour' and p.hour < hi "
        "and (not failed_only or p.n_not_ok > 0)) y) x "
        # only the hours cut by lo or hi need each sample's time compared
        "where (x.hour_ >= lo and x.hour_ <= hi - interval '1 hour') "
        "or (x.scheduled_at >= lo and x.scheduled_at < hi)"
    )


_UNPACK = _unpack([c for c, _ in _ARRAYS], started=True)

# Plain SQL, STABLE, non-STRICT functions with one SELECT: the planner inlines them, so
# the caller's filters reach both branches and partitions are pruned by lo/hi.
_READ_SQL = f"""
create or replace function connwatch_samples(
    ids integer[], lo timestamptz, hi timestamptz, failed_only boolean default false
) returns setof samples language sql stable as $$
    select s.* from samples s
    where s.series_id = any(ids) and s.scheduled_at >= lo and s.scheduled_at < hi
    union all
    {_UNPACK}
$$
"""

_TIMINGS_SQL = f"""
create or replace function connwatch_sample_timings(
    ids integer[], lo timestamptz, hi timestamptz, failed_only boolean default false
) returns table (
    series_id integer, scheduled_at timestamptz, status text, error_class text,
    error_code text, total_ns bigint, logon_ns bigint, ping_ns bigint, query_ns bigint,
    logoff_ns bigint, commit_ns bigint, acquire_ns bigint
) language sql stable as $$
    select s.series_id, s.scheduled_at, {", ".join(f"s.{c}" for c in _TIMING_COLUMNS)}
    from samples s
    where s.series_id = any(ids) and s.scheduled_at >= lo and s.scheduled_at < hi
    union all
    {_unpack(_TIMING_COLUMNS, started=False)}
$$
"""

_PARTITION_SQL = """
create or replace function connwatch_ensure_packed_partition(d date)
returns integer language plpgsql as $$
declare
    part text := 'samples_packed_p' || to_char(d, 'YYYYMMDD');
begin
    if to_regclass(part) is not null then
        return 0;
    end if;
    execute format(
        'create table if not exists %I partition of samples_packed '
        'for values from (%L) to (%L)',
        part, d::timestamp at time zone 'UTC', (d + 1)::timestamp at time zone 'UTC'
    );
    return 1;
end $$
"""


def upgrade() -> None:
    op.execute(_TABLE_SQL)
    op.execute(
        "create table samples_packed_days ("
        "day date not null, packed_at timestamptz not null default now(), "
        "samples bigint not null, constraint pk_samples_packed_days primary key (day))"
    )
    op.execute(_PARTITION_SQL)
    op.execute(_READ_SQL)
    op.execute(_TIMINGS_SQL)


def downgrade() -> None:
    # Unpack first: the (emptied) day partitions of samples still exist.
    unpack = _UNPACK.replace(
        "any(ids)", "any(array(select distinct series_id from samples_packed))"
    ).replace("not failed_only", "true")
    unpack = re.sub(r"\blo\b", "'-infinity'::timestamptz", unpack)
    unpack = re.sub(r"\bhi\b", "'infinity'::timestamptz", unpack)
    op.execute(f"insert into samples {unpack} on conflict do nothing")
    op.execute("drop function connwatch_samples(integer[], timestamptz, timestamptz, boolean)")
    op.execute("drop function connwatch_ensure_packed_partition(date)")
    op.execute("drop table samples_packed_days")
    op.execute("drop table samples_packed")
