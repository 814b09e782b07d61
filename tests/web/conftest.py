"""Web tests: a real PostgreSQL migrated to head, real targets and samples written by the store."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from app import migrate
from app.credentials import Vault
from app.pgcluster import PgCluster
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


@pytest.fixture(scope="module")
def seeded_env(pg_cluster: PgCluster) -> Iterator[tuple[TestClient, Seeded]]:
    """One seeded database and client shared by a module's read-only tests."""
    name = "web_" + uuid.uuid4().hex[:10]
    pg_cluster.create_database(name)
    engine = create_engine(pg_cluster.url(name))
    try:
        migrate.upgrade(engine)
        vault = Vault(Fernet.generate_key())
        data = seed(engine, vault)
        with TestClient(create_app(engine, vault=vault)) as c:
            yield c, data
    finally:
        engine.dispose()
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')
