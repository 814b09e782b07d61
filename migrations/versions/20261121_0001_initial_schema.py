"""Initial schema: targets, modes, series, time-partitioned samples, agents.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EMPTY = sa.text("'{}'::jsonb")

# One partition per UTC day, named samples_pYYYYMMDD. Idempotent; returns how many
# partitions it created. Called by the agent's writer, imports and maintenance.
ENSURE_PARTITIONS_SQL = """
create or replace function connwatch_ensure_sample_partitions(from_day date, to_day date)
returns integer language plpgsql as $$
declare
    d date := from_day;
    created integer := 0;
    part text;
begin
    while d <= to_day loop
        part := 'samples_p' || to_char(d, 'YYYYMMDD');
        if to_regclass(part) is null then
            execute format(
                'create table if not exists %I partition of samples '
                'for values from (%L) to (%L)',
                part, d::timestamp at time zone 'UTC', (d + 1)::timestamp at time zone 'UTC'
            );
            created := created + 1;
        end if;
        d := d + 1;
    end loop;
    return created;
end $$;
"""


def upgrade() -> None:
    op.create_table(
        "targets",
        sa.Column("id", sa.Integer, sa.Identity(), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("dsn", sa.Text, nullable=False),
        sa.Column("username", sa.Text, nullable=False),
        sa.Column("password_enc", sa.Text, nullable=True),
        sa.Column("password_ref", sa.Text, nullable=True),
        sa.Column("params", JSONB, nullable=False, server_default=_EMPTY),
        sa.Column("labels", JSONB, nullable=False, server_default=_EMPTY),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.PrimaryKeyConstraint("id", name="pk_targets"),
        sa.UniqueConstraint("name", name="uq_targets_name"),
        sa.CheckConstraint("kind in ('oracle', 'postgres')", name="ck_targets_kind"),
        sa.CheckConstraint(
            "not (password_enc is not null and password_ref is not null)",
            name="ck_targets_one_secret",
        ),
    )
    op.create_table(
        "modes",
        sa.Column("id", sa.Integer, sa.Identity(), nullable=False),
        sa.Column("target_id", sa.Integer, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("transport", sa.Text, nullable=False, server_default="tcp"),
        sa.Column("params", JSONB, nullable=False, server_default=_EMPTY),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.PrimaryKeyConstraint("id", name="pk_modes"),
        sa.ForeignKeyConstraint(
            ["target_id"], ["targets.id"], ondelete="CASCADE", name="fk_modes_target_id_targets"
        ),
        sa.UniqueConstraint("target_id", "name", name="uq_modes_target_name"),
        sa.CheckConstraint(
            "kind in ('dedicated','shared','pooled','direct','unix',"
            "'pgbouncer_session','pgbouncer_transaction')",
            name="ck_modes_kind",
        ),
        sa.CheckConstraint("transport in ('tcp','tcps','ipc','unix')", name="ck_modes_transport"),
    )
    op.create_table(
        "series",
        sa.Column("id", sa.Integer, sa.Identity(), nullable=False),
        sa.Column("mode_id", sa.Integer, nullable=False),
        sa.Column("probe", sa.Text, nullable=False),
        sa.Column("interval_ms", sa.Integer, nullable=False),
        sa.Column("timeout_ms", sa.Integer, nullable=False),
        sa.Column("params", JSONB, nullable=False, server_default=_EMPTY),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("site", sa.Text, nullable=False, server_default="default"),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.PrimaryKeyConstraint("id", name="pk_series"),
        sa.ForeignKeyConstraint(
            ["mode_id"], ["modes.id"], ondelete="CASCADE", name="fk_series_mode_id_modes"
        ),
        sa.UniqueConstraint("mode_id", "probe", "site", name="uq_series_mode_probe_site"),
        sa.CheckConstraint(
            "probe in ('connping','sessionping','poolacquire','commit','sweep')",
            name="ck_series_probe",
        ),
        sa.CheckConstraint("interval_ms >= 100", name="ck_series_interval"),
        sa.CheckConstraint(
            "timeout_ms > 0 and timeout_ms <= interval_ms", name="ck_series_timeout"
        ),
    )
    op.execute(
        """
        create table samples (
            series_id     integer     not null,
            scheduled_at  timestamptz not null,
            started_at    timestamptz not null,
            status        text        not null,
            total_ns      bigint,
            logon_ns      bigint,
            ping_ns       bigint,
            query_ns      bigint,
            logoff_ns     bigint,
            commit_ns     bigint,
            acquire_ns    bigint,
            round_trips   smallint,
            logon_phases  jsonb,
            error_class   text,
            error_code    text,
            error_phase   text,
            error_message text,
            sid           integer,
            serial        integer,
            instance      text,
            service       text,
            server_type   text,
            agent         text,
            site          text,
            extra         jsonb,
            constraint pk_samples primary key (series_id, scheduled_at),
            constraint ck_samples_status check (status in ('ok','error','timeout','skipped'))
        ) partition by range (scheduled_at)
        """
    )
    op.execute(ENSURE_PARTITIONS_SQL)
    op.execute(
        "select connwatch_ensure_sample_partitions("
        "(now() at time zone 'UTC')::date - 1, (now() at time zone 'UTC')::date + 7)"
    )
    op.create_table(
        "agents",
        sa.Column("id", sa.Integer, sa.Identity(), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("site", sa.Text, nullable=False),
        sa.Column("version", sa.Text, nullable=False),
        sa.Column("hostname", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column(
            "started_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column(
            "heartbeat_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.Column("stats", JSONB, nullable=False, server_default=_EMPTY),
        sa.PrimaryKeyConstraint("id", name="pk_agents"),
        sa.UniqueConstraint("name", name="uq_agents_name"),
    )


def downgrade() -> None:
    op.drop_table("agents")
    op.execute("drop table samples")  # drops every partition with it
    op.execute("drop function connwatch_ensure_sample_partitions(date, date)")
    op.drop_table("series")
    op.drop_table("modes")
    op.drop_table("targets")
