"""The audit log: who did what, when, from where, to which object, before and after.

Other packages write to it through :func:`record` inside the transaction of the change
it describes (so a change and its entry are stored together or not at all)::

    from app.auth import audit
    audit.record(conn, principal, "target.update", object_type="target",
                 object_name=name, before=old, after=new)

``principal`` is the :class:`~app.auth.principal.Principal` of the request (the web has
it as ``request.state.principal`` after a guard ran) or ``cli_principal()``. Actions are
dotted ``<object>.<verb>`` names (``login.success``, ``login.failure``, ``target.create``,
``target.update``, ``target.enable``, ``target.test``, ``user.create``, ``token.create``,
...). ``before``/``after`` pass through :func:`strip_secrets`: any key that names a
secret (password, secret, token, key, credential, ``*_enc``, ``*_ref``, binding) keeps
only whether it was set, never its value, at any depth.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.engine import Connection

from app.auth.principal import Principal
from app.auth.tables import audit_log

SECRET_KEY = re.compile(
    r"(?i)(pass(word|wd|phrase)?|secret|token|credential|api[_-]?key|private[_-]?key"
    r"|_enc$|_ref$|binding|^key$)"
)
SET, UNSET = "(set)", "(not set)"
MAX_TEXT = 2000
MAX_DEPTH = 12


def strip_secrets(value: Any, _depth: int = 0) -> Any:
    """``value`` with every secret-named key's value replaced by "(set)" / "(not set)"."""
    if _depth > MAX_DEPTH:
        return "(nested too deep)"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            if SECRET_KEY.search(key):
                out[key] = SET if v not in (None, "", {}, []) else UNSET
            else:
                out[key] = strip_secrets(v, _depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [strip_secrets(v, _depth + 1) for v in value]
    if isinstance(value, str):
        return value[:MAX_TEXT]
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float):
        return value
    return str(value)[:MAX_TEXT]


def record(
    conn: Connection,
    actor: Principal,
    action: str,
    *,
    object_type: str = "",
    object_name: str = "",
    before: Any = None,
    after: Any = None,
    outcome: str = "ok",
    detail: str = "",
) -> None:
    """Append one entry (in the caller's transaction)."""
    conn.execute(
        audit_log.insert().values(
            actor=actor.name[:200],
            actor_role=actor.role,
            via=actor.via,
            source=actor.source[:200],
            action=action[:100],
            object_type=object_type[:100],
            object_name=object_name[:300],
            outcome=outcome[:20],
            detail=detail[:MAX_TEXT],
            before=strip_secrets(before) if before is not None else None,
            after=strip_secrets(after) if after is not None else None,
        )
    )


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    at: datetime
    actor: str
    actor_role: str | None
    via: str
    source: str
    action: str
    object_type: str
    object_name: str
    outcome: str
    detail: str
    before: Any
    after: Any


@dataclass(frozen=True, slots=True)
class Filter:
    actor: str | None = None
    action: str | None = None  # exact, or a prefix ending in "." ("target.")
    object_type: str | None = None
    object_name: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None


def query(
    conn: Connection, f: Filter, *, limit: int = 100, before_id: int | None = None
) -> list[Entry]:
    """Entries matching ``f``, newest first; ``before_id`` pages further back."""
    conds = []
    if f.actor:
        conds.append(audit_log.c.actor == f.actor)
    if f.action:
        if f.action.endswith("."):
            conds.append(audit_log.c.action.startswith(f.action, autoescape=True))
        else:
            conds.append(audit_log.c.action == f.action)
    if f.object_type:
        conds.append(audit_log.c.object_type == f.object_type)
    if f.object_name:
        conds.append(audit_log.c.object_name == f.object_name)
    if f.outcome:
        conds.append(audit_log.c.outcome == f.outcome)
    if f.since:
        conds.append(audit_log.c.at >= f.since)
    if f.until:
        conds.append(audit_log.c.at < f.until)
    if before_id is not None:
        conds.append(audit_log.c.id < before_id)
    q = select(audit_log).where(and_(True, *conds)).order_by(audit_log.c.id.desc()).limit(limit)
    return [Entry(**dict(r._mapping)) for r in conn.execute(q)]


def count_recent(conn: Connection, actor: str, action: str, seconds: int) -> int:
    """How often ``actor`` did ``action`` in the last ``seconds`` (rate limits use it)."""
    from sqlalchemy import func, text

    q = select(func.count()).where(
        audit_log.c.actor == actor,
        audit_log.c.action == action,
        audit_log.c.at > func.now() - text(f"interval '{int(seconds)} seconds'"),
    )
    return int(conn.execute(q).scalar_one())
