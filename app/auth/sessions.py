"""Login sessions, kept in PostgreSQL so every web process sees the same ones.

The cookie holds 32 random bytes (url-safe); the table keeps only their SHA-256, so a
dump of the store logs nobody in. A session ends at the first of: logout, revocation
(by its user or an admin, or a password change or disable), ``session_idle_minutes``
without a request, ``session_max_hours`` after login. ``last_seen_at`` is written at
most once a minute per session, not on every request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select, text, update
from sqlalchemy.engine import Connection

from app.auth.roles import Role, as_role
from app.auth.tables import sessions, users

TOKEN_RE = re.compile(r"^[A-Za-z0-9_\-]{40,64}$")
TOUCH_EVERY_S = 60


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: int
    user_id: int
    user_name: str
    role: Role
    csrf_token: str
    via: str
    source: str
    user_agent: str
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime


def create(
    conn: Connection,
    user_id: int,
    *,
    via: str,
    source: str,
    user_agent: str,
    max_hours: int,
) -> tuple[str, str]:
    """A new session; returns (cookie token, CSRF token)."""
    token = secrets.token_urlsafe(32)
    csrf = secrets.token_urlsafe(32)
    conn.execute(
        sessions.insert().values(
            token_hash=token_hash(token),
            user_id=user_id,
            csrf_token=csrf,
            via=via,
            source=source[:200],
            user_agent=user_agent[:300],
            expires_at=func.now() + timedelta(hours=max_hours),
        )
    )
    return token, csrf


_COLUMNS = (
    sessions.c.id,
    sessions.c.user_id,
    users.c.name.label("user_name"),
    users.c.role,
    sessions.c.csrf_token,
    sessions.c.via,
    sessions.c.source,
    sessions.c.user_agent,
    sessions.c.created_at,
    sessions.c.last_seen_at,
    sessions.c.expires_at,
)


def _info(r: object) -> SessionInfo:
    m = r._mapping  # type: ignore[attr-defined]
    return SessionInfo(**{**dict(m), "role": as_role(m["role"])})


def _live(idle_minutes: int) -> object:
    return (
        sessions.c.revoked_at.is_(None)
        & (sessions.c.expires_at > func.now())
        & (sessions.c.last_seen_at > func.now() - timedelta(minutes=idle_minutes))
        & users.c.disabled.is_(False)
    )


def lookup(conn: Connection, token: str, *, idle_minutes: int) -> SessionInfo | None:
    """The live session of a cookie token (touched), or None."""
    if not TOKEN_RE.match(token):
        return None
    row = conn.execute(
        select(*_COLUMNS)
        .select_from(sessions.join(users))
        .where(sessions.c.token_hash == token_hash(token), _live(idle_minutes))  # type: ignore[arg-type]
    ).first()
    if row is None:
        return None
    info = _info(row)
    conn.execute(
        text(
            "update sessions set last_seen_at = now() where id = :id "
            f"and last_seen_at < now() - interval '{TOUCH_EVERY_S} seconds'"
        ),
        {"id": info.id},
    )
    return info


def for_user(conn: Connection, user_id: int | None, *, idle_minutes: int) -> list[SessionInfo]:
    """Live sessions of one user (None: of everybody), newest first."""
    q = select(*_COLUMNS).select_from(sessions.join(users)).where(_live(idle_minutes))  # type: ignore[arg-type]
    if user_id is not None:
        q = q.where(sessions.c.user_id == user_id)
    return [_info(r) for r in conn.execute(q.order_by(sessions.c.created_at.desc()))]


def revoke(conn: Connection, session_id: int, *, user_id: int | None = None) -> bool:
    """End one session (only the user's own when ``user_id`` is given)."""
    q = update(sessions).where(sessions.c.id == session_id, sessions.c.revoked_at.is_(None))
    if user_id is not None:
        q = q.where(sessions.c.user_id == user_id)
    return bool(conn.execute(q.values(revoked_at=func.now())).rowcount)


def purge(conn: Connection, *, keep_days: int = 30) -> int:
    """Forget sessions that ended more than ``keep_days`` ago."""
    res = conn.execute(
        text(
            "delete from sessions where coalesce(revoked_at, expires_at) "
            "< now() - make_interval(days => :d)"
        ),
        {"d": keep_days},
    )
    return res.rowcount or 0
