"""server_stats.chart: the charted figures as a narrow real[] beside the jsonb.

Revision ID: 0016
Revises: 0018
Create Date: 2026-11-23

A server chart over 24 h read each row's whole ``metrics`` jsonb (about 1.5 KB,
compressed) for eight numbers: about 40 us a row. The writer now also stores those eight
(``app.store.layout.SERVER_CHART_METRICS``, in that order) in ``chart``; rows written
before keep NULL there and are read from the jsonb (docs/benchmarks.md, "Server stats").
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, REAL

revision: str = "0016"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("server_stats", sa.Column("chart", ARRAY(REAL)))


def downgrade() -> None:
    op.drop_column("server_stats", "chart")
