"""``connwatch demo``: the whole product on one machine with no external services.

1. the embedded PostgreSQL store (``<data_dir>/pg``), migrated;
2. two simulated Oracle databases (the built-in Oracle Net simulator, latency
   model on): ``sales`` and ``hr``, each offering dedicated, shared and pooled;
3. a local PostgreSQL target (``<data_dir>/demo-pg``: TCP and unix socket) and,
   when Debian's pgbouncer is installed, pgbouncer in session and transaction mode;
4. demo targets for all of them (imported like any targets file; upserted by name);
5. optionally a year of synthetic history for those targets' series (``--history``:
   :func:`load_history`; samples marked ``agent = 'synthetic'``);
6. the agent and the dashboard in this process, until Ctrl-C, then everything stops.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from sqlalchemy.engine import Engine

from app.config import Settings
from app.demo import oracle_depth
from app.demo.history import (  # noqa: F401  (re-exported for callers of run)
    HISTORY_DAYS,
    HISTORY_RAW_DAYS,
    history_series,
    load_history,
    load_history_in_background,
)
from app.secrets import Vault
from app.targets.policy import WritePolicy
from app.targets.schema import TargetsFile, parse_targets
from app.targets.sync import dump_yaml, import_targets

log = logging.getLogger(__name__)

DEMO_USER, DEMO_PASSWORD = "scott", "tiger"


@dataclass
class DemoOracle:
    name: str
    instance: str
    preferred_port: int
    port: int = 0
    instances: tuple[str, ...] = ()  # more than one: a RAC database (app.demo.oracle_depth)
    tls_port: int = 0
    ca_file: Path | None = None


@dataclass
class DemoPostgres:
    port: int
    socket_dir: str
    user: str
    bouncers: dict[str, int]


def _port_or_free(preferred: int) -> int:
    """``preferred`` if it can be bound (SO_REUSEADDR, as servers bind: a port left in
    TIME_WAIT by a demo stopped a moment ago is free), else a free port."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
            return port


def check_nothing_running(settings: Settings, host: str | None, port: int | None) -> None:
    """Before anything starts: the dashboard's port is free and no other demo runs on this
    data directory, so a second ``connwatch demo`` fails at once and changes nothing."""
    from app.cli.errors import CliError
    from app.cli.main import check_port_free
    from app.demo.pgcluster import PgCluster, PgClusterError

    check_port_free(host or settings.host, port or settings.port)
    try:
        pid = PgCluster(settings.data_dir / "demo-pg").running_pid()
    except PgClusterError:
        pid = None
    if pid is not None:
        raise CliError(
            f"another connwatch demo is running on {settings.data_dir} (its local PostgreSQL "
            f"is pid {pid}): stop it, or set CONNWATCH_DATA_DIR; nothing was started"
        )


def demo_document(oracles: list[DemoOracle], pg: DemoPostgres | None) -> dict[str, Any]:
    """The demo's targets file (a plain targets document)."""
    docs: list[dict[str, Any]] = []
    for db in oracles:
        docs.append(
            {
                "name": f"{db.name}-sim",
                "kind": "oracle",
                "description": f"simulated Oracle database {db.instance} (connwatch simulate)",
                "dsn": f"127.0.0.1:{db.port}/FREEPDB1",
                "username": DEMO_USER,
                "password": DEMO_PASSWORD,
                "labels": {"demo": "true"},
                "modes": [
                    {
                        "name": "dedicated",
                        "probes": [
                            {"probe": "connping", "interval": "5s", "timeout": "4s"},
                            {"probe": "sessionping", "interval": "2s", "timeout": "1s"},
                            {"probe": "commit", "interval": "30s", "timeout": "5s"},
                        ],
                    },
                    {"name": "shared", "probes": [{"probe": "connping", "interval": "5s"}]},
                    {
                        "name": "pooled",
                        "params": {"cclass": "CONNWATCH", "purity": "self"},
                        "probes": [
                            {"probe": "connping", "interval": "5s", "timeout": "4s"},
                            {
                                "probe": "poolacquire",
                                "interval": "15s",
                                "timeout": "5s",
                                "params": {"validation": "foreground"},
                            },
                        ],
                    },
                ],
            }
        )
        oracle_depth.deepen(docs[-1]["modes"])
        docs[-1]["modes"] += oracle_depth.extra_modes(db.tls_port, db.ca_file)
    if pg is not None:
        modes: list[dict[str, Any]] = [
            {"name": "direct", "probes": [{"probe": "connping", "interval": "5s"}]},
            {
                "name": "unix",
                "transport": "unix",
                "params": {"host": pg.socket_dir},
                "probes": [{"probe": "connping", "interval": "5s"}],
            },
        ]
        for pool_mode, port in pg.bouncers.items():
            modes.append(
                {
                    "name": f"pgbouncer_{pool_mode}",
                    "params": {"host": "127.0.0.1", "port": port},
                    "probes": [{"probe": "connping", "interval": "5s"}],
                }
            )
        docs.append(
            {
                "name": "local-pg",
                "kind": "postgres",
                "description": "the demo's local PostgreSQL",
                "dsn": f"127.0.0.1:{pg.port}/postgres",
                "username": pg.user,
                "labels": {"demo": "true"},
                "modes": modes,
            }
        )
    return {"targets": docs}


@contextlib.contextmanager
def _simulators(oracles: list[DemoOracle], data_dir: Path) -> Iterator[None]:
    from app.oraclesim import SimConfig
    from app.oraclesim.tooling.runner import SimulatorThread

    threads = []
    try:
        for db in oracles:
            cfg = SimConfig.default()
            cfg.instance_name = db.instance
            cfg.db_name = db.name.upper()
            cfg.server_host = f"{db.name}-db01"
            db.ca_file = oracle_depth.configure(cfg, db.name, db.instances, data_dir)
            port = _port_or_free(db.preferred_port)
            sim = SimulatorThread(cfg, port=port).start()
            threads.append(sim)
            db.port, db.tls_port = sim.port, sim.tls_port
            moved = "" if db.port == db.preferred_port else f" ({db.preferred_port} is in use)"
            typer.echo(f"  simulated Oracle '{db.name}' on 127.0.0.1:{db.port} (FREEPDB1){moved}")
            if len(db.instances) > 1:
                tcps = f", tcps on 127.0.0.1:{db.tls_port}" if db.tls_port else ""
                typer.echo(f"    instances {', '.join(db.instances)} behind one listener{tcps}")
        yield
    finally:
        for sim in threads:
            with contextlib.suppress(Exception):
                sim.stop()


@contextlib.contextmanager
def _local_postgres(data_dir: Path) -> Iterator[DemoPostgres | None]:
    from app.demo.pgbouncer import PgBouncer, PgBouncerError, find_pgbouncer
    from app.demo.pgcluster import PgCluster, PgClusterError

    base = data_dir / "demo-pg"
    try:
        cluster = PgCluster(base)
        cluster.init()
        cluster.start()
    except (PgClusterError, OSError) as exc:
        typer.echo(f"  local PostgreSQL target skipped: {exc}", err=True)
        yield None
        return
    bouncers: list[PgBouncer] = []
    try:
        typer.echo(f"  local PostgreSQL on 127.0.0.1:{cluster.port} and {cluster.socket_dir}")
        if find_pgbouncer():
            for pool_mode in ("session", "transaction"):
                b = PgBouncer(base / "pgbouncer", pool_mode, "127.0.0.1", cluster.port, "postgres")
                try:
                    b.start()
                    bouncers.append(b)
                    typer.echo(f"  pgbouncer ({pool_mode} pooling) on 127.0.0.1:{b.port}")
                except (PgBouncerError, OSError) as exc:
                    typer.echo(f"  pgbouncer ({pool_mode}) skipped: {exc}", err=True)
        else:
            typer.echo("  pgbouncer not installed: its modes are left out")
        yield DemoPostgres(
            cluster.port,
            str(cluster.socket_dir),
            cluster.user,
            {b.pool_mode: b.port for b in bouncers},
        )
    finally:
        for b in bouncers:
            b.stop()
        cluster.stop()


def load_demo_targets(engine: Engine, settings: Settings, doc: TargetsFile) -> None:
    vault = Vault.from_settings(settings)
    with engine.begin() as conn:
        import_targets(conn, doc, vault, policy=WritePolicy.from_settings(settings))


def run(settings: Settings, *, host: str | None, port: int | None, history: bool) -> None:
    from app.cli.main import _run_web, open_store
    from app.demo.access import demo_settings, ensure_admin

    check_nothing_running(settings, host, port)
    typer.echo("connwatch demo: starting")
    settings = demo_settings(settings)
    engine = open_store(settings, migrate_to_head=True)
    oracles = [
        DemoOracle("sales", "SALES1", 1521, instances=("SALES1", "SALES2")),
        DemoOracle("hr", "HR1", 1522),
    ]
    with _simulators(oracles, settings.data_dir), _local_postgres(settings.data_dir) as pg:
        raw = demo_document(oracles, pg)
        doc = parse_targets(dump_yaml(raw), "<demo targets>")
        load_demo_targets(engine, settings, doc)
        typer.echo(f"  {len(doc.targets)} demo targets loaded")
        if history:  # behind the dashboard: it starts now, the history loads meanwhile
            load_history_in_background(engine, settings)
        ensure_admin(engine, f"http://{host or settings.host}:{port or settings.port}/")
        _run_web(settings, host, port, with_agent=True)
