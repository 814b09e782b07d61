"""The key ring and the vault: stored target passwords are Fernet tokens bound to endpoints.

A stored password is a Fernet token (AES-128-CBC + HMAC-SHA256, ``cryptography``) of an
envelope ``{"v": 2, "password": ..., "endpoints": [...]}``: the password and the ids of
the endpoints (host, port, service or database, user, ...) it was given for
(:mod:`app.secrets.binding`). Whoever decrypts it learns both, so a token copied onto
another target, or a target re-pointed at another host, is refused where it is used.
A token written before binding existed holds the bare password and opens as *unbound*.

Keys: ``CONNWATCH_SECRET_KEY`` (one key, or several separated by commas) or the key file
(one key per line). The first key encrypts; every key decrypts (``MultiFernet``), which
is what lets ``connwatch secrets rotate`` re-encrypt under a new key while processes that
still hold the old ring keep probing: a token they cannot open makes them re-read the
key file once (:meth:`Vault.open`), never more often than every few seconds.

Key checks: a key file that others can read or write is refused; a missing key file is
generated (mode 0600) only for the embedded store (a local install or the demo); with an
external store (production) it is an error, because a new key would orphan every stored
password.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from app.config import Settings


class SecretError(ValueError):
    """A key or credential cannot be used; the message names what and where, never the value."""


RELOAD_EVERY_S = 5.0  # at most this often a vault re-reads its key file after a failure


def parse_keys(text: str, where: str) -> list[bytes]:
    """Keys from a key file's text or the setting (lines or commas), first = primary."""
    keys = [k.strip().encode() for k in text.replace(",", "\n").splitlines() if k.strip()]
    if not keys:
        raise SecretError(f"{where} holds no key")
    for key in keys:
        _check_key(key, where)
    return keys


def _check_key(key: bytes, where: str) -> None:
    try:
        Fernet(key)
    except (ValueError, TypeError):
        raise SecretError(
            f"{where} does not hold a valid Fernet key (32 url-safe base64-encoded bytes)"
        ) from None


def check_key_file_mode(path: Path) -> None:
    """Refuse a key file that anybody but its owner (and group, for reading) may use."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise SecretError(f"cannot read key file {path}: {exc.strerror}") from None
    if mode & (stat.S_IROTH | stat.S_IWOTH | stat.S_IWGRP):
        raise SecretError(
            f"key file {path} is readable or writable by others (mode {mode:04o}): "
            f"run 'chmod 600 {path}' (it decrypts every stored password)"
        )


def load_keys(settings: Settings, *, create: bool | None = None) -> list[bytes]:
    """The key ring: from the setting, else the key file (generated there when allowed)."""
    if settings.secret_key is not None:
        return parse_keys(settings.secret_key.get_secret_value(), "CONNWATCH_SECRET_KEY")
    path = settings.key_file
    if path.exists():
        check_key_file_mode(path)
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not text"
            raise SecretError(f"cannot read key file {path}: {reason}") from None
        return parse_keys(text, str(path))
    if create is None:
        create = settings.embedded
    if not create:
        raise SecretError(
            f"no key: set CONNWATCH_SECRET_KEY or create {path} "
            "(with an external store a key is never generated: it would orphan every "
            "stored password)"
        )
    key = Fernet.generate_key()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key + b"\n")
    except FileExistsError:  # another process generated it first: use theirs
        return load_keys(settings, create=False)
    except OSError as exc:
        raise SecretError(f"cannot write key file {path}: {exc.strerror}") from None
    return [key]


def load_key(settings: Settings, *, create: bool | None = None) -> bytes:
    """The primary key (the one new tokens are made with)."""
    return load_keys(settings, create=create)[0]


@dataclass(frozen=True, slots=True)
class Sealed:
    """What a stored token holds: the secret and the endpoints it is bound to (None: unbound)."""

    secret: str
    endpoints: frozenset[str] | None


class Vault:
    """Encrypts and decrypts target secrets with a key ring (first key encrypts)."""

    def __init__(
        self,
        keys: bytes | Sequence[bytes],
        *,
        reload: Callable[[], list[bytes]] | None = None,
    ) -> None:
        self._keys = [keys] if isinstance(keys, bytes) else list(keys)
        self._fernet = MultiFernet([Fernet(k) for k in self._keys])
        self._reload = reload
        self._reloaded_at = 0.0
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> Vault:
        return cls(load_keys(settings), reload=lambda: load_keys(settings, create=False))

    @property
    def key_count(self) -> int:
        return len(self._keys)

    # -- the envelope -------------------------------------------------------------------

    def seal(self, secret: str, endpoints: Sequence[str] | frozenset[str]) -> str:
        """A token of ``secret`` bound to ``endpoints`` (ids from app.secrets.binding)."""
        doc = {"v": 2, "password": secret, "endpoints": sorted(endpoints)}
        return self._fernet.encrypt(json.dumps(doc).encode()).decode()

    def open(self, token: str) -> Sealed:
        """The secret and its endpoints; :class:`SecretError` if no key of the ring opens it."""
        raw = self._decrypt(token)
        try:
            doc = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            doc = None
        if isinstance(doc, dict) and doc.get("v") == 2 and isinstance(doc.get("password"), str):
            eps = doc.get("endpoints")
            bound = frozenset(str(e) for e in eps) if isinstance(eps, list) else frozenset()
            return Sealed(doc["password"], bound)
        try:
            return Sealed(raw.decode(), None)  # a token from before endpoint binding
        except UnicodeDecodeError:
            raise SecretError("a stored password is not text") from None

    def _decrypt(self, token: str) -> bytes:
        try:
            return self._fernet.decrypt(token.encode())
        except InvalidToken:
            if self._maybe_reload():
                try:
                    return self._fernet.decrypt(token.encode())
                except InvalidToken:
                    pass
        raise SecretError(
            "a stored password cannot be decrypted with the configured key "
            "(was CONNWATCH_SECRET_KEY or the key file changed?)"
        )

    def _maybe_reload(self) -> bool:
        """Re-read the key ring (a rotation may have added a key); True if it changed."""
        if self._reload is None:
            return False
        with self._lock:
            now = time.monotonic()
            if now - self._reloaded_at < RELOAD_EVERY_S:
                return False
            self._reloaded_at = now
            try:
                keys = self._reload()
            except SecretError:
                return False
            if keys == self._keys:
                return False
            self._keys = keys
            self._fernet = MultiFernet([Fernet(k) for k in keys])
            return True

    def rotate(self, token: str) -> str:
        """The same plaintext under the primary key (MultiFernet.rotate)."""
        try:
            return self._fernet.rotate(token.encode()).decode()
        except InvalidToken:
            raise SecretError(
                "a stored password cannot be decrypted with any configured key"
            ) from None

    # -- plain helpers (bare passwords, as before binding) -----------------------------

    def encrypt(self, password: str) -> str:
        """An unbound token (tests and legacy tools); targets use :meth:`seal`."""
        return self._fernet.encrypt(password.encode()).decode()

    def decrypt(self, token: str) -> str:
        return self.open(token).secret
