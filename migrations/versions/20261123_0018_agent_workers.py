"""Agents with worker processes: which worker of an agent runs a series.

Revision ID: 0018
Revises: 0012
Create Date: 2026-11-23

An agent now runs several worker processes (one event loop per core), each taking its
own share of the site's series (app/agent/coordination/series.py). Each worker keeps its
rows of ``agent_assignments`` up to date, so the rows say which worker runs a series;
existing rows belong to worker 0 (an agent without worker processes).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "agent_assignments",
        sa.Column("worker", sa.SmallInteger, nullable=False, server_default="0"),
    )


def downgrade() -> None:
    op.drop_column("agent_assignments", "worker")
