"""The ``slos`` table (migration 0009), on :data:`app.models.metadata`."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    Float,
    Identity,
    Integer,
    Table,
    Text,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.models import metadata

slos = Table(
    "slos",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("description", Text, nullable=False, server_default=""),
    Column("selector", JSONB, nullable=False),
    Column("objective", Float, nullable=False),  # percent of good runs, e.g. 99.5
    Column("phase", Text, nullable=False, server_default="logon"),
    Column("threshold_ms", Float, nullable=True),  # NULL: good = succeeded
    Column("window_days", Integer, nullable=False, server_default="30"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("objective > 0 and objective < 100", name="objective"),
    CheckConstraint("window_days between 1 and 400", name="window_days"),
)
