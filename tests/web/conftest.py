"""Web tests: a real PostgreSQL migrated to head, real targets and samples written by the store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from app import migrate
from app.credentials import Vault
from app.web.app import create_app
from tests.web.data import Seeded, seed


@pytest.fixture
def migrated_engine(pg_url: str) -> Iterator[Engine]:
    eng = create_engine(pg_url)
    migrate.upgrade(eng)
    try:
        yield eng
    finally:
        eng.dispose()


@pytest.fixture
def vault() -> Vault:
    return Vault(Fernet.generate_key())


@pytest.fixture
def client(migrated_engine: Engine, vault: Vault) -> Iterator[TestClient]:
    with TestClient(create_app(migrated_engine, vault=vault)) as c:
        yield c


@pytest.fixture
def seeded(migrated_engine: Engine, vault: Vault) -> Seeded:
    return seed(migrated_engine, vault)
