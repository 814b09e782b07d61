"""The one command-line entry point: ``connwatch``.

Every command turns expected failures (bad configuration, unreachable store, bad
input files, a port in use) into one line on stderr and exit status 2, never a
traceback.
"""

from __future__ import annotations

import errno
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from sqlalchemy.engine import Engine

from app import __version__
from app.agent.output.wal import WalLocked
from app.cli import helpfmt
from app.cli.errors import CliError as CliError  # re-exported: commands import it from here
from app.config import Settings
from app.db import StoreError
from app.secrets import SecretError
from app.targets.schema import TargetsFileError

if __name__ == "__main__":  # `python -m app.cli.main`: one module object, so command modules that
    sys.modules.setdefault("app.cli.main", sys.modules[__name__])  # import it share CliError

helpfmt.install()

cli = typer.Typer(
    name="connwatch",
    help="Continuous logon / round-trip latency monitoring for Oracle "
    "(dedicated, shared, DRCP) and PostgreSQL.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
targets_cli = typer.Typer(help="Targets as code: import, export and list.", no_args_is_help=True)
cli.add_typer(targets_cli, name="targets")


def _error(message: str) -> None:
    typer.echo(f"connwatch: error: {message}", err=True)


def load_settings() -> Settings:
    try:
        settings = Settings()
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise CliError(
            f"setting CONNWATCH_{field.upper()}: {err['msg']} (got {err.get('input')!r})"
        ) from None
    from app.logs import setup_logging

    setup_logging(settings.log_level, settings.log_format)
    return settings


def open_store(settings: Settings, *, migrate_to_head: bool = False) -> Engine:
    """Engine on the store (starting the embedded one), checked, optionally migrated."""
    from app import migrate
    from app.db import check_server, database_url, make_engine

    engine = make_engine(database_url(settings))
    check_server(engine)
    if migrate_to_head:
        migrate.upgrade(engine)
    elif not migrate.is_at_head(engine):
        raise CliError("the store is not migrated to the current schema: run 'connwatch migrate'")
    return engine


def check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise CliError(
                    f"{host}:{port} is already in use (set CONNWATCH_PORT or --port)"
                ) from None
            raise CliError(f"cannot bind {host}:{port}: {exc.strerror}") from None


def warn_if_public(settings: Settings, host: str) -> None:
    if host in ("127.0.0.1", "localhost", "::1"):
        return
    if not settings.allowed_hosts:
        typer.echo(
            f"connwatch: warning: binding to {host}: only requests for localhost/127.0.0.1 "
            "are answered until CONNWATCH_ALLOWED_HOSTS names the host users type",
            err=True,
        )
    if settings.anonymous_role != "none":
        typer.echo(
            f"connwatch: note: anonymous {settings.anonymous_role} access applies only to "
            f"clients in {', '.join(settings.anonymous_networks)}",
            err=True,
        )


def say_if_no_admin(engine: Engine, settings: Settings) -> None:
    """One line on how to create the first admin, when there is none yet."""
    from app.auth import users

    with engine.connect() as conn:
        if users.count_admins(conn) > 0:
            return
    if settings.oidc_issuer or settings.proxy_user_header:
        return
    typer.echo(
        "connwatch: no admin account yet: create one with 'connwatch users add NAME --role admin'",
        err=True,
    )


# --------------------------------------------------------------------------- commands


@cli.command()
def version() -> None:
    """Print connwatch's version."""
    typer.echo(__version__)


@cli.command()
def migrate() -> None:
    """Create or upgrade the store's schema to the current version."""
    from app import migrate as migrations

    settings = load_settings()
    engine = open_store(settings, migrate_to_head=True)
    typer.echo(f"store at schema {migrations.current_revision(engine)} (head)")
    engine.dispose()


HostOpt = Annotated[str | None, typer.Option(help="Bind address (default CONNWATCH_HOST).")]
PortOpt = Annotated[int | None, typer.Option(help="Bind port (default CONNWATCH_PORT).")]


WebWorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=0,
        max=256,
        help="Web worker processes (default CONNWATCH_WEB_WORKERS; 0 = one per CPU core).",
    ),
]


def _run_web(
    settings: Settings,
    host: str | None,
    port: int | None,
    *,
    with_agent: bool,
    workers: int | None = None,
) -> None:
    from app.cli.webapp import cores, run_web

    host = host or settings.host
    port = port or settings.port
    warn_if_public(settings, host)
    check_port_free(host, port)
    engine = open_store(settings, migrate_to_head=True)
    say_if_no_admin(engine, settings)
    n = workers if workers is not None else settings.web_workers
    run_web(settings, engine, host, port, with_agent=with_agent, workers=n or cores())


@cli.command()
def serve(host: HostOpt = None, port: PortOpt = None, workers: WebWorkersOpt = None) -> None:
    """Run the web dashboard (N processes) and the probing agent (a process of its own)."""
    _run_web(load_settings(), host, port, with_agent=True, workers=workers)


@cli.command()
def web(host: HostOpt = None, port: PortOpt = None, workers: WebWorkersOpt = None) -> None:
    """Run only the web dashboard and API (agents run elsewhere)."""
    _run_web(load_settings(), host, port, with_agent=False, workers=workers)


WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=0,
        max=256,
        help="Worker processes (default CONNWATCH_AGENT_WORKERS; 0 = one per CPU core).",
    ),
]


@cli.command()
def agent(workers: WorkersOpt = None) -> None:
    """Run only the probing agent: schedule probes and write samples."""
    from app.agent import service

    settings = load_settings()
    if workers is not None:
        settings = settings.model_copy(update={"agent_workers": workers})
    engine = open_store(settings, migrate_to_head=True)
    alerting = None
    if settings.alerts_enabled:  # every process competes; one evaluates (app/alerts/lease.py)
        from app.alerts.service import AlertService

        alerting = AlertService(engine, settings)
        alerting.start()
    try:
        service.run_forever(engine, settings)
    finally:
        if alerting is not None:
            alerting.stop()


@cli.command()
def demo(
    host: HostOpt = None,
    port: PortOpt = None,
    history: Annotated[
        bool, typer.Option("--history", help="Also load a year of synthetic history.")
    ] = False,
) -> None:
    """Start everything locally: embedded PostgreSQL, simulated Oracle databases, agent, web."""
    from app.demo import run as demo_mod

    demo_mod.run(load_settings(), host=host, port=port, history=history)


from app.oraclesim.tooling.cli import simulate as _simulate  # noqa: E402

cli.command("simulate")(_simulate)


from app.probes.adhoc import commands as _probe_commands  # noqa: E402

# rwloadsim-style ad-hoc commands (options and output formats: app/probes/adhoc/commands.py)
cli.command("connping")(_probe_commands.connping)
cli.command("ociping")(_probe_commands.ociping)
cli.command("sweep")(_probe_commands.sweep)


@cli.command("import-connping")
def import_connping(
    file: Annotated[Path, typer.Argument(help="A connping --csvoutput file.")],
    target: Annotated[str, typer.Option("--target", help="Target name the run measured.")],
    mode: Annotated[str, typer.Option("--mode", help="Mode name within the target.")],
    site: Annotated[
        str | None, typer.Option("--site", help="Series site (default: the mode's only one).")
    ] = None,
    start: Annotated[
        datetime | None,
        typer.Option(
            "--start",
            formats=["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S"],
            help="Run start (UTC unless an offset is given): needed for TIME columns "
            "or files written with --no-timestamp.",
        ),
    ] = None,
    interval: Annotated[
        float | None, typer.Option("--interval", help="Run interval in seconds (--no-timestamp).")
    ] = None,
    utcformat: Annotated[
        str | None, typer.Option("--utcformat", help="Format the run used for UTCTIME.")
    ] = None,
) -> None:
    """Import a connping --csvoutput file as samples of a target and mode."""
    from app.cli.import_connping import ImportError_, import_connping_file

    if start is not None and start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    settings = load_settings()
    engine = open_store(settings)
    try:
        with engine.begin() as conn:
            res = import_connping_file(
                conn,
                file,
                target=target,
                mode=mode,
                site=site,
                start=start,
                interval_s=interval,
                utcformat=utcformat,
                keep_days=settings.retention_1h_days,
            )
    except ImportError_ as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(
        f"{file}: {res.read} samples read, {res.new} new, {res.read - res.new} already stored "
        f"(series {res.series_id})"
    )


def _register_alerting() -> None:
    """``connwatch alerts ...`` and ``connwatch annotate`` (app/cli/alerts.py)."""
    from app.cli.alerts import alerts_cli, annotate

    cli.add_typer(alerts_cli, name="alerts")
    cli.command("annotate")(annotate)


_register_alerting()
from app.cli.secrets import secrets_cli as _secrets_cli  # noqa: E402
from app.cli.tokens import tokens_cli as _tokens_cli  # noqa: E402
from app.cli.users import users_cli as _users_cli  # noqa: E402

cli.add_typer(_users_cli, name="users")
cli.add_typer(_tokens_cli, name="tokens")
cli.add_typer(_secrets_cli, name="secrets")


# --------------------------------------------------------------------------- targets


@targets_cli.command("import")
def targets_import(
    file: Annotated[Path, typer.Argument(help="YAML file with a 'targets' list.")],
    prune: Annotated[
        bool, typer.Option("--prune", help="Also delete targets, modes and probes not in FILE.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate only.")] = False,
) -> None:
    """Create or update targets from a YAML file (all or nothing)."""
    from app.secrets import Vault
    from app.targets.policy import WritePolicy
    from app.targets.schema import load_targets_file
    from app.targets.sync import import_targets

    doc = load_targets_file(file)
    if dry_run:
        typer.echo(f"{file}: {len(doc.targets)} targets, valid")
        return
    settings = load_settings()
    vault = Vault.from_settings(settings)
    engine = open_store(settings, migrate_to_head=True)
    with engine.begin() as conn:
        # the CLI runs on the store's host: an admin's rights, under the allow lists
        res = import_targets(
            conn, doc, vault, prune=prune, policy=WritePolicy.from_settings(settings)
        )
    engine.dispose()
    typer.echo(
        f"{file}: {res.created} created, {res.updated} updated, {res.unchanged} unchanged, "
        f"{res.removed} removed"
    )


@targets_cli.command("export")
def targets_export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    no_secrets: Annotated[
        bool, typer.Option("--no-secrets", help="Leave out password references and tokens.")
    ] = False,
) -> None:
    """Print every target as YAML that 'targets import' reads back."""
    from app.targets.sync import dump_yaml, export_targets

    settings = load_settings()
    engine = open_store(settings)
    with engine.connect() as conn:
        text_out = dump_yaml(export_targets(conn, include_secrets=not no_secrets))
    engine.dispose()
    if output is None:
        typer.echo(text_out, nl=False)
    else:
        try:
            output.write_text(text_out)
        except OSError as exc:
            raise CliError(f"cannot write {output}: {exc.strerror}") from None


@targets_cli.command("list")
def targets_list() -> None:
    """List targets, their modes and how many probe series each has."""
    from app.targets.sync import list_targets

    settings = load_settings()
    engine = open_store(settings)
    with engine.connect() as conn:
        rows = list(list_targets(conn))
    engine.dispose()
    if not rows:
        typer.echo("no targets (see 'connwatch targets import')")
        return
    header = ("NAME", "KIND", "MODES", "SERIES", "DSN")
    table = [
        (r.name, r.kind, r.modes, str(r.series), r.dsn + ("" if r.enabled else " (disabled)"))
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(4)]
    for row in [header, *table]:  # columns as wide as their longest cell: always aligned
        cells = [row[i].ljust(widths[i]) if i != 3 else row[i].rjust(widths[i]) for i in range(4)]
        typer.echo("  ".join([*cells, row[4]]).rstrip())


from app.cli.report import report_cli as _report_cli  # noqa: E402

cli.add_typer(_report_cli, name="report")


# --------------------------------------------------------------------------- entry point


def main() -> None:
    try:
        cli()  # standalone: click reports usage errors itself (exit 2)
    except (CliError, StoreError, SecretError, WalLocked) as exc:
        _error(str(exc))
        sys.exit(2)
    except TargetsFileError as exc:
        for line in exc.errors:
            _error(line)
        sys.exit(2)
    except ValueError as exc:  # an alerting file: one line per problem, exit 2
        from app.alerts.ascode import AlertsFileError

        if not isinstance(exc, AlertsFileError):
            raise
        for line in exc.errors:
            _error(line)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
