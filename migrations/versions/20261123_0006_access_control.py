"""Access control: users, sessions, API tokens, login throttling, OIDC logins, audit log.

Revision ID: 0006
Revises: 0024
Create Date: 2026-11-23

See app/auth/tables.py for what each table holds. Secrets are never stored here in a
usable form: passwords as Argon2id hashes, session cookies and API tokens as SHA-256.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0006"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts(name: str, *, nullable: bool = False, now: bool = False) -> sa.Column[object]:
    return sa.Column(
        name,
        sa.DateTime(timezone=True),
        nullable=nullable,
        server_default=sa.func.now() if now else None,
    )


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, sa.Identity(), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("display_name", sa.Text, nullable=False, server_default=""),
        sa.Column("kind", sa.Text, nullable=False, server_default="local"),
        sa.Column("role", sa.Text, nullable=False),
        sa.Column("password_hash", sa.Text, nullable=True),
        sa.Column("external_id", sa.Text, nullable=True),
        sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.text("false")),
        _ts("created_at", now=True),
        _ts("updated_at", now=True),
        _ts("last_login_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("name", name="uq_users_name"),
        sa.UniqueConstraint("external_id", name="uq_users_external_id"),
        sa.CheckConstraint("role in ('viewer','operator','admin')", name="ck_users_role"),
        sa.CheckConstraint("kind in ('local','oidc','proxy','service')", name="ck_users_kind"),
    )
    op.create_table(
        "sessions",
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("user_id", sa.Integer, nullable=False),
        sa.Column("csrf_token", sa.Text, nullable=False),
        sa.Column("via", sa.Text, nullable=False, server_default="password"),
        sa.Column("source", sa.Text, nullable=False, server_default=""),
        sa.Column("user_agent", sa.Text, nullable=False, server_default=""),
        _ts("created_at", now=True),
        _ts("last_seen_at", now=True),
        _ts("expires_at"),
        _ts("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
        sa.UniqueConstraint("token_hash", name="uq_sessions_token_hash"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_sessions_user_id_users", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer, sa.Identity(), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("user_id", sa.Integer, nullable=False),
        sa.Column("scope", sa.Text, nullable=False),
        sa.Column("token_hash", sa.Text, nullable=False),
        sa.Column("prefix", sa.Text, nullable=False),
        sa.Column("created_by", sa.Text, nullable=False, server_default=""),
        _ts("created_at", now=True),
        _ts("expires_at", nullable=True),
        _ts("last_used_at", nullable=True),
        sa.Column("last_used_from", sa.Text, nullable=True),
        _ts("revoked_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_api_tokens_token_hash"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_api_tokens_user_id_users", ondelete="CASCADE"
        ),
        sa.CheckConstraint("scope in ('read','write')", name="ck_api_tokens_scope"),
    )
    op.create_index("ix_api_tokens_user_id", "api_tokens", ["user_id"])
    op.create_table(
        "login_throttle",
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        _ts("window_start", now=True),
        _ts("last_failure_at", now=True),
        _ts("blocked_until", nullable=True),
        sa.PrimaryKeyConstraint("key", name="pk_login_throttle"),
    )
    op.create_table(
        "oidc_logins",
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("nonce", sa.Text, nullable=False),
        sa.Column("code_verifier", sa.Text, nullable=False),
        sa.Column("next_url", sa.Text, nullable=False, server_default="/"),
        sa.Column("redirect_uri", sa.Text, nullable=False),
        _ts("created_at", now=True),
        sa.PrimaryKeyConstraint("state", name="pk_oidc_logins"),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger, sa.Identity(), nullable=False),
        _ts("at", now=True),
        sa.Column("actor", sa.Text, nullable=False),
        sa.Column("actor_role", sa.Text, nullable=True),
        sa.Column("via", sa.Text, nullable=False),
        sa.Column("source", sa.Text, nullable=False, server_default=""),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("object_type", sa.Text, nullable=False, server_default=""),
        sa.Column("object_name", sa.Text, nullable=False, server_default=""),
        sa.Column("outcome", sa.Text, nullable=False, server_default="ok"),
        sa.Column("detail", sa.Text, nullable=False, server_default=""),
        sa.Column("before", JSONB, nullable=True),
        sa.Column("after", JSONB, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_action_at", "audit_log", ["action", "at"])
    op.create_index("ix_audit_log_actor_at", "audit_log", ["actor", "at"])


def downgrade() -> None:
    for table in ("audit_log", "oidc_logins", "login_throttle", "api_tokens", "sessions"):
        op.drop_table(table)
    op.drop_table("users")
