"""Health and readiness: the process, the store, and the schema version."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from app import migrate
from app.web.app import create_app
from tests.fixtures.auth import web_settings


@pytest.fixture
def engine(pg_url: str) -> Iterator[Engine]:
    eng = create_engine(pg_url)
    yield eng
    eng.dispose()


def test_healthz_is_up_without_a_store() -> None:
    engine = create_engine("postgresql+psycopg://u@127.0.0.1:1/none")
    with TestClient(create_app(engine, settings=web_settings())) as client:
        res = client.get("/healthz")
    assert res.status_code == 200
    assert res.json()["status"] == "ok"


def test_readyz_needs_a_reachable_store(pg_url: str) -> None:
    engine = create_engine(
        "postgresql+psycopg://u@127.0.0.1:1/none", connect_args={"connect_timeout": 2}
    )
    with TestClient(create_app(engine, settings=web_settings())) as client:
        res = client.get("/readyz")
    assert res.status_code == 503
    assert res.json()["database"] == "unreachable"


def test_readyz_needs_migrations_at_head(engine: Engine) -> None:
    with TestClient(create_app(engine, settings=web_settings())) as client:
        before = client.get("/readyz")
        migrate.upgrade(engine)
        after = client.get("/readyz")
    assert before.status_code == 503
    assert before.json()["migration"] is None
    assert after.status_code == 200
    assert after.json() == {"status": "ok", "database": "ok", "migration": migrate.head_revision()}
