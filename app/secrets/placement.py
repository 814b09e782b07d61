"""Passwords are refused wherever they do not belong, with a message saying where they go.

A password belongs in a target's password (typed: encrypted and bound to the endpoint)
or, set by an admin, in a reference. Anywhere else it would be stored in clear, shown in
pages and API responses, exported and logged. So:

- a connect string (dsn) never carries one: not ``user/pw@host`` (Oracle), not
  ``scheme://user:pw@host`` (URLs), not ``password=`` / ``passfile=`` (libpq conninfo);
- PostgreSQL ``options`` take only the libpq keywords in :data:`PG_OPTION_KEYS`: no
  ``password``, ``passfile``, ``sslpassword``, no file a client would read
  (``service``, ``servicefile``, ``sslkey``...), no keyword that moves the endpoint
  (``host``, ``hostaddr``, ``port``, ``dbname``, ``user``: those have their own fields);
- ``wallet_password_ref`` is a reference (``env:``/``file:``), never the wallet password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.secrets.references import is_reference

WHERE_PASSWORDS_GO = (
    "a password goes in the target's password field (encrypted, bound to this endpoint), "
    "or an admin sets a reference (env:NAME or file:PATH)"
)

# libpq keywords a mode may pass through ``options`` (harmless ones only).
PG_OPTION_KEYS = frozenset(
    {
        "application_name",
        "fallback_application_name",
        "options",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "target_session_attrs",
        "gssencmode",
        "channel_binding",
        "require_auth",
        "client_encoding",
        "sslnegotiation",
        "sslcompression",
        "krbsrvname",
        "gsslib",
    }
)
_PASSWORD_KEYS = frozenset({"password", "passfile", "sslpassword"})

_ORACLE_USER_PW = re.compile(r"[^/@\s]+/[^@\s]+@")
_URL_CREDENTIALS = re.compile(r"://[^/@\s]*:[^@\s]*@")
_CONNINFO_PASSWORD = re.compile(r"(?i)(?:^|[\s;&?])(pass(?:word|file)|sslpassword)\s*=")


def dsn_problem(dsn: str) -> str | None:
    """Why ``dsn`` may not be stored (it carries a credential), or None."""
    if _ORACLE_USER_PW.search(dsn) or _URL_CREDENTIALS.search(dsn):
        return (
            "the dsn must not contain credentials: use username and password "
            f"({WHERE_PASSWORDS_GO})"
        )
    m = _CONNINFO_PASSWORD.search(dsn)
    if m:
        return f"the dsn must not contain {m.group(1).lower()}=: {WHERE_PASSWORDS_GO}"
    return None


def options_problems(options: Any) -> list[str]:
    """What is wrong with a PostgreSQL mode's ``options`` (libpq keywords), one per key."""
    if not isinstance(options, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in options.items()
    ):
        return ["parameter 'options' must map libpq keywords to strings"]
    problems = []
    for key in sorted(options):
        if key.lower() in _PASSWORD_KEYS:
            problems.append(f"options.{key}: no password in options: {WHERE_PASSWORDS_GO}")
        elif key not in PG_OPTION_KEYS:
            problems.append(
                f"options.{key}: not a libpq keyword connwatch passes on "
                f"(allowed: {', '.join(sorted(PG_OPTION_KEYS))}; host, port, dbname and "
                "user have their own fields)"
            )
    return problems


def wallet_password_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not is_reference(value):
        return (
            "parameter 'wallet_password_ref' takes a reference (env:NAME or file:PATH, set "
            "by an admin), never the wallet password itself"
        )
    return None
