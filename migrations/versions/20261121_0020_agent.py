"""The agent's own tables: which agent runs which series, and "test now" requests.

Revision ID: 0020
Revises: 0002
Create Date: 2026-11-21

``agent_assignments``: one row per series an agent currently runs (informational;
the truth is the agent's advisory lock on the series, see docs/agent.md).
``probe_requests``: the web asks for one probe run ("test now"); an agent claims
the row (``FOR UPDATE SKIP LOCKED``), runs the probe and writes the result JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0020"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_assignments",
        sa.Column("series_id", sa.Integer, nullable=False),
        sa.Column("agent", sa.Text, nullable=False),
        sa.Column("site", sa.Text, nullable=False),
        sa.Column(
            "since", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()
        ),
        sa.PrimaryKeyConstraint("series_id", name="pk_agent_assignments"),
        sa.ForeignKeyConstraint(
            ["series_id"],
            ["series.id"],
            name="fk_agent_assignments_series_id_series",
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "probe_requests",
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("target_id", sa.Integer, nullable=False),
        sa.Column("mode_id", sa.Integer, nullable=False),
        sa.Column("probe", sa.Text, nullable=False, server_default="connping"),
        sa.Column("params", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("timeout_ms", sa.Integer, nullable=False, server_default="10000"),
        sa.Column("site", sa.Text, nullable=True),
        sa.Column(
            "requested_at",
            sa.DateTime(timezone=True),
            nullable=False,
            server_default=sa.func.now(),
        ),
        sa.Column("status", sa.Text, nullable=False, server_default="pending"),
        sa.Column("claimed_by", sa.Text, nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result", JSONB, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_probe_requests"),
        sa.ForeignKeyConstraint(
            ["target_id"],
            ["targets.id"],
            name="fk_probe_requests_target_id_targets",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mode_id"], ["modes.id"], name="fk_probe_requests_mode_id_modes", ondelete="CASCADE"
        ),
        sa.CheckConstraint(
            "status in ('pending','running','done','error')", name="ck_probe_requests_status"
        ),
        sa.CheckConstraint(
            "probe in ('connping','sessionping','poolacquire','commit','sweep')",
            name="ck_probe_requests_probe",
        ),
        sa.CheckConstraint(
            "timeout_ms > 0 and timeout_ms <= 300000", name="ck_probe_requests_timeout"
        ),
    )
    op.create_index(
        "ix_probe_requests_pending",
        "probe_requests",
        ["id"],
        postgresql_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    op.drop_index("ix_probe_requests_pending", table_name="probe_requests")
    op.drop_table("probe_requests")
    op.drop_table("agent_assignments")
