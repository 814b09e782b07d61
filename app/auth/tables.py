"""The tables of access control (migration 0006): users, sessions, API tokens, login
throttling, pending OIDC logins and the audit log. Same metadata as :mod:`app.models`.

- ``users``: local (Argon2id hash), OIDC, auth-proxy or service accounts; one role each.
- ``sessions``: a login; the cookie holds a random token, the row only its SHA-256, so a
  dump of the table logs nobody in. ``csrf_token`` is the session's anti-forgery token.
- ``api_tokens``: bearer tokens of users and service accounts, stored as SHA-256.
- ``login_throttle``: failures per account and per source address, and until when the
  next attempt must wait (shared by every web process).
- ``oidc_logins``: state, nonce and PKCE verifier of a login under way at the provider.
- ``audit_log``: who did what, when, from where; before/after without secrets.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
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

from app.models import _one_of, metadata

ROLES = ("viewer", "operator", "admin")
USER_KINDS = ("local", "oidc", "proxy", "service")
SCOPES = ("read", "write")


def _ts(name: str, *, nullable: bool = False, now: bool = False) -> Column[object]:
    return Column(
        name, DateTime(timezone=True), nullable=nullable, server_default=func.now() if now else None
    )


users = Table(
    "users",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("display_name", Text, nullable=False, server_default=""),
    Column("kind", Text, nullable=False, server_default="local"),
    Column("role", Text, nullable=False),
    Column("password_hash", Text, nullable=True),
    Column("external_id", Text, nullable=True, unique=True),  # OIDC issuer|sub
    Column("disabled", Boolean, nullable=False, server_default=text("false")),
    _ts("created_at", now=True),
    _ts("updated_at", now=True),
    _ts("last_login_at", nullable=True),
    _one_of("role", ROLES),
    _one_of("kind", USER_KINDS),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("token_hash", Text, nullable=False, unique=True),
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("csrf_token", Text, nullable=False),
    Column("via", Text, nullable=False, server_default="password"),
    Column("source", Text, nullable=False, server_default=""),
    Column("user_agent", Text, nullable=False, server_default=""),
    _ts("created_at", now=True),
    _ts("last_seen_at", now=True),
    _ts("expires_at"),
    _ts("revoked_at", nullable=True),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False),
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("scope", Text, nullable=False),
    Column("token_hash", Text, nullable=False, unique=True),
    Column("prefix", Text, nullable=False),
    Column("created_by", Text, nullable=False, server_default=""),
    _ts("created_at", now=True),
    _ts("expires_at", nullable=True),
    _ts("last_used_at", nullable=True),
    Column("last_used_from", Text, nullable=True),
    _ts("revoked_at", nullable=True),
    _one_of("scope", SCOPES),
)

login_throttle = Table(
    "login_throttle",
    metadata,
    Column("key", Text, primary_key=True),
    Column("failures", Integer, nullable=False, server_default="0"),
    _ts("window_start", now=True),
    _ts("last_failure_at", now=True),
    _ts("blocked_until", nullable=True),
)

oidc_logins = Table(
    "oidc_logins",
    metadata,
    Column("state", Text, primary_key=True),
    Column("nonce", Text, nullable=False),
    Column("code_verifier", Text, nullable=False),
    Column("next_url", Text, nullable=False, server_default="/"),
    Column("redirect_uri", Text, nullable=False),
    _ts("created_at", now=True),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    _ts("at", now=True),
    Column("actor", Text, nullable=False),
    Column("actor_role", Text, nullable=True),
    Column("via", Text, nullable=False),
    Column("source", Text, nullable=False, server_default=""),
    Column("action", Text, nullable=False),
    Column("object_type", Text, nullable=False, server_default=""),
    Column("object_name", Text, nullable=False, server_default=""),
    Column("outcome", Text, nullable=False, server_default="ok"),
    Column("detail", Text, nullable=False, server_default=""),
    Column("before", JSONB, nullable=True),
    Column("after", JSONB, nullable=True),
    Index("ix_audit_log_at", "at"),
    Index("ix_audit_log_action_at", "action", "at"),
    Index("ix_audit_log_actor_at", "actor", "at"),
)
