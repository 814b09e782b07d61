"""Covering indexes of the 1-minute and 1-hour p95s, for spike detection.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-21

Spike detection (app/store/read/incidents.py) reads, for every series on the page, the
hourly p95s of the previous weeks and the minute p95s of the range: tens of
thousands of rollup rows of ~500-900 bytes each, of which it needs four columns.
These indexes carry (series_id, bucket) plus the p95 and count of the two phases the
Spikes page offers first (logon, its default, and total), so those reads are
index-only scans (24 h over 100 series: median 158 -> 109 ms). Other phases still
read the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("rollup_1m", "rollup_1h")


def upgrade() -> None:
    for table in TABLES:
        op.execute(
            f"create index if not exists ix_{table}_p95 on {table} (series_id, bucket) "
            "include (logon_p95, logon_n, total_p95, total_n)"
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"drop index if exists ix_{table}_p95")
