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
from typing import TYPE_CHECKING, Any

import typer
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings
from app.credentials import Vault
from app.targets.schema import TargetsFile, parse_targets
from app.targets.sync import dump_yaml, import_targets

if TYPE_CHECKING:
    from app.store.write.synthetic import HistorySeries

log = logging.getLogger(__name__)

DEMO_USER, DEMO_PASSWORD = "scott", "tiger"


@dataclass
class DemoOracle:
    name: str
    instance: str
    preferred_port: int
    port: int = 0


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
def _simulators(oracles: list[DemoOracle]) -> Iterator[None]:
    from app.oraclesim import SimConfig
    from app.oraclesim.tooling.runner import SimulatorThread

    threads = []
    try:
        for db in oracles:
            cfg = SimConfig.default()
            cfg.instance_name = db.instance
            cfg.db_name = db.name.upper()
            cfg.server_host = f"{db.name}-db01"
            port = _port_or_free(db.preferred_port)
            sim = SimulatorThread(cfg, port=port).start()
            threads.append(sim)
            db.port = sim.port
            moved = "" if db.port == db.preferred_port else f" ({db.preferred_port} is in use)"
            typer.echo(f"  simulated Oracle '{db.name}' on 127.0.0.1:{db.port} (FREEPDB1){moved}")
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
        import_targets(conn, doc, vault)


# raw samples at each series' own interval for this many days; hour/day rollups for the year
HISTORY_RAW_DAYS = 7
HISTORY_DAYS = 365
# synthetic history only: more instances than the simulator has, so the instance
# breakdown of ``sales`` shows two lines (a two-node RAC's worth)
HISTORY_INSTANCES = {"sales-sim": ("SALES1", "SALES2")}
_HISTORY_FACTOR = {"sales-sim": 1.0, "hr-sim": 1.12}


def history_series(engine: Engine) -> list[HistorySeries]:
    """The enabled series of the demo's targets, described for the history generator."""
    from app.agent.scheduling.phase import phase_offset_ms
    from app.store.write.synthetic import HistorySeries

    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select s.id, s.probe, s.interval_ms, s.site, m.kind as mode, m.params, "
                "t.name, t.kind, t.dsn from series s join modes m on m.id = s.mode_id "
                "join targets t on t.id = m.target_id where s.enabled and m.enabled "
                "and t.enabled and t.labels ->> 'demo' = 'true' order by s.id"
            )
        ).all()
    out: list[HistorySeries] = []
    for r in rows:
        address, _, service = str(r.dsn).partition("/")
        if r.kind == "oracle":
            instances = HISTORY_INSTANCES.get(r.name, (f"{r.name.removesuffix('-sim')}1".upper(),))
        else:  # what app.drivers.postgres reports: host (or socket directory) and port
            host, _, port = address.rpartition(":")
            instances = (f"{r.params.get('host', host)}:{r.params.get('port', port)}",)
        out.append(
            HistorySeries(
                id=r.id,
                probe=r.probe,
                mode=r.mode,
                target_kind=r.kind,
                interval_ms=r.interval_ms,
                offset_ms=phase_offset_ms(r.id, r.interval_ms),
                factor=_HISTORY_FACTOR.get(r.name, 1.0),
                instances=instances,
                service=service.upper() if r.kind == "oracle" else service,
                site=r.site,
            )
        )
    return out


def load_history(
    engine: Engine,
    settings: Settings,
    *,
    raw_days: int = HISTORY_RAW_DAYS,
    days: int = HISTORY_DAYS,
) -> None:
    """A year of synthetic history for every enabled demo series, ending just before
    its first live sample (or now); then the closed raw days are compacted.

    Samples carry ``agent = 'synthetic'``. A series that already has older data is
    left alone, so a second ``demo --history`` adds nothing.
    """
    import time

    from app.store.write import synthetic
    from app.store.write.packed import compact_pending

    def say(msg: str) -> None:
        hint = " (about 2 minutes on 2 cores)" if msg.startswith("backfilling") else ""
        typer.echo(f"  synthetic history: {msg}{hint}")

    t0 = time.perf_counter()
    series = history_series(engine)
    rep = synthetic.backfill(engine, series, raw_days=raw_days, rollup_days=days, progress=say)
    if not rep.series_ids:
        typer.echo("  synthetic history already loaded")
        return
    say(f"compacting the closed days older than {settings.compact_after_days} days")
    packed = compact_pending(engine, after_days=settings.compact_after_days, max_days=raw_days)
    typer.echo(
        f"  synthetic history: {rep.raw_samples} raw samples (agent 'synthetic'), "
        f"{rep.rollup_rows} older rollup rows, {len(packed)} days packed, "
        f"{time.perf_counter() - t0:.0f} s in all"
    )


def run(settings: Settings, *, host: str | None, port: int | None, history: bool) -> None:
    from app.cli.main import _run_web, open_store

    check_nothing_running(settings, host, port)
    typer.echo("connwatch demo: starting")
    engine = open_store(settings, migrate_to_head=True)
    oracles = [DemoOracle("sales", "SALES1", 1521), DemoOracle("hr", "HR1", 1522)]
    with _simulators(oracles), _local_postgres(settings.data_dir) as pg:
        raw = demo_document(oracles, pg)
        doc = parse_targets(dump_yaml(raw), "<demo targets>")
        load_demo_targets(engine, settings, doc)
        typer.echo(f"  {len(doc.targets)} demo targets loaded")
        if history:
            load_history(engine, settings)
        engine.dispose()
        _run_web(settings, host, port, with_agent=True)
