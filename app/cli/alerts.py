"""``connwatch alerts ...`` and ``connwatch annotate``: alerting as code and from a shell.

Every command prints one line per problem and exits 2 on bad input, changing nothing.
"""

from __future__ import annotations

import getpass
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer

from app.cli.errors import CliError
from app.cli.main import load_settings, open_store

alerts_cli = typer.Typer(
    help="Alerting: rules, contact points, SLOs, silences and maintenance windows as code; "
    "status, acknowledgements, backtests, test messages.",
    no_args_is_help=True,
)


def _author(given: str | None) -> str:
    if given:
        return given
    try:
        return getpass.getuser()
    except Exception:
        return "cli"


def _duration(text: str) -> timedelta:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*", text)
    if not m:
        raise CliError(f"--for: {text!r} is not a duration such as 30m, 2h or 1d")
    return timedelta(
        seconds=float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    )


def _when(text: str | None, what: str) -> datetime | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CliError(f"{what}: {text!r} is not an ISO 8601 time (2026-11-22T14:05:00Z)") from None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@alerts_cli.command("import")
def alerts_import(
    file: Annotated[Path, typer.Argument(help="YAML with rules, contact_points, slos, ...")],
    prune: Annotated[
        bool, typer.Option("--prune", help="Also delete what FILE does not name.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate only.")] = False,
) -> None:
    """Create or update alerting objects from a YAML file (all or nothing)."""
    from app.alerts.ascode import import_alerts, load_alerts_file
    from app.secrets import Vault

    doc = load_alerts_file(file)
    n = sum(
        len(getattr(doc, k))
        for k in ("rules", "contact_points", "slos", "maintenance_windows", "silences")
    )
    settings = load_settings()
    engine = open_store(settings, migrate_to_head=not dry_run)
    try:
        with engine.begin() as conn:
            if dry_run:
                from app.alerts.ascode import check_references

                check_references(conn, doc, str(file))
                typer.echo(f"{file}: {n} entries, valid")
                return
            res = import_alerts(
                conn,
                doc,
                Vault.from_settings(settings),
                source=str(file),
                prune=prune,
                author=_author(None),
            )
    finally:
        engine.dispose()
    typer.echo(f"{file}: {res.created} created, {res.updated} updated, {res.removed} removed")


@alerts_cli.command("export")
def alerts_export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here, not stdout.")
    ] = None,
    no_secrets: Annotated[
        bool, typer.Option("--no-secrets", help="Leave out secret tokens and references.")
    ] = False,
) -> None:
    """Print every alerting object as YAML that 'alerts import' reads back."""
    from app.alerts.ascode import dump_yaml, export_alerts

    engine = open_store(load_settings())
    with engine.connect() as conn:
        out = dump_yaml(export_alerts(conn, include_secrets=not no_secrets, now=datetime.now(UTC)))
    engine.dispose()
    if output is None:
        typer.echo(out, nl=False)
        return
    try:
        output.write_text(out)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror}") from None


@alerts_cli.command("status")
def alerts_status(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON document.")] = False,
) -> None:
    """Alerts that are not normal: firing, pending, no data, error, recently resolved."""
    from app.alerts.queries import current_alerts

    engine = open_store(load_settings())
    with engine.connect() as conn:
        rows = current_alerts(conn, datetime.now(UTC))
    engine.dispose()
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in rows], indent=2, default=str))
        return
    if not rows:
        typer.echo("no alerts: every rule is normal")
        return
    for r in rows:
        flags = "".join(
            f" [{f}]"
            for f, on in (
                ("silenced", r.silenced),
                ("maintenance", r.in_maintenance),
                ("acked by " + (r.ack_by or ""), r.ack_by is not None),
            )
            if on
        )
        typer.echo(
            f"{r.state.upper():<9} {r.severity:<6} {r.rule:<28} {r.where:<40} {r.summary}{flags}"
        )


@alerts_cli.command("list")
def alerts_list() -> None:
    """Rules with their kind, condition and contact points."""
    from app.alerts.rules import list_rules

    engine = open_store(load_settings())
    with engine.connect() as conn:
        rules = list_rules(conn)
    engine.dispose()
    if not rules:
        typer.echo("no rules (see 'connwatch alerts import')")
    for r in rules:
        s = r.spec
        off = "" if s.enabled else " (disabled)"
        typer.echo(
            f"{s.name:<28} {s.kind:<13} {s.severity:<6} {s.condition_text()}"
            f" -> {', '.join(s.contact_points) or 'no contact point'}{off}"
        )


@alerts_cli.command("backtest")
def alerts_backtest(
    name: Annotated[str, typer.Argument(help="A stored rule, or a rule in --file.")],
    file: Annotated[
        Path | None, typer.Option("--file", help="Take the rule from this YAML.")
    ] = None,
    days: Annotated[int, typer.Option("--days", min=1, max=35, help="How far back.")] = 7,
) -> None:
    """What a rule would have done over the last days (firings and minutes)."""
    from app.alerts.backtest import backtest
    from app.alerts.rules import get_rule

    spec = None
    if file is not None:
        from app.alerts.ascode import load_alerts_file

        spec = next((r for r in load_alerts_file(file).rules if r.name == name), None)
    engine = open_store(load_settings())
    with engine.connect() as conn:
        if spec is None:
            rule = get_rule(conn, name)
            if rule is None:
                raise CliError(f"no rule named {name!r}" + (f" in {file}" if file else ""))
            spec = rule.spec
        res = backtest(conn, spec, datetime.now(UTC), days=days)
    engine.dispose()
    typer.echo(res.sentence())
    for e in res.episodes[:20]:
        end = f"{e.end:%Y-%m-%d %H:%M}" if e.end else "still firing"
        typer.echo(f"  {e.start:%Y-%m-%d %H:%M} -> {end} UTC  {json.dumps(e.labels)}")


@alerts_cli.command("silence")
def alerts_silence(
    comment: Annotated[str, typer.Option("--comment", help="Why (required).")],
    duration: Annotated[str, typer.Option("--for", help="How long: 30m, 2h, 1d.")] = "1h",
    rule: Annotated[
        list[str] | None, typer.Option("--rule", help="Rule name pattern (repeatable).")
    ] = None,
    target: Annotated[
        list[str] | None, typer.Option("--target", help="Target pattern (repeatable).")
    ] = None,
    mode: Annotated[
        list[str] | None, typer.Option("--mode", help="Mode kind or name (repeatable).")
    ] = None,
    start: Annotated[
        str | None, typer.Option("--start", help="ISO 8601 start (default now).")
    ] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="Who (default: your login).")
    ] = None,
) -> None:
    """Silence matching alerts for a while (they are still evaluated and recorded)."""
    from pydantic import ValidationError

    from app.alerts.mute.silences import SilenceSpec, create_silence
    from app.targets.selector import Selector

    begins = _when(start, "--start") or datetime.now(UTC)
    try:
        spec = SilenceSpec(
            rules=rule or [],
            selector=Selector(targets=target or [], modes=mode or []),
            starts_at=begins,
            ends_at=begins + _duration(duration),
            author=_author(author),
            comment=comment,
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise CliError(f"silence: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    engine = open_store(load_settings())
    with engine.begin() as conn:
        sid = create_silence(conn, spec)
    engine.dispose()
    typer.echo(
        f"silence {sid}: {spec.selector.describe()}, rules {', '.join(spec.rules) or 'all'}, "
        f"until {spec.ends_at:%Y-%m-%d %H:%M} UTC"
    )


@alerts_cli.command("ack")
def alerts_ack(
    rule: Annotated[str, typer.Argument(help="Rule name.")],
    fingerprint: Annotated[
        str, typer.Argument(help="The alert's labels as 'alerts status --json' shows them.")
    ],
    comment: Annotated[str, typer.Option("--comment", help="Why (required).")],
    until: Annotated[
        str | None, typer.Option("--until", help="ISO 8601 end (default: until resolved).")
    ] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="Who (default: your login).")
    ] = None,
) -> None:
    """Acknowledge a firing alert: no repeats until it resolves (or --until)."""
    from app.alerts.mute.acks import AckError, acknowledge

    engine = open_store(load_settings())
    try:
        with engine.begin() as conn:
            acknowledge(
                conn,
                rule=rule,
                fingerprint=fingerprint,
                by=_author(author),
                comment=comment,
                until=_when(until, "--until"),
            )
    except AckError as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(f"acknowledged {rule} {{{fingerprint}}}")


@alerts_cli.command("test-contact")
def alerts_test_contact(name: Annotated[str, typer.Argument(help="Contact point name.")]) -> None:
    """Send a test message to a contact point now and say what its receiver answered."""
    from app.notify.deliver import Deliverer
    from app.notify.testmessage import enqueue_test

    settings = load_settings()
    engine = open_store(settings)
    try:
        with engine.begin() as conn:
            mid = enqueue_test(conn, name, author=_author(None))
        d = Deliverer(engine, settings)
        done = d.run_once(only_id=mid)
        d.close()
        with engine.connect() as conn:
            from app.notify.outbox import get_status

            status = get_status(conn, mid)
    except LookupError as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    state, error = status or ("?", None)
    if not done or state != "delivered":
        raise CliError(f"contact point {name}: test message not delivered: {error or state}")
    typer.echo(f"contact point {name}: test message delivered")


@alerts_cli.command("run")
def alerts_run() -> None:
    """Run only the alert evaluator and delivery (one of all processes evaluates)."""
    import signal
    import threading

    from app.alerts.service import AlertService

    settings = load_settings()
    engine = open_store(settings, migrate_to_head=True)
    service = AlertService(engine, settings)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    service.start()
    typer.echo(f"connwatch alerts: evaluating as {service.lease.holder} when holding the lease")
    stop.wait()
    service.stop()


def annotate(
    message: Annotated[str, typer.Argument(help="What happened, e.g. 'DRCP pool resized'.")],
    target: Annotated[
        str | None, typer.Option("--target", help="One target (default: all).")
    ] = None,
    at: Annotated[str | None, typer.Option("--at", help="ISO 8601 time (default now).")] = None,
    end: Annotated[str | None, typer.Option("--end", help="ISO 8601 end of a span.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    author: Annotated[
        str | None, typer.Option("--author", help="Who (default: your login).")
    ] = None,
) -> None:
    """Record an event on the charts (deploys, restarts, pool resizes)."""
    from pydantic import ValidationError

    from app.alerts.annotations import AnnotationError, AnnotationSpec, add_annotation

    try:
        spec = AnnotationSpec(
            text=message,
            target=target,
            at=_when(at, "--at"),
            ends_at=_when(end, "--end"),
            tags=tag or [],
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        raise CliError(f"annotation: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    engine = open_store(load_settings())
    try:
        with engine.begin() as conn:
            aid = add_annotation(
                conn, spec, author=_author(author), source="cli", now=datetime.now(UTC)
            )
    except AnnotationError as exc:
        raise CliError(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(f"annotation {aid} recorded for {target or 'every target'}")
