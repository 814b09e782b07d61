"""Settings: defaults, the CONNWATCH_ prefix, validation, and the README table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.config import Settings

ROOT = Path(__file__).resolve().parent.parent


def test_defaults_bind_to_loopback_and_use_the_embedded_store() -> None:
    s = Settings()
    assert (s.host, s.port) == ("127.0.0.1", 8000)
    assert s.embedded
    assert s.data_dir.is_absolute()
    assert (s.retention_raw_days, s.retention_1m_days, s.retention_1h_days) == (35, 400, 1826)


def test_environment_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNWATCH_PORT", "9001")
    monkeypatch.setenv("CONNWATCH_DATABASE_URL", "postgresql://u:pw@db/cw")
    monkeypatch.setenv("CONNWATCH_LOG_FORMAT", "json")
    s = Settings()
    assert s.port == 9001
    assert not s.embedded
    assert s.log_format == "json"
    assert "pw" not in repr(s)  # the URL may hold a password: it is a SecretStr


def test_invalid_values_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONNWATCH_PORT", "70000")
    with pytest.raises(ValidationError):
        Settings()


def test_readme_settings_table_lists_every_setting_with_its_default() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(CONNWATCH_[A-Z0-9_]+)` \| ([^|]*) \|", readme, re.M))
    for name, field in Settings.model_fields.items():
        env = f"CONNWATCH_{name.upper()}"
        assert env in rows, f"README settings table lacks {env}"
        assert field.description, name
    assert set(rows) == {f"CONNWATCH_{n.upper()}" for n in Settings.model_fields}


def _readme_default(cell: str) -> str:
    return cell.strip().strip("`")


def test_readme_defaults_are_the_codes_defaults() -> None:
    """The README's default column says what the code does (issue 11: it was read but
    never compared). Placeholders such as ``<hostname>-<pid>`` are computed at run time."""
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(CONNWATCH_[A-Z0-9_]+)` \| ([^|]*) \|", readme, re.M))
    wrong = {}
    for name, field in Settings.model_fields.items():
        said = _readme_default(rows[f"CONNWATCH_{name.upper()}"])
        default = field.get_default(call_default_factory=True)
        if "<" in said:
            continue
        if said in ("unset", "empty"):
            ok = default is None or default == "" or default == []
        elif isinstance(default, list):  # comma-separated settings (app.config.CommaList)
            ok = said == ",".join(default)
        elif isinstance(default, bool):
            ok = said.lower() == str(default).lower()
        elif isinstance(default, int | float):
            ok = float(said) == float(default)
        elif isinstance(default, Path):
            ok = Path(said) == default or str(default).endswith(said)
        else:
            secret = getattr(default, "get_secret_value", None)
            ok = said == str(secret() if secret else default)
        if not ok:
            wrong[name] = (said, default)
    assert wrong == {}
