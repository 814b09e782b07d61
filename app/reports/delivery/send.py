"""Render one subscription's report and hand it to the outbox, archived in the same transaction.

The mail goes through ``app.notify`` (the one SMTP configuration and the one outbox in
PostgreSQL): :func:`deliver` inserts the archive row and queues the e-mail in the
caller's transaction, so a report is archived exactly when its mail is queued, and the
outbox delivers it at least once, never again after a success.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.engine import Connection

from app.notify.outbox import Attachment, enqueue_email
from app.reports.content.build import ReportOut, build_report
from app.reports.content.period import Period
from app.reports.delivery import archive
from app.reports.delivery.subscriptions import Subscription
from app.reports.render.html import render_document, render_mail
from app.reports.render.pdf import html_to_pdf
from app.reports.render.table import csv_filename, to_csv
from app.reports.render.view import ReportView, fmt_time, make_view


@dataclass(frozen=True, slots=True)
class Rendered:
    report: ReportOut
    view: ReportView
    pdf: bytes
    csv: bytes

    @property
    def pdf_name(self) -> str:
        return csv_filename(self.report).removesuffix(".csv") + ".pdf"

    @property
    def csv_name(self) -> str:
        return csv_filename(self.report)


@dataclass(frozen=True, slots=True)
class Delivery:
    archive_id: int
    outbox_id: int | None
    subject: str


def render(
    conn: Connection, sub: Subscription, period: Period, *, now: datetime, base_url: str,
    browser: str | None = None,
) -> Rendered:  # fmt: skip
    rep = build_report(conn, period, sub.spec.selection(), now=now)
    view = make_view(rep, base_url=base_url, tz=sub.spec.schedule.timezone)
    pdf = html_to_pdf(render_document(view, sub.spec.paper), browser=browser)
    return Rendered(rep, view, pdf, to_csv(rep).encode())


def subject(rep: ReportOut, *, late: bool) -> str:
    """E.g. "connwatch weekly report 2026-W47: 99.95 % available, 1 mode slower"."""
    what = "weekly" if rep.kind == "week" else "monthly"
    ran = sum(r.samples - r.skipped for r in rep.rows)
    parts = []
    if ran:
        ok = sum(r.ok for r in rep.rows)
        parts.append(f"{int(10000.0 * ok / ran) / 100:.2f} % available")
    slower = sum(r.logon_change.word == "slower" for r in rep.rows)
    if slower:
        parts.append(f"{slower} mode{'s' if slower != 1 else ''} slower")
    outages = sum(i.kind == "outage" for i in rep.incidents)
    if outages:
        parts.append(f"{outages} outage{'s' if outages != 1 else ''}")
    head = f"connwatch {what} report {rep.week}{'' if rep.complete else ' (so far)'}"
    return ("[late] " if late else "") + head + (": " + ", ".join(parts) if parts else "")


def render_mail_preview(
    conn: Connection, sub: Subscription, period: Period, *, now: datetime, base_url: str
) -> str:
    """The mail's HTML as it would be sent now (no PDF is rendered, nothing is stored)."""
    rep = build_report(conn, period, sub.spec.selection(), now=now)
    view = make_view(rep, base_url=base_url, tz=sub.spec.schedule.timezone)
    html, _ = render_mail(
        view, subject=subject(rep, late=False), late=False, due_text="", subscription=sub.name,
        schedule=sub.spec.schedule.describe(),
    )  # fmt: skip
    return html


def deliver(
    conn: Connection,
    sub: Subscription,
    period: Period,
    *,
    now: datetime,
    trigger: str,
    due_at: datetime | None,
    late: bool,
    base_url: str,
    browser: str | None = None,
) -> Delivery:
    """Render, archive and queue ``sub``'s report for ``period`` in ``conn``'s transaction."""
    out = render(conn, sub, period, now=now, base_url=base_url, browser=browser)
    subj = subject(out.report, late=late)
    due_text = fmt_time(due_at, ZoneInfo(sub.spec.schedule.timezone)) if due_at else ""
    html, text_body = render_mail(
        out.view, subject=subj, late=late, due_text=due_text, subscription=sub.name,
        schedule=sub.spec.schedule.describe(),
    )  # fmt: skip
    archive_id = archive.store(
        conn, subscription_id=sub.id, subscription=sub.name, period=period.label,
        period_start=period.start, period_end=period.end, due_at=due_at, trigger=trigger,
        late=late, recipients=sub.spec.recipients, subject=subj, pdf=out.pdf, csv=out.csv,
        html=html,
    )  # fmt: skip
    if archive_id is None:
        raise RuntimeError(f"report {sub.name} due {due_at} was archived by another process")
    outbox_id = enqueue_email(
        conn,
        to=sub.spec.recipients,
        subject=subj,
        text_body=text_body,
        html_body=html,
        attachments=[
            Attachment(out.pdf_name, "application/pdf", out.pdf),
            Attachment(out.csv_name, "text/csv", out.csv),
        ],
        kind="report",
        dedupe_key=f"report:{archive_id}",
    )
    archive.set_outbox(conn, archive_id, outbox_id)
    return Delivery(archive_id, outbox_id, subj)
