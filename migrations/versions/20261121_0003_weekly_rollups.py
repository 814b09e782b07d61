"""Weekly rollups (Monday to Monday UTC), so weekly summaries need no large merges.

Revision ID: 0003
Revises: 0020
Create Date: 2026-11-21

Same columns as the other rollup tables; one row per series and week, kept as long
as the 1-hour rollups. Existing 1-day rollups are merged into it here.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "create table rollup_1w (like rollup_1d including defaults, "
        "constraint pk_rollup_1w primary key (series_id, bucket))"
    )
    from app.store.layout import COUNT_COLUMNS_0022
    from app.store.write.rollups import weeks_backfill_sql  # the one merge the store itself uses

    # the count columns of the rollup tables at this revision (0023 added n_probe)
    op.execute(weeks_backfill_sql(COUNT_COLUMNS_0022))


def downgrade() -> None:
    op.execute("drop table rollup_1w")
