"""Local account passwords: Argon2id (argon2-cffi, RFC 9106 parameters), a length policy,
and a verification that costs the same whether or not the account exists."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_LENGTH = 12
MAX_LENGTH = 256  # hashing a megabyte per attempt would be a denial of service

_hasher = PasswordHasher()  # Argon2id, t=3, m=64 MiB, p=4
_DUMMY = _hasher.hash("connwatch-no-such-account")


class PasswordPolicyError(ValueError):
    """A new password is not acceptable; the message says why (never echoes it)."""


def check_policy(password: str, *, user: str = "") -> None:
    if len(password) < MIN_LENGTH:
        raise PasswordPolicyError(f"a password needs at least {MIN_LENGTH} characters")
    if len(password) > MAX_LENGTH:
        raise PasswordPolicyError(f"a password has at most {MAX_LENGTH} characters")
    if "\x00" in password:
        raise PasswordPolicyError("a password cannot contain NUL bytes")
    if user and password.lower() == user.lower():
        raise PasswordPolicyError("a password must not be the user name")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify(password_hash: str | None, password: str) -> bool:
    """True if ``password`` matches; with no hash, spends the same time and says False."""
    if len(password) > MAX_LENGTH:
        return False
    try:
        return _hasher.verify(password_hash or _DUMMY, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    return _hasher.check_needs_rehash(password_hash)
