"""Notification tests: a migrated store, a vault, settings pointing at the receivers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from sqlalchemy.engine import Engine

from app.config import Settings
from app.notify.deliver import Deliverer
from app.secrets import Vault
from tests.fixtures.receivers import SmtpServer


@pytest.fixture
def vault() -> Vault:
    return Vault(Fernet.generate_key())


def notify_settings(tmp: Path, smtp: SmtpServer | None = None, **extra: object) -> Settings:
    values: dict[str, object] = {"data_dir": tmp, "notify_timeout_s": 5.0, "smtp_timeout_s": 5.0}
    if smtp is not None:
        values.update(
            smtp_host=smtp.host,
            smtp_port=smtp.port,
            smtp_security="starttls",
            smtp_username=smtp.user,
            smtp_password=smtp.password,
            smtp_ca_file=smtp.ca_file,
            smtp_from="connwatch@example.org",
        )
    values.update(extra)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def make_deliverer(migrated_engine: Engine, vault: Vault, tmp_path: Path) -> Iterator[object]:
    made: list[Deliverer] = []

    def make(smtp: SmtpServer | None = None, **extra: object) -> Deliverer:
        d = Deliverer(migrated_engine, notify_settings(tmp_path, smtp, **extra), vault=vault)
        made.append(d)
        return d

    yield make
    for d in made:
        d.close()
