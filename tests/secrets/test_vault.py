"""Credentials: the key's life cycle, encryption, late-resolved references, clear errors."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from app.config import Settings
from app.secrets import SecretError, Vault, load_key
from app.secrets.references import resolve_reference


def test_key_is_generated_once_into_the_data_dir_with_private_mode(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    key = load_key(settings)
    path = tmp_path / "data" / "secret.key"
    assert path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_key(settings) == key  # stable across runs
    Fernet(key)  # a usable key


def test_key_from_setting_wins_and_bad_key_is_named(tmp_path: Path) -> None:
    good = Fernet.generate_key().decode()
    assert load_key(Settings(data_dir=tmp_path, secret_key=good)) == good.encode()
    with pytest.raises(SecretError, match="CONNWATCH_SECRET_KEY does not hold a valid Fernet key"):
        load_key(Settings(data_dir=tmp_path, secret_key="not-a-key"))
    bad_file = tmp_path / "k"
    bad_file.write_text("garbage")
    bad_file.chmod(0o600)
    with pytest.raises(SecretError, match=f"{bad_file} does not hold a valid Fernet key"):
        load_key(Settings(data_dir=tmp_path, secret_key_file=bad_file))


def test_encrypt_decrypt_and_wrong_key_message() -> None:
    v1 = Vault(Fernet.generate_key())
    token = v1.encrypt("tiger")
    assert "tiger" not in token
    assert v1.decrypt(token) == "tiger"
    with pytest.raises(SecretError, match="cannot be decrypted with the configured key") as info:
        Vault(Fernet.generate_key()).decrypt(token)
    assert "tiger" not in str(info.value)


def test_references_resolve_late(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allowed = Settings(data_dir=tmp_path / "data", secret_env_prefix="CW_TEST_",
                       secret_file_dirs=[str(tmp_path / "secrets")])  # fmt: skip
    (tmp_path / "secrets").mkdir()
    monkeypatch.setenv("CW_TEST_PW", "from-env")
    assert resolve_reference("env:CW_TEST_PW", allowed) == "from-env"
    f = tmp_path / "secrets" / "pw"
    f.write_text("from-file\n")
    assert resolve_reference(f"file:{f}", allowed) == "from-file"
    with pytest.raises(SecretError, match="environment variable CW_TEST_NOPE is not set"):
        resolve_reference("env:CW_TEST_NOPE", allowed)
    with pytest.raises(SecretError, match="cannot read"):
        resolve_reference(f"file:{tmp_path / 'secrets' / 'missing'}", allowed)
    # the same references under the default settings (no allow list): refused by rule
    with pytest.raises(SecretError, match="CONNWATCH_SECRET_ENV_PREFIX"):
        resolve_reference("env:CW_TEST_PW", Settings(data_dir=tmp_path / "data"))
    with pytest.raises(SecretError, match="CONNWATCH_SECRET_FILE_DIRS"):
        resolve_reference(f"file:{f}", Settings(data_dir=tmp_path / "data"))
