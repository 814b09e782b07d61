"""The notification tables (migration 0009): contact points, the outbox, its attachments
and the delivery log. They share :data:`app.models.metadata`."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.models import metadata

CHANNELS = ("webhook", "slack", "email", "alertmanager")
OUTBOX_STATUSES = ("pending", "delivered", "failed", "cancelled")


def _ts(name: str, *, nullable: bool = False, now: bool = False) -> Column[object]:
    return Column(
        name, DateTime(timezone=True), nullable=nullable, server_default=func.now() if now else None
    )


def _one_of(column: str, values: tuple[str, ...]) -> CheckConstraint:
    return CheckConstraint(f"{column} in ({','.join(repr(v) for v in values)})", name=column)


# A named destination. ``settings`` holds what is not secret (URL of a webhook, recipients,
# Alertmanager URL, ...); the secret (webhook HMAC key, Slack URL, Alertmanager password)
# is either a Fernet token (``secret_enc``) or a reference (``secret_ref``: env:/file:).
contact_points = Table(
    "contact_points",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("channel", Text, nullable=False),
    Column("settings", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("secret_enc", Text, nullable=True),
    Column("secret_ref", Text, nullable=True),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("description", Text, nullable=False, server_default=""),
    _ts("created_at", now=True),
    _ts("updated_at", now=True),
    _one_of("channel", CHANNELS),
    CheckConstraint("not (secret_enc is not null and secret_ref is not null)", name="one_secret"),
)

# One message to deliver. Inserted in the same transaction as what caused it (an alert
# transition, a scheduled report), so it exists exactly when its cause does.
notify_outbox = Table(
    "notify_outbox",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column(
        "contact_point_id",
        ForeignKey("contact_points.id", ondelete="SET NULL"),
        nullable=True,
    ),
    Column("channel", Text, nullable=False),
    Column("kind", Text, nullable=False),  # alert, test, report, email
    Column("dedupe_key", Text, nullable=True, unique=True),
    Column("payload", JSONB, nullable=False),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("attempts", Integer, nullable=False, server_default="0"),
    _ts("next_attempt_at", now=True),
    Column("claimed_by", Text, nullable=True),
    _ts("claimed_until", nullable=True),
    _ts("created_at", now=True),
    _ts("delivered_at", nullable=True),
    Column("last_error", Text, nullable=True),
    _one_of("channel", CHANNELS),
    _one_of("status", OUTBOX_STATUSES),
    Index("ix_notify_outbox_due", "next_attempt_at", postgresql_where=text("status = 'pending'")),
    Index("ix_notify_outbox_contact_point_id", "contact_point_id", "id"),
)

notify_attachments = Table(
    "notify_attachments",
    metadata,
    Column(
        "outbox_id",
        ForeignKey("notify_outbox.id", ondelete="CASCADE"),
        primary_key=True,
        nullable=False,
    ),
    Column("position", Integer, primary_key=True, nullable=False),
    Column("filename", Text, nullable=False),
    Column("content_type", Text, nullable=False),
    Column("data", LargeBinary, nullable=False),
)

# Every delivery attempt, successful or not: the per-contact-point delivery log.
notify_deliveries = Table(
    "notify_deliveries",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("outbox_id", ForeignKey("notify_outbox.id", ondelete="CASCADE"), nullable=False),
    Column(
        "contact_point_id",
        ForeignKey("contact_points.id", ondelete="SET NULL"),
        nullable=True,
    ),
    Column("channel", Text, nullable=False),
    Column("attempt", Integer, nullable=False),
    _ts("at", now=True),
    Column("duration_ms", Integer, nullable=False),
    Column("ok", Boolean, nullable=False),
    Column("detail", Text, nullable=True),  # HTTP status / SMTP reply
    Column("error", Text, nullable=True),
    Index("ix_notify_deliveries_cp_at", "contact_point_id", "at"),
    Index("ix_notify_deliveries_outbox_id", "outbox_id"),
)
