"""Who may call the alerting routes, and the record of what they changed, in one place.

Issue 12 (access control) brings roles, route guards, anti-forgery tokens and the audit
log. Until it lands on main, the alerting routes are open like every other route of the
app (connwatch binds to loopback and warns otherwise) and each change is logged with its
actor; when it lands, this module imports its ``require_viewer``, ``OperatorDep`` and
``audit.record`` instead, and nothing else in the alerting routes changes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.engine import Connection

log = logging.getLogger("connwatch.audit")


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asked: the web has no users yet, so the client address stands for them."""

    name: str
    role: str = "operator"


def require_viewer() -> None:
    """Reading alerting pages and API (viewer)."""
    return None


def operator(request: Request) -> Actor:
    """Changing rules, silences, acknowledgements, annotations, contact points (operator)."""
    host = request.client.host if request.client else "unknown"
    return Actor(f"web@{host}")


OperatorDep = Annotated[Actor, Depends(operator)]


def record(
    conn: Connection,
    actor: Actor,
    action: str,
    *,
    object_type: str = "",
    object_name: str = "",
    before: Any = None,
    after: Any = None,
    detail: str = "",
) -> None:
    """One line per change (secrets are never passed here: callers strip them)."""
    log.info(
        "%s %s %s %s %s",
        actor.name,
        action,
        object_type,
        object_name,
        json.dumps({"before": before, "after": after, "detail": detail}, default=str)[:2000],
    )
