"""The alerting tables (migration 0010), on :data:`app.models.metadata`.

- ``alert_rules``: one rule (kind, selector, kind parameters, notification policy);
- ``alert_instances``: the state of one (rule, series/mode/target/agent) that is not
  ``normal`` (an instance that is normal and has nothing to tell is not stored);
- ``alert_transitions``: every state change with its value: the alert history, kept
  ``alerts_history_days`` (default 5 years), outliving raw samples;
- ``alert_silences``, ``maintenance_windows``, ``annotations``;
- ``alert_lease``: which process evaluates (one row per lease name, with a fencing epoch).
"""

from __future__ import annotations

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from app.models import metadata

RULE_KINDS = ("latency", "availability", "baseline", "slo_burn", "mode_compare", "nodata", "agent")
STATES = ("normal", "pending", "firing", "resolved", "nodata", "error")
SEVERITIES = ("page", "ticket", "info")


def _ts(name: str, *, nullable: bool = False, now: bool = False) -> Column[object]:
    return Column(
        name, DateTime(timezone=True), nullable=nullable, server_default=func.now() if now else None
    )


def _one_of(column: str, values: tuple[str, ...]) -> CheckConstraint:
    return CheckConstraint(f"{column} in ({','.join(repr(v) for v in values)})", name=column)


alert_rules = Table(
    "alert_rules",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("kind", Text, nullable=False),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("severity", Text, nullable=False, server_default="page"),
    Column("description", Text, nullable=False, server_default=""),
    Column("spec", JSONB, nullable=False),  # the whole validated rule (app/alerts/rules.py)
    Column("contact_points", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    _ts("created_at", now=True),
    _ts("updated_at", now=True),
    Column("updated_by", Text, nullable=True),
    _one_of("kind", RULE_KINDS),
    _one_of("severity", SEVERITIES),
)

alert_instances = Table(
    "alert_instances",
    metadata,
    Column(
        "rule_id",
        ForeignKey("alert_rules.id", ondelete="CASCADE"),
        primary_key=True,
        nullable=False,
    ),
    Column("fingerprint", Text, primary_key=True, nullable=False),
    Column("labels", JSONB, nullable=False),
    Column("state", Text, nullable=False),
    _ts("state_since"),
    _ts("active_since", nullable=True),  # start of pending (the condition first held)
    _ts("fired_at", nullable=True),
    _ts("resolved_at", nullable=True),
    _ts("clear_since", nullable=True),  # the clear condition has held since
    Column("value", Float, nullable=True),
    Column("threshold", Float, nullable=True),
    Column("summary", Text, nullable=False, server_default=""),
    Column("detail", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    _ts("last_eval_at"),
    Column("notified_state", Text, nullable=True),  # what contacts were last told
    _ts("notified_at", nullable=True),
    _ts("change_at", nullable=True),  # the un-notified change (group wait counts from it)
    Column("silenced_by", BigInteger, nullable=True),
    Column("maintenance_by", Integer, nullable=True),
    Column("ack_by", Text, nullable=True),
    _ts("ack_at", nullable=True),
    _ts("ack_until", nullable=True),
    Column("ack_comment", Text, nullable=True),
    _one_of("state", STATES),
    Index("ix_alert_instances_state", "state"),
)

alert_transitions = Table(
    "alert_transitions",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    _ts("at"),
    Column("rule_id", ForeignKey("alert_rules.id", ondelete="SET NULL"), nullable=True),
    Column("rule_name", Text, nullable=False),
    Column("severity", Text, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("labels", JSONB, nullable=False),
    Column("from_state", Text, nullable=False),
    Column("to_state", Text, nullable=False),
    Column("value", Float, nullable=True),
    Column("threshold", Float, nullable=True),
    Column("summary", Text, nullable=False, server_default=""),
    Index("ix_alert_transitions_at", "at"),
    Index("ix_alert_transitions_rule_at", "rule_id", "at"),
)

alert_silences = Table(
    "alert_silences",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("rules", ARRAY(Text), nullable=False, server_default=text("'{}'")),  # name patterns
    Column("selector", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    _ts("starts_at"),
    _ts("ends_at"),
    Column("author", Text, nullable=False),
    Column("comment", Text, nullable=False),
    _ts("created_at", now=True),
    CheckConstraint("ends_at > starts_at", name="span"),
)

maintenance_windows = Table(
    "maintenance_windows",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("selector", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("schedule", JSONB, nullable=False),  # weekly / cron / once (app/alerts/mute)
    Column("timezone", Text, nullable=False, server_default="UTC"),
    Column("duration_s", Integer, nullable=False),
    Column("pause_probes", Boolean, nullable=False, server_default=text("false")),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("description", Text, nullable=False, server_default=""),
    _ts("created_at", now=True),
    _ts("updated_at", now=True),
    CheckConstraint("duration_s > 0 and duration_s <= 31 * 86400", name="duration"),
)

annotations_table = Table(
    "annotations",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    _ts("at"),
    _ts("ends_at", nullable=True),
    Column("target_id", ForeignKey("targets.id", ondelete="CASCADE"), nullable=True),
    Column("text", Text, nullable=False),
    Column("tags", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    Column("author", Text, nullable=False),
    Column("source", Text, nullable=False, server_default="api"),  # ui, api, cli
    _ts("created_at", now=True),
    Index("ix_annotations_at", "at"),
)

alert_lease = Table(
    "alert_lease",
    metadata,
    Column("name", Text, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("epoch", BigInteger, nullable=False),
    _ts("acquired_at"),
    _ts("renewed_at"),
    _ts("expires_at"),
)
