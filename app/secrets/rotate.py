"""Key rotation without a gap in probing, and binding secrets stored before binding.

``connwatch secrets rotate`` (app/cli/secrets.py):

1. writes the key file anew (atomically, mode 0600) with a new key first and the old
   keys after it: new tokens use the new key, every old token still opens;
2. re-encrypts every stored password and reference binding under the new key in one
   transaction (``MultiFernet.rotate``: same plaintext, same endpoints, new key).

Running processes keep the old ring until a token does not open with it; then they
re-read the key file once (app.secrets.vault) and go on. So no probe misses a beat.
With ``--drop-old`` (after every process has restarted or re-read the file) keys no
token uses any more are removed from the file; the command checks that every token
opens with the primary key first.

Keys from ``CONNWATCH_SECRET_KEY`` cannot be rewritten by connwatch: put a new key in
front of the old one there (``NEW,OLD``) on every process, then ``rotate --reencrypt``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from sqlalchemy import select, text, update
from sqlalchemy.engine import Connection

from app.config import Settings
from app.models import modes, targets
from app.secrets.binding import Endpoint, endpoint_fields
from app.secrets.vault import SecretError, Vault, check_key_file_mode, load_keys


@dataclass
class RotateResult:
    reencrypted: int = 0
    bound: int = 0
    keys: int = 0


def write_key_file(path: Path, keys: list[bytes]) -> None:
    """Replace the key file atomically (a reader sees the old or the new file, whole)."""
    tmp = path.with_name(path.name + ".new")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(b"\n".join(keys) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise SecretError(f"cannot write key file {path}: {exc.strerror}") from None


def add_primary_key(settings: Settings) -> list[bytes]:
    """A new primary key in front of the key file's keys; the new ring."""
    if settings.secret_key is not None:
        raise SecretError(
            "the keys come from CONNWATCH_SECRET_KEY, which connwatch cannot rewrite: set it "
            "to 'NEW,OLD' on every process ('connwatch secrets new-key' prints a key), then "
            "run 'connwatch secrets rotate --reencrypt'"
        )
    path = settings.key_file
    if not path.exists():
        raise SecretError(f"no key file at {path}: nothing to rotate")
    check_key_file_mode(path)
    ring = [Fernet.generate_key(), *load_keys(settings, create=False)]
    write_key_file(path, ring)
    return ring


def target_endpoints(conn: Connection, target_id: int) -> list[Endpoint]:
    """The endpoints of a stored target's modes (every mode, enabled or not)."""
    t = conn.execute(select(targets).where(targets.c.id == target_id)).mappings().one()
    rows = conn.execute(select(modes).where(modes.c.target_id == target_id)).mappings().all()
    return [
        Endpoint(
            m["name"],
            endpoint_fields(
                kind=t["kind"],
                dsn=t["dsn"],
                username=t["username"],
                mode_kind=m["kind"],
                transport=m["transport"],
                target_params=t["params"],
                mode_params=m["params"],
            ),
        )
        for m in rows
    ]


def reencrypt(conn: Connection, vault: Vault) -> int:
    """Every stored token under the vault's primary key; how many rows changed."""
    n = 0
    rows = conn.execute(
        select(targets.c.id, targets.c.password_enc, targets.c.ref_binding).where(
            targets.c.password_enc.is_not(None) | targets.c.ref_binding.is_not(None)
        )
    ).all()
    for r in rows:
        values = {}
        if r.password_enc:
            values["password_enc"] = vault.rotate(r.password_enc)
        if r.ref_binding:
            values["ref_binding"] = vault.rotate(r.ref_binding)
        conn.execute(update(targets).where(targets.c.id == r.id).values(**values))
        n += 1
    # contact points' secrets (app.notify) are sealed with the same key ring
    for cp in conn.execute(_CONTACT_SECRETS).all():
        conn.execute(
            text("update contact_points set secret_enc = :s where id = :i"),
            {"s": vault.rotate(cp.secret_enc), "i": cp.id},
        )
        n += 1
    return n


_CONTACT_SECRETS = text("select id, secret_enc from contact_points where secret_enc is not null")


def bind_unbound(conn: Connection, vault: Vault) -> int:
    """Bind secrets stored before endpoint binding to the endpoints their targets have now."""
    n = 0
    rows = conn.execute(
        select(targets.c.id, targets.c.password_enc, targets.c.password_ref, targets.c.ref_binding)
    ).all()
    for r in rows:
        ids = [e.id for e in target_endpoints(conn, r.id)]
        if r.password_enc and vault.open(r.password_enc).endpoints is None:
            sealed = vault.seal(vault.open(r.password_enc).secret, ids)
            conn.execute(update(targets).where(targets.c.id == r.id).values(password_enc=sealed))
            n += 1
        elif r.password_ref and not r.ref_binding:
            conn.execute(
                update(targets)
                .where(targets.c.id == r.id)
                .values(ref_binding=vault.seal(r.password_ref, ids))
            )
            n += 1
    return n


def unused_keys(conn: Connection, keys: list[bytes]) -> list[bytes]:
    """The keys (after the primary) no stored token needs: every token opens with the primary."""
    primary = Fernet(keys[0])
    tokens: list[tuple[str | None, ...]] = [
        tuple(r) for r in conn.execute(select(targets.c.password_enc, targets.c.ref_binding))
    ]
    tokens += [(r.secret_enc,) for r in conn.execute(_CONTACT_SECRETS)]
    for row in tokens:
        for token in row:
            if token:
                try:
                    primary.decrypt(token.encode())
                except InvalidToken:
                    raise SecretError(
                        "some stored passwords still use an old key: run "
                        "'connwatch secrets rotate --reencrypt' first"
                    ) from None
    return keys[1:]
