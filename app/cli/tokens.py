"""``connwatch tokens ...``: API tokens for scripts and Prometheus, from the store's host.

A token is printed once when created and stored only as a hash; ``list`` shows its first
characters, scope, expiry and last use. A ``read`` token acts as a viewer (API,
``/metrics``); a ``write`` token with its owner's role. Changes are audited.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from app.cli.errors import CliError

tokens_cli = typer.Typer(
    help="API tokens: create (shown once), list, revoke.", no_args_is_help=True
)


@tokens_cli.command("create")
def create(
    user: Annotated[str, typer.Option("--user", help="Owner: a user or service account.")],
    name: Annotated[str, typer.Option("--name", help="What the token is for (e.g. prometheus).")],
    scope: Annotated[str, typer.Option("--scope", help="read or write.")] = "read",
    expires_days: Annotated[
        int | None, typer.Option("--expires-days", min=1, max=3650, help="Expire after N days.")
    ] = None,
) -> None:
    """Create a token and print it (once)."""
    from app.auth import audit, tokens, users
    from app.auth.principal import cli_principal
    from app.cli.main import load_settings, open_store

    engine = open_store(load_settings())
    expires = datetime.now(UTC) + timedelta(days=expires_days) if expires_days else None
    try:
        with engine.begin() as conn:
            owner = users.require(conn, user)
            token, info = tokens.create(
                conn,
                user_id=owner.id,
                name=name,
                scope=scope,
                created_by=cli_principal().name,
                expires_at=expires,
            )
            audit.record(
                conn,
                cli_principal(),
                "token.create",
                object_type="token",
                object_name=name,
                after={"user": owner.name, "scope": scope, "expires_at": expires},
            )
    except (users.UserError, tokens.TokenError) as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(token)
    typer.echo(
        f"token {info.id} '{name}' for {owner.name} ({scope}); shown once, stored as a hash",
        err=True,
    )


@tokens_cli.command("list")
def list_tokens() -> None:
    """List tokens (never their values)."""
    from app.auth import tokens
    from app.cli.main import load_settings, open_store

    engine = open_store(load_settings())
    with engine.connect() as conn:
        rows = tokens.list_all(conn)
    engine.dispose()
    typer.echo(
        f"{'ID':>4} {'NAME':<20} {'USER':<16} {'SCOPE':<6} {'STARTS':<11} {'STATE':<8} LAST USED"
    )
    for t in rows:
        state = (
            "revoked"
            if t.revoked_at
            else ("expired" if t.expires_at and t.expires_at < datetime.now(UTC) else "active")
        )
        last = t.last_used_at.strftime("%Y-%m-%d %H:%M") if t.last_used_at else "never"
        row = f"{t.id:>4} {t.name[:20]:<20} {t.user_name[:16]:<16} {t.scope:<6} "
        typer.echo(row + f"{t.prefix:<11} {state:<8} {last}")


@tokens_cli.command("revoke")
def revoke(token_id: Annotated[int, typer.Argument(help="The token's id (see list).")]) -> None:
    """Revoke a token."""
    from app.auth import audit, tokens
    from app.auth.principal import cli_principal
    from app.cli.main import load_settings, open_store

    engine = open_store(load_settings())
    try:
        with engine.begin() as conn:
            info = tokens.revoke(conn, token_id)
            if info is None:
                raise CliError(f"no live token with id {token_id}")
            audit.record(
                conn,
                cli_principal(),
                "token.revoke",
                object_type="token",
                object_name=info.name,
                before={"user": info.user_name, "scope": info.scope},
            )
    finally:
        engine.dispose()
    typer.echo(f"token {token_id} revoked")
