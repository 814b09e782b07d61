"""API tokens for scripts and Prometheus: ``Authorization: Bearer cw_...``.

A token belongs to a user or a service account (a user of kind ``service`` without a
password) and has a scope: ``read`` acts as a viewer, ``write`` with its owner's role
(never more). It is shown once when created; the table keeps its SHA-256 (a token has
256 random bits, so a fast hash is enough) and its first characters to recognise it.
It may expire; ``last_used_at`` (written at most once a minute) and the address it was
last used from are shown; revoked or expired tokens, and tokens of disabled users,
authenticate nobody.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, text, update
from sqlalchemy.engine import Connection

from app.auth.roles import Role, as_role, lower
from app.auth.tables import api_tokens, users

PREFIX = "cw_"
TOKEN_RE = re.compile(r"^cw_[A-Za-z0-9_\-]{40,64}$")
SCOPES = ("read", "write")


class TokenError(ValueError):
    """A token cannot be created or changed; the message says why."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: int
    name: str
    user_id: int
    user_name: str
    user_role: Role
    scope: str
    prefix: str
    created_by: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    last_used_from: str | None
    revoked_at: datetime | None

    @property
    def role(self) -> Role:
        """What a request with this token may do: a read token is a viewer."""
        return "viewer" if self.scope == "read" else lower(self.user_role, "admin")

    @property
    def active(self) -> bool:
        return self.revoked_at is None


_COLUMNS = (
    api_tokens.c.id,
    api_tokens.c.name,
    api_tokens.c.user_id,
    users.c.name.label("user_name"),
    users.c.role.label("user_role"),
    api_tokens.c.scope,
    api_tokens.c.prefix,
    api_tokens.c.created_by,
    api_tokens.c.created_at,
    api_tokens.c.expires_at,
    api_tokens.c.last_used_at,
    api_tokens.c.last_used_from,
    api_tokens.c.revoked_at,
)


def _info(r: object) -> TokenInfo:
    m = dict(r._mapping)  # type: ignore[attr-defined]
    m["user_role"] = as_role(m["user_role"])
    return TokenInfo(**m)


def create(
    conn: Connection,
    *,
    user_id: int,
    name: str,
    scope: str,
    created_by: str,
    expires_at: datetime | None = None,
) -> tuple[str, TokenInfo]:
    """A new token: (the token, shown once; its row)."""
    if scope not in SCOPES:
        raise TokenError(f"scope must be read or write, got {scope!r}")
    name = name.strip()
    if not name or len(name) > 100 or "\x00" in name:
        raise TokenError("a token needs a name of 1-100 characters")
    token = PREFIX + secrets.token_urlsafe(32)
    new_id = conn.execute(
        api_tokens.insert()
        .values(
            name=name,
            user_id=user_id,
            scope=scope,
            token_hash=_hash(token),
            prefix=token[:10],
            created_by=created_by,
            expires_at=expires_at,
        )
        .returning(api_tokens.c.id)
    ).scalar_one()
    info = get(conn, int(new_id))
    assert info is not None
    return token, info


def get(conn: Connection, token_id: int) -> TokenInfo | None:
    row = conn.execute(
        select(*_COLUMNS).select_from(api_tokens.join(users)).where(api_tokens.c.id == token_id)
    ).first()
    return _info(row) if row else None


def authenticate(conn: Connection, token: str, *, source: str) -> TokenInfo | None:
    """The live token's row (last use recorded), or None."""
    if not TOKEN_RE.match(token):
        return None
    row = conn.execute(
        select(*_COLUMNS)
        .select_from(api_tokens.join(users))
        .where(
            api_tokens.c.token_hash == _hash(token),
            api_tokens.c.revoked_at.is_(None),
            (api_tokens.c.expires_at.is_(None)) | (api_tokens.c.expires_at > func.now()),
            users.c.disabled.is_(False),
        )
    ).first()
    if row is None:
        return None
    info = _info(row)
    conn.execute(
        text(
            "update api_tokens set last_used_at = now(), last_used_from = :src where id = :id "
            "and (last_used_at is null or last_used_at < now() - interval '60 seconds' "
            "or last_used_from is distinct from :src)"
        ),
        {"id": info.id, "src": source[:200]},
    )
    return info


def list_all(conn: Connection, *, user_id: int | None = None) -> list[TokenInfo]:
    q = select(*_COLUMNS).select_from(api_tokens.join(users))
    if user_id is not None:
        q = q.where(api_tokens.c.user_id == user_id)
    return [_info(r) for r in conn.execute(q.order_by(api_tokens.c.created_at.desc()))]


def revoke(conn: Connection, token_id: int) -> TokenInfo | None:
    """Revoke a token; its row before, or None if there was no live one."""
    info = get(conn, token_id)
    if info is None or info.revoked_at is not None:
        return None
    conn.execute(
        update(api_tokens).where(api_tokens.c.id == token_id).values(revoked_at=func.now())
    )
    return info
