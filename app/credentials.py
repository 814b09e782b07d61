"""Target credentials: encrypted at rest with a Fernet key, or a reference resolved late.

A stored password is either
- a Fernet token (AES-128-CBC + HMAC-SHA256, from ``cryptography``) made with the
  key in Settings, or
- a reference ``env:NAME`` / ``file:PATH`` resolved only when a probe runs.

Plain-text passwords never reach the database, pages, API responses, logs or exports.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from app.config import Settings

REF_PREFIXES = ("env:", "file:")


class SecretError(ValueError):
    """A key or credential cannot be used; the message names what and where, never the value."""


def is_reference(value: str) -> bool:
    return value.startswith(REF_PREFIXES)


def load_key(settings: Settings, *, create: bool = True) -> bytes:
    """The Fernet key: from the setting, else the key file (generated there when absent)."""
    if settings.secret_key is not None:
        key = settings.secret_key.get_secret_value().encode()
        _check_key(key, "CONNWATCH_SECRET_KEY")
        return key
    path = settings.key_file
    if path.exists():
        try:
            key = path.read_bytes().strip()
        except OSError as exc:
            raise SecretError(f"cannot read key file {path}: {exc.strerror}") from None
        _check_key(key, str(path))
        return key
    if not create:
        raise SecretError(f"no key: set CONNWATCH_SECRET_KEY or create {path}")
    key = Fernet.generate_key()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key + b"\n")
    except FileExistsError:  # another process generated it first: use theirs
        return load_key(settings, create=False)
    except OSError as exc:
        raise SecretError(f"cannot write key file {path}: {exc.strerror}") from None
    return key


def _check_key(key: bytes, where: str) -> None:
    try:
        Fernet(key)
    except (ValueError, TypeError):
        raise SecretError(
            f"{where} does not hold a valid Fernet key (32 url-safe base64-encoded bytes)"
        ) from None


class Vault:
    """Encrypts and decrypts target passwords with one key."""

    def __init__(self, key: bytes) -> None:
        self._fernet = Fernet(key)

    @classmethod
    def from_settings(cls, settings: Settings) -> Vault:
        return cls(load_key(settings))

    def encrypt(self, password: str) -> str:
        return self._fernet.encrypt(password.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken:
            raise SecretError(
                "a stored password cannot be decrypted with the configured key "
                "(was CONNWATCH_SECRET_KEY or the key file changed?)"
            ) from None

    def resolve(self, password_enc: str | None, password_ref: str | None) -> str:
        """The plain password for a probe run, from a token or a reference."""
        if password_enc is not None:
            return self.decrypt(password_enc)
        if password_ref is not None:
            return resolve_reference(password_ref)
        return ""


def resolve_reference(ref: str) -> str:
    if ref.startswith("env:"):
        name = ref[4:]
        value = os.environ.get(name)
        if value is None:
            raise SecretError(f"password reference {ref}: environment variable {name} is not set")
        return value
    if ref.startswith("file:"):
        path = Path(ref[5:]).expanduser()
        try:
            return path.read_text().rstrip("\r\n")
        except OSError as exc:
            raise SecretError(
                f"password reference {ref}: cannot read {path}: {exc.strerror}"
            ) from None
    raise SecretError(f"unknown password reference {ref!r}: use env:NAME or file:PATH")
