"""The report tables (migration 0012): subscriptions and the archive of sent reports.
They share :data:`app.models.metadata`."""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Integer,
    LargeBinary,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.models import metadata

report_subscriptions = Table(
    "report_subscriptions",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("targets", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    Column("labels", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("cadence", Text, nullable=False, server_default=text("'weekly'")),
    Column("weekday", SmallInteger, nullable=False, server_default=text("1")),
    Column("day_of_month", SmallInteger, nullable=False, server_default=text("1")),
    Column("hour", SmallInteger, nullable=False, server_default=text("8")),
    Column("minute", SmallInteger, nullable=False, server_default=text("0")),
    Column("timezone", Text, nullable=False, server_default=text("'UTC'")),
    Column("recipients", ARRAY(Text), nullable=False),
    Column("paper", Text, nullable=False, server_default=text("'A4'")),
    Column("source", Text, nullable=False, server_default=text("'ui'")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

report_archive = Table(
    "report_archive",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column(
        "subscription_id",
        Integer,
        ForeignKey("report_subscriptions.id", ondelete="SET NULL"),
        nullable=True,
    ),
    Column("subscription", Text, nullable=False),  # its name, kept after it is deleted
    Column("period", Text, nullable=False),  # 2026-W47 or 2026-03
    Column("period_start", DateTime(timezone=True), nullable=False),
    Column("period_end", DateTime(timezone=True), nullable=False),
    Column("due_at", DateTime(timezone=True), nullable=True),  # NULL: sent by hand
    Column("trigger", Text, nullable=False),  # schedule, send-now, cli
    Column("late", Boolean, nullable=False, server_default=text("false")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("recipients", ARRAY(Text), nullable=False),
    Column("subject", Text, nullable=False),
    Column("outbox_id", BigInteger, nullable=True),
    Column("pdf", LargeBinary, nullable=False),
    Column("csv", LargeBinary, nullable=False),
    Column("html", Text, nullable=False),  # the mail's HTML body as sent
    UniqueConstraint("subscription_id", "due_at", name="uq_report_archive_due"),
)
