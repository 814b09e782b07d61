"""User accounts: create, list, change role, disable, reset password, authenticate.

Names are short and plain (letters, digits, ``_ . @ -``). The last enabled admin cannot
be disabled or demoted, so an installation cannot lock itself out. Disabling a user or
changing a password ends their sessions; disabling also revokes their API tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from app.auth import passwords
from app.auth.roles import Role, as_role
from app.auth.tables import api_tokens, sessions, users

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@\-]{0,63}$")


class UserError(ValueError):
    """A user operation is not possible; the message says why."""


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    display_name: str
    kind: str
    role: Role
    disabled: bool
    created_at: datetime
    last_login_at: datetime | None


def _user(row: object) -> User:
    r = row._mapping  # type: ignore[attr-defined]
    return User(
        id=int(r["id"]),
        name=r["name"],
        display_name=r["display_name"],
        kind=r["kind"],
        role=as_role(r["role"]),
        disabled=bool(r["disabled"]),
        created_at=r["created_at"],
        last_login_at=r["last_login_at"],
    )


_COLUMNS = (
    users.c.id,
    users.c.name,
    users.c.display_name,
    users.c.kind,
    users.c.role,
    users.c.disabled,
    users.c.created_at,
    users.c.last_login_at,
)


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise UserError(
            f"user name {name[:80]!r} is not valid: 1-64 letters, digits, '_', '.', '@' or "
            "'-', starting with a letter or digit"
        )
    return name


def add(
    conn: Connection,
    name: str,
    role: str,
    password: str | None,
    *,
    kind: str = "local",
    display_name: str = "",
    external_id: str | None = None,
) -> User:
    check_name(name)
    r = as_role(role)
    if get(conn, name) is not None:
        raise UserError(f"a user named {name!r} already exists")
    pw_hash = None
    if password is not None:
        passwords.check_policy(password, user=name)
        pw_hash = passwords.hash_password(password)
    row = conn.execute(
        users.insert()
        .values(
            name=name,
            role=r,
            kind=kind,
            display_name=display_name,
            password_hash=pw_hash,
            external_id=external_id,
        )
        .returning(*_COLUMNS)
    ).one()
    return _user(row)


def get(conn: Connection, name: str) -> User | None:
    row = conn.execute(select(*_COLUMNS).where(users.c.name == name)).first()
    return _user(row) if row else None


def by_id(conn: Connection, user_id: int) -> User | None:
    row = conn.execute(select(*_COLUMNS).where(users.c.id == user_id)).first()
    return _user(row) if row else None


def require(conn: Connection, name: str) -> User:
    user = get(conn, name)
    if user is None:
        raise UserError(f"no user named {name!r}")
    return user


def list_all(conn: Connection) -> list[User]:
    return [_user(r) for r in conn.execute(select(*_COLUMNS).order_by(users.c.name))]


def count_admins(conn: Connection) -> int:
    q = select(func.count()).where(users.c.role == "admin", users.c.disabled.is_(False))
    return int(conn.execute(q).scalar_one())


def _guard_last_admin(conn: Connection, user: User) -> None:
    if user.role == "admin" and not user.disabled and count_admins(conn) <= 1:
        raise UserError(f"{user.name!r} is the last enabled admin: add another admin first")


def set_role(conn: Connection, name: str, role: str) -> tuple[User, User]:
    """(before, after)."""
    user = require(conn, name)
    r = as_role(role)
    if r != "admin":
        _guard_last_admin(conn, user)
    conn.execute(update(users).where(users.c.id == user.id).values(role=r, updated_at=func.now()))
    return user, require(conn, name)


def set_disabled(conn: Connection, name: str, disabled: bool) -> tuple[User, User]:
    user = require(conn, name)
    if disabled:
        _guard_last_admin(conn, user)
        end_sessions(conn, user.id)
        conn.execute(
            update(api_tokens)
            .where(api_tokens.c.user_id == user.id, api_tokens.c.revoked_at.is_(None))
            .values(revoked_at=func.now())
        )
    conn.execute(
        update(users).where(users.c.id == user.id).values(disabled=disabled, updated_at=func.now())
    )
    return user, require(conn, name)


def set_password(conn: Connection, name: str, password: str) -> User:
    user = require(conn, name)
    if user.kind not in ("local",):
        raise UserError(f"{name!r} signs in through {user.kind}: it has no local password")
    passwords.check_policy(password, user=name)
    conn.execute(
        update(users)
        .where(users.c.id == user.id)
        .values(password_hash=passwords.hash_password(password), updated_at=func.now())
    )
    end_sessions(conn, user.id)
    return user


def end_sessions(conn: Connection, user_id: int) -> int:
    res = conn.execute(
        update(sessions)
        .where(sessions.c.user_id == user_id, sessions.c.revoked_at.is_(None))
        .values(revoked_at=func.now())
    )
    return res.rowcount or 0


def authenticate(conn: Connection, name: str, password: str) -> User | None:
    """The enabled local user whose password this is, else None (same cost either way)."""
    row = conn.execute(
        select(users.c.id, users.c.password_hash, users.c.disabled, users.c.kind).where(
            users.c.name == name
        )
    ).first()
    pw_hash = row.password_hash if row is not None else None
    ok = passwords.verify(pw_hash, password)
    if not ok or row is None or row.disabled or row.kind != "local":
        return None
    values: dict[str, object] = {"last_login_at": func.now()}
    if pw_hash and passwords.needs_rehash(pw_hash):
        values["password_hash"] = passwords.hash_password(password)
    conn.execute(update(users).where(users.c.id == row.id).values(**values))
    return by_id(conn, int(row.id))


def upsert_external(
    conn: Connection, *, kind: str, external_id: str, name: str, display_name: str, role: Role
) -> User:
    """An OIDC or auth-proxy user, created on first login; its role follows the provider."""
    row = conn.execute(
        select(users.c.id, users.c.disabled).where(users.c.external_id == external_id)
    ).first()
    if row is None:
        base = re.sub(r"[^A-Za-z0-9_.@\-]", "_", name)[:60] or "user"
        candidate, n = base, 1
        while get(conn, candidate) is not None:
            n += 1
            candidate = f"{base}-{n}"
        user = add(
            conn,
            candidate,
            role,
            None,
            kind=kind,
            display_name=display_name,
            external_id=external_id,
        )
        conn.execute(update(users).where(users.c.id == user.id).values(last_login_at=func.now()))
        return user
    conn.execute(
        update(users)
        .where(users.c.id == row.id)
        .values(
            role=role, display_name=display_name, last_login_at=func.now(), updated_at=func.now()
        )
    )
    found = by_id(conn, int(row.id))
    assert found is not None
    return found
