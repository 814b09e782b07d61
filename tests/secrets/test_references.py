"""References resolve only inside the allow lists; a refusal names the rule, not the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.config import Settings
from app.secrets import ReferencePolicy, ReferenceRefused, SecretError


def _policy(tmp_path: Path, **kw: object) -> ReferencePolicy:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return ReferencePolicy.from_settings(Settings(data_dir=data, **kw))  # type: ignore[arg-type]


def test_nothing_resolves_by_default(tmp_path: Path) -> None:
    p = _policy(tmp_path)
    with pytest.raises(ReferenceRefused, match="CONNWATCH_SECRET_ENV_PREFIX"):
        p.resolve("env:HOME")
    with pytest.raises(ReferenceRefused, match="CONNWATCH_SECRET_FILE_DIRS"):
        p.resolve("file:/etc/passwd")


def test_env_references_need_the_prefix_and_never_read_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CWPW_SALES", "s3cret")
    monkeypatch.setenv("CONNWATCH_SECRET_KEY", "never")
    p = _policy(tmp_path, secret_env_prefix="CWPW_")
    assert p.resolve("env:CWPW_SALES") == "s3cret"
    with pytest.raises(ReferenceRefused, match="starting with 'CWPW_'"):
        p.resolve("env:PATH")
    q = _policy(tmp_path, secret_env_prefix="CONNWATCH_")
    with pytest.raises(ReferenceRefused, match="never read connwatch's own settings"):
        q.resolve("env:CONNWATCH_SECRET_KEY")
    with pytest.raises(SecretError, match="not set") as info:
        p.resolve("env:CWPW_MISSING")
    assert "s3cret" not in str(info.value)


def test_file_references_stay_inside_the_allowed_dirs(tmp_path: Path) -> None:
    allowed = tmp_path / "pw"
    allowed.mkdir()
    (allowed / "sales").write_text("from-file\n")
    (allowed / "big").write_text("x" * 5000)
    outside = tmp_path / "outside.txt"
    outside.write_text("SHOULD-NEVER-BE-READ")
    (allowed / "link").symlink_to(outside)
    (allowed / "dotdot").mkdir()
    p = _policy(tmp_path, secret_file_dirs=[str(allowed)])
    assert p.resolve(f"file:{allowed}/sales") == "from-file"
    for ref in [
        f"file:{outside}",
        f"file:{allowed}/link",
        f"file:{allowed}/dotdot/../../outside.txt",
        "file:/etc/passwd",
    ]:
        with pytest.raises(
            ReferenceRefused, match="must point inside CONNWATCH_SECRET_FILE_DIRS"
        ) as info:
            p.resolve(ref)
        assert "SHOULD-NEVER" not in str(info.value)
    with pytest.raises(ReferenceRefused, match="absolute"):
        p.resolve("file:pw/sales")
    with pytest.raises(SecretError, match="larger than 4096"):
        p.resolve(f"file:{allowed}/big")
    with pytest.raises(SecretError, match="not a regular file"):
        p.resolve(f"file:{allowed}/dotdot")


def test_never_the_key_file_or_the_data_directory_even_when_allowed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    key = data / "secret.key"
    key.write_text("k")
    os.chmod(key, 0o600)
    for dirs in ([str(tmp_path)], [str(data)], ["/"]):
        p = ReferencePolicy.from_settings(Settings(data_dir=data, secret_file_dirs=dirs))
        for ref in (f"file:{key}", f"file:{data}/pg/postgresql.conf", f"file:{data}"):
            with pytest.raises(ReferenceRefused, match="key file or data directory"):
                p.resolve(ref)
    elsewhere = tmp_path / "keys" / "cw.key"
    elsewhere.parent.mkdir()
    elsewhere.write_text("k")
    p = ReferencePolicy.from_settings(
        Settings(
            data_dir=data, secret_key_file=elsewhere, secret_file_dirs=[str(tmp_path / "keys")]
        )
    )
    with pytest.raises(ReferenceRefused, match="key file"):
        p.resolve(f"file:{elsewhere}")
