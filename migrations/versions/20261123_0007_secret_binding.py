"""Endpoint binding of password references: ``targets.ref_binding``.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23

A typed password is stored as a Fernet token that carries the endpoints it was given
for (app/secrets/binding.py). A reference (``env:``/``file:``) is stored in clear in
``password_ref``; ``ref_binding`` is the Fernet token of the same reference and its
endpoints, so a reference re-pointed at another host (or edited in the database) is
refused where it is used. Rows written before this revision are bound by
``connwatch migrate`` / ``connwatch secrets rotate`` to the endpoints they have then.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("targets", sa.Column("ref_binding", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("targets", "ref_binding")
