"""Web tests: a real PostgreSQL migrated to head, real targets and samples written by the store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from app.secrets import Vault
from tests.fixtures.auth import web_client
from tests.fixtures.browser import LiveServer
from tests.web.data import Seeded, seed, seeded_app
from tests.web.weekly_data import Weeks, seed_weeks


@pytest.fixture
def vault() -> Vault:
    return Vault(Fernet.generate_key())


@pytest.fixture
def client(migrated_engine: Engine, vault: Vault) -> Iterator[TestClient]:
    """A client logged in as an admin (tests/fixtures/auth.py), so it may do anything."""
    with web_client(migrated_engine, vault, role="admin") as c:
        yield c


@pytest.fixture
def anon_client(migrated_engine: Engine, vault: Vault) -> Iterator[TestClient]:
    """A client without login, on an app with the production defaults."""
    with web_client(migrated_engine, vault, role=None) as c:
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
