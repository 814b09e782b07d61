"""What the server saw: the serverstats probe's readings, raw and per hour.

Revision ID: 0015
Revises: 0010
Create Date: 2026-11-21

``server_stats``: one row per serverstats run and database instance (RAC: one per
instance), key (series_id, scheduled_at, inst_id) like the samples' so a replayed batch
is stored once. ``metrics`` maps each derived number (docs/probes.md, "serverstats") to
its value; ``classes`` holds per-connection-class DRCP rates, ``unavailable`` the views
that could not be read in that run (view -> ORA code or NO-ROWS). The run itself is a
sample like every other probe's (failures included).

``server_stats_1h``: per series, instance and UTC hour, ``metrics`` maps each number to
``[mean, max, n]`` over the hour's rows; the writer recomputes the hours it touched, so
long ranges read at most one row per hour.

Also lets series and "test now" requests name the ``serverstats`` probe.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0015"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD = "'connping','sessionping','poolacquire','commit','sweep'"
NEW = OLD + ",'serverstats'"


def _probe_checks(values: str) -> None:
    for table in ("series", "probe_requests"):
        op.drop_constraint(f"ck_{table}_probe", table, type_="check")
        op.create_check_constraint(f"ck_{table}_probe", table, f"probe in ({values})")


def upgrade() -> None:
    _probe_checks(NEW)
    op.create_table(
        "server_stats",
        sa.Column("series_id", sa.Integer, nullable=False),
        sa.Column("scheduled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("inst_id", sa.SmallInteger, nullable=False),
        sa.Column("instance", sa.Text),
        sa.Column("startup", sa.Text),
        sa.Column("interval_s", sa.Float),
        sa.Column("reset", sa.Boolean, nullable=False, server_default=sa.text("false")),
        sa.Column("metrics", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.Column("classes", JSONB),
        sa.Column("unavailable", JSONB),
        sa.PrimaryKeyConstraint("series_id", "scheduled_at", "inst_id", name="pk_server_stats"),
    )
    op.create_index("ix_server_stats_scheduled_at", "server_stats", ["scheduled_at"])
    op.create_table(
        "server_stats_1h",
        sa.Column("series_id", sa.Integer, nullable=False),
        sa.Column("bucket", sa.DateTime(timezone=True), nullable=False),
        sa.Column("inst_id", sa.SmallInteger, nullable=False),
        sa.Column("instance", sa.Text),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("n_reset", sa.Integer, nullable=False, server_default="0"),
        sa.Column("metrics", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
        sa.PrimaryKeyConstraint("series_id", "bucket", "inst_id", name="pk_server_stats_1h"),
    )


def downgrade() -> None:
    op.drop_table("server_stats_1h")
    op.drop_index("ix_server_stats_scheduled_at", table_name="server_stats")
    op.drop_table("server_stats")
    op.execute("delete from series where probe = 'serverstats'")
    op.execute("delete from probe_requests where probe = 'serverstats'")
    _probe_checks(OLD)
