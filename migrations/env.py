"""Alembic environment: the URL comes from connwatch's Settings, never from alembic.ini.

A caller may pass a ready connection in ``config.attributes["connection"]`` (tests and
``connwatch migrate`` do), or a URL in ``config.attributes["url"]``; otherwise the URL is
resolved from Settings (which may start the embedded PostgreSQL).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import Connection

from app.models import metadata

config = context.config
target_metadata = metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    given = config.attributes.get("connection")
    if given is not None:
        _run(given)
        return
    url = config.attributes.get("url")
    if url is None:
        from app.db import database_url

        url = database_url()
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("connwatch migrations run online only (they create partitions)")
run_migrations_online()
