"""The 12c password verifier logon (O5LOGON with PBKDF2-SHA512), server side.

Phase one hands the client a salt, an encrypted server key half and the PBKDF2 counts;
phase two checks the client's key half and password and proves the server knows the
verifier (AUTH_SVR_RESPONSE).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

VERIFIER_12C = 0x4815
SPEEDY = b"AUTH_PBKDF2_SPEEDY_KEY"


def _aes(key: bytes, data: bytes, encrypt: bool) -> bytes:
    cipher = Cipher(algorithms.AES(key), modes.CBC(bytes(16)))
    op = cipher.encryptor() if encrypt else cipher.decryptor()
    return op.update(data) + op.finalize()


def pbkdf2(secret: bytes, salt: bytes, iterations: int, length: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha512", secret, salt, iterations, length)


@dataclass(slots=True)
class Verifier:
    """What a database stores for a user: salt and the derived password hash."""

    salt: bytes
    vgen: int
    password_hash: bytes
    _password: bytes  # a simulator may keep it: it only ever guards fake data

    @classmethod
    def create(cls, password: str, vgen: int) -> Verifier:
        salt = os.urandom(16)
        key = pbkdf2(password.encode(), salt + SPEEDY, vgen, 64)
        return cls(salt, vgen, hashlib.sha512(key + salt).digest()[:32], password.encode())

    def matches(self, password: bytes) -> bool:
        return hmac.compare_digest(password, self._password)


@dataclass(slots=True)
class Challenge:
    """Phase-one state kept on the server for phase two."""

    verifier: Verifier
    part_a: bytes
    csk_salt: bytes
    sder: int

    @classmethod
    def start(cls, verifier: Verifier, sder: int) -> Challenge:
        return cls(verifier, os.urandom(32), os.urandom(16), sder)

    def phase_one_params(self) -> list[tuple[str, str, int]]:
        """(key, value, flags) pairs; AUTH_VFR_DATA's flags carry the verifier type."""
        sesskey = _aes(self.verifier.password_hash, self.part_a, True).hex().upper()
        return [
            ("AUTH_SESSKEY", sesskey, 0),
            ("AUTH_VFR_DATA", self.verifier.salt.hex().upper(), VERIFIER_12C),
            ("AUTH_PBKDF2_CSK_SALT", self.csk_salt.hex().upper(), 0),
            ("AUTH_PBKDF2_VGEN_COUNT", str(self.verifier.vgen), 0),
            ("AUTH_PBKDF2_SDER_COUNT", str(self.sder), 0),
            ("AUTH_GLOBALLY_UNIQUE_DBID", "0" * 32, 0),
        ]

    def check(self, client_sesskey: str, encrypted_password: str) -> tuple[bool, bytes]:
        """(password right?, combo key). Malformed input counts as a wrong password."""
        try:
            part_b = _aes(self.verifier.password_hash, bytes.fromhex(client_sesskey), False)
            temp = (part_b[:32] + self.part_a[:32]).hex().upper().encode()
            combo = pbkdf2(temp, self.csk_salt, self.sder, 32)
            plain = _aes(combo, bytes.fromhex(encrypted_password), False)[16:]
        except ValueError:
            return False, b""
        pad = plain[-1] if plain else 0
        password = plain[:-pad] if 0 < pad <= 16 else plain
        return self.verifier.matches(password), combo

    @staticmethod
    def server_response(combo: bytes) -> str:
        return _aes(combo, os.urandom(16) + b"SERVER_TO_CLIENT", True).hex().upper()
