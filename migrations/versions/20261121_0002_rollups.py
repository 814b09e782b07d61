"""Rollups (1 minute, 1 hour, 1 day) with mergeable log-bucket histograms; dirty tracking.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21

Each rollup row summarises one series over one bucket: sample counts by status,
errors by class and by code (jsonb maps, NULL when there were none), and per
timing phase the count, exact min/max/sum and a sparse histogram
(``<phase>_hi`` bucket indexes, ``<phase>_hc`` counts) plus the p50/p95/p99 of
that row. Bucket ``i`` holds values in ``(1.04^(i-1), 1.04^i]`` nanoseconds, so
reporting ``2*1.04^i/2.04`` is within 1.96 % of any value in it.

``rollup_1m`` and ``rollup_1h`` are range-partitioned by month (retention drops
whole partitions); ``rollup_1d`` is small and pruned with DELETE.
``rollup_dirty`` holds the (series, minute) pairs written since the last
maintenance pass; the writer fills it in the same statement as the insert.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PHASES = ("total", "logon", "ping", "query", "logoff", "commit", "acquire")


def _rollup_columns() -> str:
    cols = [
        "series_id integer not null",
        "bucket timestamptz not null",
        "n integer not null",
        "n_ok integer not null",
        "n_error integer not null",
        "n_timeout integer not null",
        "n_skipped integer not null",
        "err_class jsonb",
        "err_code jsonb",
    ]
    for p in PHASES:
        cols += [
            f"{p}_n integer",
            f"{p}_min bigint",
            f"{p}_max bigint",
            f"{p}_sum bigint",
            f"{p}_p50 real",
            f"{p}_p95 real",
            f"{p}_p99 real",
            f"{p}_hi smallint[]",
            f"{p}_hc integer[]",
        ]
    return ",\n    ".join(cols)


ENSURE_ROLLUP_PARTITIONS_SQL = """
create or replace function connwatch_ensure_rollup_partitions(
    tbl text, from_day date, to_day date)
returns integer language plpgsql as $$
declare
    m date := date_trunc('month', from_day)::date;
    created integer := 0;
    part text;
begin
    if tbl not in ('rollup_1m', 'rollup_1h') then
        raise exception 'not a partitioned rollup table: %', tbl;
    end if;
    while m <= to_day loop
        part := tbl || '_p' || to_char(m, 'YYYYMM');
        if to_regclass(part) is null then
            execute format(
                'create table if not exists %I partition of %I for values from (%L) to (%L)',
                part, tbl, m::timestamp at time zone 'UTC',
                (m + interval '1 month')::timestamp at time zone 'UTC'
            );
            created := created + 1;
        end if;
        m := (m + interval '1 month')::date;
    end loop;
    return created;
end $$;
"""


def upgrade() -> None:
    cols = _rollup_columns()
    for tbl, partitioned in (("rollup_1m", True), ("rollup_1h", True), ("rollup_1d", False)):
        op.execute(
            f"create table {tbl} (\n    {cols},\n"
            f"    constraint pk_{tbl} primary key (series_id, bucket)\n)"
            + (" partition by range (bucket)" if partitioned else "")
        )
    op.execute(
        """
        create table rollup_dirty (
            series_id integer not null,
            bucket    timestamptz not null,
            constraint pk_rollup_dirty primary key (bucket, series_id)
        )
        """
    )
    op.execute(ENSURE_ROLLUP_PARTITIONS_SQL)
    # Failures are rare: a partial index makes error lookups (outages, error filters)
    # cheap without costing every ok sample an index entry.
    op.execute(
        "create index ix_samples_not_ok on samples (series_id, scheduled_at) where status <> 'ok'"
    )
    # Outages beyond the raw horizon come from the few minutes that had failures.
    op.execute(
        "create index ix_rollup_1m_failed on rollup_1m (series_id, bucket) "
        "where n_error + n_timeout > 0"
    )


def downgrade() -> None:
    op.execute("drop index if exists ix_samples_not_ok")
    op.execute("drop function connwatch_ensure_rollup_partitions(text, date, date)")
    op.execute("drop table rollup_dirty")
    for tbl in ("rollup_1d", "rollup_1h", "rollup_1m"):
        op.execute(f"drop table {tbl}")
