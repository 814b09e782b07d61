"""The store: the embedded default (pgserver) and a configured URL, both on real servers."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from app import migrate
from app.config import Settings
from app.db import (
    StoreError,
    check_server,
    database_url,
    make_engine,
    normalise_url,
    redact,
    stop_embedded,
)
from app.demo.pgcluster import PgCluster


@pytest.mark.slow
def test_embedded_default_starts_migrates_and_stops(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    url = database_url(settings)
    assert "host=" in url  # unix socket only: nothing listens on TCP
    engine = make_engine(url)
    try:
        assert check_server(engine) >= 160000
        migrate.upgrade(engine)
        assert migrate.is_at_head(engine)
        # a second resolution joins the same server
        assert database_url(settings) == url
    finally:
        engine.dispose()
    pidfile = tmp_path / "data" / "pg" / "postmaster.pid"
    assert pidfile.exists()
    stop_embedded()
    assert not pidfile.exists(), "the embedded server must stop when its last user leaves"


def test_configured_url_is_used_as_is(pg_cluster: PgCluster, pg_database: str) -> None:
    plain = f"postgresql://{pg_cluster.user}@127.0.0.1:{pg_cluster.port}/{pg_database}"
    settings = Settings(database_url=plain)
    url = database_url(settings)
    assert url.startswith("postgresql+psycopg://")
    engine = make_engine(url)
    try:
        assert check_server(engine) >= 140000
        with engine.connect() as conn:
            assert conn.execute(text("select current_database()")).scalar_one() == pg_database
    finally:
        engine.dispose()


def test_bad_urls_give_one_clear_line() -> None:
    with pytest.raises(StoreError, match="must be a postgresql:// URL, not mysql://"):
        normalise_url("mysql://u@h/d")
    with pytest.raises(StoreError, match="not a valid URL"):
        normalise_url("::::")
    engine = make_engine(normalise_url("postgresql://someone:hunter2@127.0.0.1:1/nodb"))
    with pytest.raises(StoreError) as info:
        check_server(engine)
    msg = str(info.value)
    assert msg.startswith(
        "cannot reach PostgreSQL at postgresql+psycopg://someone:***@127.0.0.1:1/nodb"
    )
    assert "hunter2" not in msg
    assert "hunter2" not in redact("postgresql://someone:hunter2@h/d")
