"""Weekly rollups past retention are folded into one row per series: ``rollup_retired``.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-23

``/metrics`` exposes cumulative counters and histograms per series, counted by the store
as the sum of its weekly rollup rows (app/store/read/totals.py). Retention deletes weekly
rows older than the 1-hour horizon plus a week; without this table every such delete
would make those counters go down (a counter reset to Prometheus, and a spike in every
``rate()``). Retention now moves the rows it deletes into ``rollup_retired`` (one merged
row per series: counts, error maps, timing sums and histograms added) in the same
transaction, so weekly rows + retired row is constant under retention.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "create table rollup_retired (like rollup_1w including defaults, "
        "constraint pk_rollup_retired primary key (series_id))"
    )


def downgrade() -> None:
    op.execute("drop table rollup_retired")
