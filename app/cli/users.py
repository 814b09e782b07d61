"""``connwatch users ...``: local accounts and their roles, from the store's host.

Passwords are read from a prompt (twice, not echoed) or, with ``--password-stdin``
(or when stdin is not a terminal), from the first line of stdin; never from argv, where
``ps`` and shell histories would show them. Every change is written to the audit log as
``cli:<os user>``.
"""

from __future__ import annotations

import getpass
import sys
from typing import Annotated

import typer
from sqlalchemy.engine import Engine

from app.cli.errors import CliError

users_cli = typer.Typer(
    help="User accounts: add, list, set-role, disable, enable, reset-password.",
    no_args_is_help=True,
)

RoleArg = Annotated[str, typer.Argument(help="viewer, operator or admin.")]
StdinOpt = Annotated[
    bool, typer.Option("--password-stdin", help="Read the password from stdin's first line.")
]


def read_password(*, from_stdin: bool) -> str:
    if from_stdin or not sys.stdin.isatty():
        line = sys.stdin.readline()
        if not line:
            raise CliError("no password on stdin")
        return line.rstrip("\r\n")
    first = getpass.getpass("New password: ")
    if getpass.getpass("Again: ") != first:
        raise CliError("the two passwords differ")
    return first


def _store(*, migrate: bool = False) -> Engine:
    from app.cli.main import load_settings, open_store

    return open_store(load_settings(), migrate_to_head=migrate)


def _fail(exc: Exception) -> None:
    raise CliError(str(exc)) from None


@users_cli.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Login name.")],
    role: Annotated[str, typer.Option("--role", help="viewer, operator or admin.")] = "viewer",
    service: Annotated[
        bool, typer.Option("--service", help="A service account: no password, tokens only.")
    ] = False,
    password_stdin: StdinOpt = False,
) -> None:
    """Add a user (prompts for the password)."""
    from app.auth import audit, users
    from app.auth.passwords import PasswordPolicyError
    from app.auth.principal import cli_principal

    password = None if service else read_password(from_stdin=password_stdin)
    engine = _store(migrate=True)  # the first admin is often made right after install
    try:
        with engine.begin() as conn:
            user = users.add(conn, name, role, password, kind="service" if service else "local")
            audit.record(
                conn,
                cli_principal(),
                "user.create",
                object_type="user",
                object_name=user.name,
                after={"role": user.role, "kind": user.kind, "password": password is not None},
            )
    except (users.UserError, PasswordPolicyError, ValueError) as exc:
        _fail(exc)
    finally:
        engine.dispose()
    typer.echo(f"user {name} added ({role}{', service account' if service else ''})")


@users_cli.command("list")
def list_users() -> None:
    """List users, their roles and state."""
    from app.auth import users

    engine = _store()
    with engine.connect() as conn:
        everyone = users.list_all(conn)
    engine.dispose()
    if not everyone:
        typer.echo("no users (add one with 'connwatch users add NAME --role admin')")
        return
    typer.echo(f"{'NAME':<24} {'ROLE':<9} {'KIND':<8} {'STATE':<9} LAST LOGIN")
    for u in everyone:
        last = u.last_login_at.strftime("%Y-%m-%d %H:%M UTC") if u.last_login_at else "never"
        state = "disabled" if u.disabled else "enabled"
        typer.echo(f"{u.name:<24} {u.role:<9} {u.kind:<8} {state:<9} {last}")


@users_cli.command("set-role")
def set_role(name: Annotated[str, typer.Argument()], role: RoleArg) -> None:
    """Change a user's role."""
    from app.auth import audit, users
    from app.auth.principal import cli_principal

    engine = _store()
    try:
        with engine.begin() as conn:
            before, after = users.set_role(conn, name, role)
            audit.record(
                conn,
                cli_principal(),
                "user.role",
                object_type="user",
                object_name=name,
                before={"role": before.role},
                after={"role": after.role},
            )
    except (users.UserError, ValueError) as exc:
        _fail(exc)
    finally:
        engine.dispose()
    typer.echo(f"{name} is now {role}")


def _set_disabled(name: str, disabled: bool) -> None:
    from app.auth import audit, users
    from app.auth.principal import cli_principal

    engine = _store()
    try:
        with engine.begin() as conn:
            before, after = users.set_disabled(conn, name, disabled)
            audit.record(
                conn,
                cli_principal(),
                "user.disable" if disabled else "user.enable",
                object_type="user",
                object_name=name,
                before={"disabled": before.disabled},
                after={"disabled": after.disabled},
            )
    except users.UserError as exc:
        _fail(exc)
    finally:
        engine.dispose()
    typer.echo(f"{name} {'disabled (sessions ended, tokens revoked)' if disabled else 'enabled'}")


@users_cli.command("disable")
def disable(name: Annotated[str, typer.Argument()]) -> None:
    """Disable a user: ends their sessions and revokes their tokens."""
    _set_disabled(name, True)


@users_cli.command("enable")
def enable(name: Annotated[str, typer.Argument()]) -> None:
    """Enable a disabled user again."""
    _set_disabled(name, False)


@users_cli.command("reset-password")
def reset_password(
    name: Annotated[str, typer.Argument()], password_stdin: StdinOpt = False
) -> None:
    """Set a new password (prompted); the user's sessions end."""
    from app.auth import audit, users
    from app.auth.passwords import PasswordPolicyError
    from app.auth.principal import cli_principal

    password = read_password(from_stdin=password_stdin)
    engine = _store()
    try:
        with engine.begin() as conn:
            users.set_password(conn, name, password)
            audit.record(
                conn, cli_principal(), "user.password", object_type="user", object_name=name
            )
    except (users.UserError, PasswordPolicyError) as exc:
        _fail(exc)
    finally:
        engine.dispose()
    typer.echo(f"new password set for {name}; their sessions ended")
