"""``connwatch report``: write a report's PDF/CSV/JSON, send a subscription's report now,
run the schedule once, manage subscriptions as YAML and fetch archived reports.

    connwatch report --week 2026-W47 --pdf out.pdf --csv out.csv
    connwatch report send --subscription managers
    connwatch report run-due
    connwatch report subscriptions import subs.yaml [--prune] | export | list
    connwatch report archive list | get ID --pdf out.pdf --csv out.csv

Expected failures (a bad week, an unknown subscription, a file that cannot be written,
no Chromium) are one line on stderr and exit status 2.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy.engine import Engine

report_cli = typer.Typer(
    help="Manager reports: PDF/CSV files, sending, the schedule, subscriptions, the archive.",
    invoke_without_command=True,
    no_args_is_help=False,
)
subs_cli = typer.Typer(help="Report subscriptions as YAML.", no_args_is_help=True)
archive_cli = typer.Typer(help="Every sent report, kept.", no_args_is_help=True)
report_cli.add_typer(subs_cli, name="subscriptions")
report_cli.add_typer(archive_cli, name="archive")


def _fail(message: str) -> typer.Exit:
    typer.echo(f"connwatch: error: {message}", err=True)
    return typer.Exit(2)


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise _fail(f"cannot write {path}: {exc.strerror}") from None


def _base_url() -> str:
    from app.cli.main import load_settings
    from app.notify.deliver import public_url

    return public_url(load_settings())


def _browser() -> str | None:
    from app.cli.main import load_settings

    chromium = load_settings().report_chromium
    return str(chromium) if chromium else None


def _engine() -> Engine:
    from app.cli.main import load_settings, open_store

    return open_store(load_settings())


WeekOpt = Annotated[
    str | None,
    typer.Option("--week", help="2026-W47, 2026-03, current, last, current-month, last-month."),
]


@report_cli.callback()
def report(
    ctx: typer.Context,
    week: WeekOpt = None,
    pdf: Annotated[Path | None, typer.Option("--pdf", help="Write the PDF here.")] = None,
    csv: Annotated[Path | None, typer.Option("--csv", help="Write the table as CSV here.")] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write the whole report as JSON here.")
    ] = None,
    targets: Annotated[str | None, typer.Option(help="Target name patterns, a,b*.")] = None,
    labels: Annotated[str | None, typer.Option(help="Labels the targets carry, k=v,...")] = None,
    paper: Annotated[str, typer.Option(help="A4 or Letter.")] = "A4",
) -> None:
    """Write one report's files (default: print its summary)."""
    if ctx.invoked_subcommand is not None:
        return
    from app.reports.content.build import build_report
    from app.reports.content.period import PeriodError, parse_period
    from app.reports.content.scope import Selection
    from app.reports.render.html import PAPERS, render_document
    from app.reports.render.pdf import PdfError, html_to_pdf
    from app.reports.render.table import to_csv
    from app.reports.render.view import make_view

    if paper.lower() not in PAPERS:
        raise _fail(f"--paper: {paper!r} is not A4 or Letter")
    now = datetime.now(UTC)
    try:
        period = parse_period(week, now)
        selection = Selection.parse(targets, labels)
    except PeriodError as exc:
        raise _fail(str(exc).replace("week:", "--week:", 1)) from None
    except ValueError as exc:
        raise _fail(f"--labels: {exc}") from None
    engine = _engine()
    try:
        with engine.connect() as conn:
            rep = build_report(conn, period, selection, now=now)
    finally:
        engine.dispose()
    if pdf is not None:
        view = make_view(rep, base_url=_base_url())
        try:
            data = html_to_pdf(render_document(view, PAPERS[paper.lower()]), browser=_browser())
        except PdfError as exc:
            raise _fail(str(exc)) from None
        _write(pdf, data)
    if csv is not None:
        _write(csv, to_csv(rep).encode())
    if json_out is not None:
        _write(json_out, rep.model_dump_json(indent=2).encode())
    typer.echo(f"report {rep.week}{'' if rep.complete else ' (so far)'}, {rep.selection}:")
    for line in rep.summary:
        typer.echo(f"  {line}")
    for path in (pdf, csv, json_out):
        if path is not None:
            typer.echo(f"wrote {path}")


@report_cli.command("send")
def send(
    subscription: Annotated[str, typer.Option("--subscription", help="Its name.")],
    week: WeekOpt = None,
) -> None:
    """Send a subscription's report now (default: the period its schedule would send)."""
    from app.reports.content.period import PeriodError, parse_period
    from app.reports.delivery.schedule import period_due
    from app.reports.delivery.send import deliver
    from app.reports.delivery.subscriptions import get_subscription
    from app.reports.render.pdf import PdfError

    now = datetime.now(UTC)
    engine = _engine()
    try:
        with engine.begin() as conn:
            sub = get_subscription(conn, subscription)
            if sub is None:
                raise _fail(f"--subscription: no subscription named {subscription!r}")
            try:
                period = parse_period(week, now) or period_due(sub.spec, now)
            except PeriodError as exc:
                raise _fail(str(exc).replace("week:", "--week:", 1)) from None
            try:
                d = deliver(
                    conn, sub, period, now=now, trigger="cli", due_at=None, late=False,
                    base_url=_base_url(), browser=_browser(),
                )  # fmt: skip
            except PdfError as exc:
                raise _fail(str(exc)) from None
    finally:
        engine.dispose()
    typer.echo(
        f"queued {d.subject!r} to {', '.join(sub.spec.recipients)} "
        f"(archive #{d.archive_id}, outbox #{d.outbox_id})"
    )


@report_cli.command("run-due")
def run_due_cmd() -> None:
    """Send every scheduled report that is due and not sent yet (safe in many processes)."""
    from app.reports.delivery.schedule import run_due

    engine = _engine()
    try:
        results = run_due(engine, base_url=_base_url(), browser=_browser())
    finally:
        engine.dispose()
    for r in results:
        typer.echo(f"{r.subscription}: due {r.due_at:%Y-%m-%d %H:%M} UTC: {r.outcome}"
                   + (f" ({r.detail})" if r.detail else ""))  # fmt: skip
    if any(r.outcome == "failed" for r in results):
        raise typer.Exit(1)


@subs_cli.command("import")
def subs_import(
    file: Annotated[Path, typer.Argument(help="YAML with a 'subscriptions' list.")],
    prune: Annotated[bool, typer.Option(help="Also remove subscriptions not in FILE.")] = False,
) -> None:
    """Create or update subscriptions from YAML (all or nothing)."""
    from app.reports.delivery.subscriptions import SubscriptionError, import_yaml

    engine = _engine()
    try:
        with engine.begin() as conn:
            created, updated, removed = import_yaml(conn, file, prune=prune)
    except SubscriptionError as exc:
        for line in exc.errors:
            typer.echo(f"connwatch: error: {line}", err=True)
        raise typer.Exit(2) from None
    finally:
        engine.dispose()
    typer.echo(f"{file}: {created} created, {updated} updated, {removed} removed")


@subs_cli.command("export")
def subs_export() -> None:
    """Print every subscription as YAML that 'import' reads back."""
    from app.reports.delivery.subscriptions import dump_yaml, list_subscriptions

    engine = _engine()
    try:
        with engine.connect() as conn:
            typer.echo(dump_yaml(list_subscriptions(conn)), nl=False)
    finally:
        engine.dispose()


@subs_cli.command("list")
def subs_list() -> None:
    """List subscriptions with their schedule and recipients."""
    from app.reports.delivery.subscriptions import list_subscriptions

    engine = _engine()
    try:
        with engine.connect() as conn:
            subs = list_subscriptions(conn)
    finally:
        engine.dispose()
    if not subs:
        typer.echo("no subscriptions (see 'connwatch report subscriptions import')")
    for s in subs:
        flag = "" if s.spec.enabled else " (disabled)"
        who = ", ".join(s.spec.recipients)
        what = s.spec.selection().describe()
        typer.echo(f"{s.name:<24} {s.spec.schedule.describe():<40} {what:<24} {who}{flag}")


@archive_cli.command("list")
def archive_list(
    subscription: Annotated[str | None, typer.Option(help="Only this subscription's.")] = None,
) -> None:
    """List sent reports, newest first."""
    from app.reports.delivery.archive import list_archive

    engine = _engine()
    try:
        with engine.connect() as conn:
            rows = list_archive(conn, subscription=subscription)
    finally:
        engine.dispose()
    for a in rows:
        late = " late" if a.late else ""
        typer.echo(f"#{a.id:<5} {a.created_at:%Y-%m-%d %H:%M} UTC  {a.subscription:<20} "
                   f"{a.period:<9} {a.trigger}{late}  {', '.join(a.recipients)}")  # fmt: skip


@archive_cli.command("get")
def archive_get(
    archive_id: Annotated[int, typer.Argument(help="The archive number (#).")],
    pdf: Annotated[Path | None, typer.Option("--pdf")] = None,
    csv: Annotated[Path | None, typer.Option("--csv")] = None,
) -> None:
    """Write an archived report's PDF and/or CSV as it was sent."""
    from app.reports.delivery.archive import fetch_file

    engine = _engine()
    try:
        with engine.connect() as conn:
            for kind, path in (("pdf", pdf), ("csv", csv)):
                if path is None:
                    continue
                got = fetch_file(conn, archive_id, kind)
                if got is None:
                    raise _fail(f"no archived report #{archive_id}")
                _write(path, got[1])
                typer.echo(f"wrote {path}")
    finally:
        engine.dispose()
