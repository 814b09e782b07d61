"""``connwatch secrets ...``: the key that encrypts stored passwords.

- ``rotate``: a new key first in the key file (old keys kept for reading), then every
  stored password re-encrypted under it, in one transaction; probing never stops
  (app/secrets/rotate.py says why). ``--reencrypt`` only re-encrypts (keys managed in
  ``CONNWATCH_SECRET_KEY``); ``--drop-old`` removes keys no stored password needs.
- ``bind``: binds passwords stored before endpoint binding to their targets' current
  endpoints (``connwatch migrate`` does it too).
- ``new-key``: prints a fresh key (for ``CONNWATCH_SECRET_KEY`` or a key file).
- ``check``: the key's health: where it comes from, the file's mode, how many keys,
  whether every stored password opens with the first one.
"""

from __future__ import annotations

from typing import Annotated

import typer

from app.cli.errors import CliError

secrets_cli = typer.Typer(
    help="The key that encrypts stored passwords: rotate, bind, new-key, check.",
    no_args_is_help=True,
)


@secrets_cli.command("new-key")
def new_key() -> None:
    """Print a new Fernet key."""
    from cryptography.fernet import Fernet

    typer.echo(Fernet.generate_key().decode())


@secrets_cli.command("rotate")
def rotate(
    reencrypt: Annotated[
        bool,
        typer.Option("--reencrypt", help="Only re-encrypt under the first configured key."),
    ] = False,
    drop_old: Annotated[
        bool,
        typer.Option("--drop-old", help="Remove old keys that no stored password needs."),
    ] = False,
) -> None:
    """Encrypt every stored password under a new key, without a gap in probing."""
    from app.auth import audit
    from app.auth.principal import cli_principal
    from app.cli.main import load_settings, open_store
    from app.secrets import SecretError, Vault, load_keys
    from app.secrets import rotate as rot

    settings = load_settings()
    engine = open_store(settings)
    try:
        if drop_old:
            if settings.secret_key is not None:
                raise CliError("keys from CONNWATCH_SECRET_KEY: remove old ones there yourself")
            keys = load_keys(settings, create=False)
            with engine.connect() as conn:
                dropped = rot.unused_keys(conn, keys)
            rot.write_key_file(settings.key_file, keys[:1])
            typer.echo(f"{len(dropped)} old key(s) removed from {settings.key_file}")
            return
        if not reencrypt:
            ring = rot.add_primary_key(settings)
            typer.echo(f"new key written first in {settings.key_file} ({len(ring)} keys)")
        vault = Vault.from_settings(settings)
        with engine.begin() as conn:
            bound = rot.bind_unbound(conn, vault)
            n = rot.reencrypt(conn, vault)
            audit.record(
                conn,
                cli_principal(),
                "secrets.rotate",
                object_type="key",
                detail=f"{n} targets re-encrypted, {bound} bound to their endpoints",
            )
    except SecretError as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(
        f"{n} stored password(s) re-encrypted under the first key; running processes pick "
        "the new key up by themselves. After every process has restarted, "
        "'connwatch secrets rotate --drop-old' removes the old key."
    )


@secrets_cli.command("bind")
def bind() -> None:
    """Bind passwords stored before endpoint binding to their targets' current endpoints."""
    from app.auth import audit
    from app.auth.principal import cli_principal
    from app.cli.main import load_settings, open_store
    from app.secrets import SecretError, Vault
    from app.secrets.rotate import bind_unbound

    settings = load_settings()
    engine = open_store(settings)
    try:
        with engine.begin() as conn:
            n = bind_unbound(conn, Vault.from_settings(settings))
            if n:
                audit.record(conn, cli_principal(), "secrets.bind", object_type="key",
                             detail=f"{n} targets bound to their endpoints")  # fmt: skip
    except SecretError as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(f"{n} stored password(s) bound to their targets' endpoints")


@secrets_cli.command("check")
def check() -> None:
    """Where the key comes from and whether every stored password opens with it."""
    from cryptography.fernet import Fernet, InvalidToken
    from sqlalchemy import select

    from app.cli.main import load_settings, open_store
    from app.models import targets
    from app.secrets import SecretError, load_keys

    settings = load_settings()
    try:
        keys = load_keys(settings, create=False)
    except SecretError as exc:
        raise CliError(str(exc)) from None
    where = "CONNWATCH_SECRET_KEY" if settings.secret_key else str(settings.key_file)
    typer.echo(f"keys: {len(keys)} from {where} (the first encrypts)")
    if settings.secret_key is None and settings.data_dir in settings.key_file.resolve().parents:
        typer.echo(
            "warning: the key file is inside the data directory: keep it outside the data "
            "directory and its backups (CONNWATCH_SECRET_KEY_FILE)"
        )
    engine = open_store(settings)
    primary, old = Fernet(keys[0]), 0
    with engine.connect() as conn:
        for row in conn.execute(select(targets.c.password_enc, targets.c.ref_binding)):
            for token in row:
                if token:
                    try:
                        primary.decrypt(token.encode())
                    except InvalidToken:
                        old += 1
    engine.dispose()
    typer.echo(
        "every stored password opens with the first key"
        if not old
        else f"{old} stored token(s) need an older key: run 'connwatch secrets rotate --reencrypt'"
    )
