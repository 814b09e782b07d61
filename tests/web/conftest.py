"""Web tests: a real PostgreSQL migrated to head, real targets and samples written by the store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.credentials import Vault
from app.demo.pgcluster import PgCluster
from app.web.app import create_app
from tests.fixtures.browser import LiveServer
from tests.web.data import Seeded, seed, seeded_app
from tests.web.weekly_data import Weeks, seed_weeks


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


@pytest.fixture(scope="session")
def live_data(live_server: LiveServer) -> Seeded:
    """The known data, written once into the live (browser) server's database."""
    return seed(live_server.engine, live_server.vault)


@pytest.fixture(scope="module")
def seeded_env(pg_cluster: PgCluster) -> Iterator[tuple[TestClient, Seeded]]:
    """One seeded database and client shared by a module's read-only tests."""
    with seeded_app(pg_cluster, "web_", seed) as made:
        yield made


@pytest.fixture(scope="module")
def weekly_env(pg_cluster: PgCluster) -> Iterator[tuple[TestClient, Weeks]]:
    """One database with the two hand-built weeks and a client, shared by a module's tests."""
    with seeded_app(pg_cluster, "weekly_", seed_weeks) as made:
        yield made
