"""The three roles, ordered: viewer < operator < admin.

- ``viewer``: every page and every read API, ``/metrics`` with a read token;
- ``operator``: also targets, modes, "test now" (and silences, acknowledgements and
  annotations where those exist), typing passwords but not setting references;
- ``admin``: also users, API tokens, sessions of others, settings, password references
  and file paths of targets, and the audit log.
"""

from __future__ import annotations

from typing import Literal

Role = Literal["viewer", "operator", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "operator", "admin")
_RANK: dict[str, int] = {r: i for i, r in enumerate(ROLES)}


def is_role(value: str) -> bool:
    return value in _RANK


def as_role(value: str) -> Role:
    for role in ROLES:
        if value == role:
            return role
    raise ValueError(f"role must be one of {', '.join(ROLES)}, got {value!r}")


def at_least(role: str | None, needed: Role) -> bool:
    """True when ``role`` grants what ``needed`` grants."""
    return role is not None and is_role(role) and _RANK[as_role(role)] >= _RANK[needed]


def lower(a: Role, b: Role) -> Role:
    return a if _RANK[a] <= _RANK[b] else b


def highest(roles: list[Role]) -> Role | None:
    best: Role | None = None
    for r in roles:
        if best is None or _RANK[r] > _RANK[best]:
            best = r
    return best
