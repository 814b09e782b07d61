"""The demo's access: an admin with a random password (its login printed once, when it is
created) and read-only dashboards without login for loopback clients only."""

from __future__ import annotations

import os
import secrets

import typer
from sqlalchemy.engine import Engine

from app.config import Settings

DEMO_ADMIN = "admin"


def demo_settings(settings: Settings) -> Settings:
    """The demo's settings: anonymous viewer (loopback only) unless the user chose otherwise."""
    if "CONNWATCH_ANONYMOUS_ROLE" in os.environ:
        return settings
    return settings.model_copy(update={"anonymous_role": "viewer"})


def ensure_admin(engine: Engine, url: str) -> None:
    """Create the demo admin with a random password when there is no admin yet."""
    from app.auth import audit, users
    from app.auth.principal import cli_principal

    with engine.begin() as conn:
        if users.count_admins(conn) > 0:
            typer.echo(f"  log in at {url}login with your admin account (read-only without login)")
            return
        name = DEMO_ADMIN
        n = 1
        while users.get(conn, name) is not None:
            n += 1
            name = f"{DEMO_ADMIN}{n}"
        password = secrets.token_urlsafe(12)
        users.add(conn, name, "admin", password)
        audit.record(
            conn,
            cli_principal(),
            "user.create",
            object_type="user",
            object_name=name,
            after={"role": "admin", "kind": "local", "password": True},
            detail="demo admin",
        )
    typer.echo(
        f"  log in at {url}login as {name} / {password}  (shown once; change it with "
        f"'connwatch users reset-password {name}'; without login the dashboard is read-only)"
    )
