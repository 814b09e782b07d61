"""Where the store lives and how to reach it.

With ``CONNWATCH_DATABASE_URL`` unset, connwatch runs its own PostgreSQL 16 (the
``pgserver`` wheel) inside ``<data_dir>/pg``, reachable only through a unix
socket, and stops it when the last connwatch process using it exits. With a URL,
any PostgreSQL >= 14 is used as it is.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from app.config import Settings, get_settings

MIN_SERVER_VERSION = 140000
EMBEDDED_DB = "connwatch"

_lock = threading.Lock()
_embedded_handles: dict[Path, Any] = {}


class StoreError(RuntimeError):
    """The store cannot be reached or is unusable; the message says why and where."""


def normalise_url(raw: str) -> str:
    """Accept ``postgresql://`` / ``postgres://`` URLs and use the psycopg 3 driver."""
    try:
        url = make_url(raw)
    except ArgumentError as exc:
        raise StoreError(f"CONNWATCH_DATABASE_URL is not a valid URL: {exc}") from None
    if url.get_backend_name() != "postgresql":
        raise StoreError(
            f"CONNWATCH_DATABASE_URL must be a postgresql:// URL, not {url.drivername}://"
        )
    return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def redact(url: str) -> str:
    """The URL with its password hidden, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable URL>"


def start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded PostgreSQL in ``data_dir/pg``; return its SQLAlchemy URL."""
    pgdata = (data_dir / "pg").resolve()
    with _lock:
        server = _embedded_handles.get(pgdata)
        if server is None:
            try:
                pgdata.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create data directory {pgdata}: {exc.strerror}") from None
            with warnings.catch_warnings():
                # platformdirs warns that XDG_RUNTIME_DIR is unset (services, containers)
                warnings.simplefilter("ignore")
                import pgserver  # type: ignore[attr-defined,unused-ignore]

            try:
                server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
            except Exception as exc:  # pgserver raises assorted errors; report them plainly
                raise StoreError(
                    f"could not start the embedded PostgreSQL in {pgdata}: {exc}; "
                    f"see {pgdata / 'log'}"
                ) from None
            _embedded_handles[pgdata] = server
    uri: str = server.get_uri()  # postgresql://postgres:@/postgres?host=<socket dir>
    base = make_url(uri)
    admin = base.set(drivername="postgresql+psycopg")
    _create_database_if_missing(admin, EMBEDDED_DB)
    return admin.set(database=EMBEDDED_DB).render_as_string(hide_password=False)


def stop_embedded() -> None:
    """Release this process's handles on embedded servers (the last one stops the server)."""
    with _lock:
        for server in _embedded_handles.values():
            server.cleanup()
        _embedded_handles.clear()


def _create_database_if_missing(admin: URL, name: str) -> None:
    engine = create_engine(admin, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            exists = conn.execute(
                text("select 1 from pg_database where datname = :n"), {"n": name}
            ).first()
            if not exists:
                conn.execute(text(f'create database "{name}"'))
    finally:
        engine.dispose()


def database_url(settings: Settings | None = None) -> str:
    """The SQLAlchemy URL of the store, starting the embedded server when needed."""
    settings = settings or get_settings()
    if settings.database_url is None:
        return start_embedded(settings.data_dir)
    return normalise_url(settings.database_url.get_secret_value())


def make_engine(url: str, **kwargs: Any) -> Engine:
    kwargs.setdefault("pool_pre_ping", True)
    # a web process runs up to app.web.app.WEB_THREADS requests at once: a pool smaller
    # than that opened and closed a PostgreSQL session for ~1 request in 10 under load
    kwargs.setdefault("pool_size", 16)
    kwargs.setdefault("max_overflow", 10)
    # JIT compilation costs more than it saves on the dashboard's short queries
    kwargs.setdefault("connect_args", {"connect_timeout": 5, "options": "-c jit=off"})
    return create_engine(url, **kwargs)


def check_server(engine: Engine) -> int:
    """Connect once and check the server version; return ``server_version_num``."""
    try:
        with engine.connect() as conn:
            version = int(conn.execute(text("show server_version_num")).scalar_one())
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StoreError(
            f"cannot reach PostgreSQL at {redact(str(engine.url))}: {reason}"
        ) from None
    if version < MIN_SERVER_VERSION:
        raise StoreError(
            f"PostgreSQL at {redact(str(engine.url))} is version {version // 10000}; "
            "connwatch needs 14 or newer"
        )
    return version
