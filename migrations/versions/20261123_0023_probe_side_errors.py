"""Probe-side errors counted apart in the rollups: ``n_probe``.

Revision ID: 0023
Revises: 0016
Create Date: 2026-11-21

A probe-side error (``status = 'error'``, ``error_class = 'PROBE'``: the measurement
failed on connwatch's side, e.g. python-oracledb's DRCP statement-cache IndexError or a
series connwatch cannot build) says nothing about the target. From this revision every
rollup row counts them in ``n_probe`` and no longer in ``n_error``, so that
``n = n_ok + n_error + n_timeout + n_skipped + n_probe`` and availability is
``n_ok / (n - n_skipped - n_probe)`` (app/samples.py, ``ErrorClass.PROBE``).

Rows written before have no PROBE class to count (it did not exist): 0 is exact. The
downgrade folds ``n_probe`` back into ``n_error``, as the rollups counted before.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0023"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("rollup_1m", "rollup_1h", "rollup_1d", "rollup_1w")


def upgrade() -> None:
    for table in TABLES:
        op.execute(f"alter table {table} add column n_probe integer not null default 0")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"update {table} set n_error = n_error + n_probe where n_probe > 0")
        op.execute(f"alter table {table} drop column n_probe")
