"""Who is asking: a user by session, token or auth proxy, the anonymous role, or the CLI."""

from __future__ import annotations

import getpass
import socket
from dataclasses import dataclass

from app.auth.roles import Role, at_least


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller of one request (or command). ``role`` None: may do nothing."""

    name: str
    role: Role | None
    via: str  # session | token | proxy | anonymous | cli | system
    source: str = ""  # the client address (after trusted proxies), or the CLI's host
    user_id: int | None = None
    session_id: int | None = None
    csrf_token: str | None = None
    token_id: int | None = None
    scope: str | None = None  # read | write, for tokens

    def can(self, needed: Role) -> bool:
        return at_least(self.role, needed)

    @property
    def logged_in(self) -> bool:
        return self.user_id is not None


ANONYMOUS = Principal(name="anonymous", role=None, via="anonymous")


def cli_principal() -> Principal:
    """Whoever runs a connwatch command on the store's host acts as an admin."""
    try:
        user = getpass.getuser()
    except Exception:  # no name for this uid (containers): still say it was the CLI
        user = "unknown"
    return Principal(name=f"cli:{user}", role="admin", via="cli", source=socket.gethostname())
