"""The Report page, its JSON, CSV and PDF: thin routes over :mod:`app.reports`.

``week`` is an ISO week (``2026-W46``), a month (``2026-03``), ``current``, ``last``,
``current-month`` or ``last-month``; empty: the last complete week, or the current
week so far when the last one has no samples. ``targets`` (name patterns) and
``labels`` (``key=value``) select targets; default all.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.engine import Connection

from app.config import get_settings
from app.reports.content.build import ReportOut, build_report
from app.reports.content.period import PeriodError, parse_period
from app.reports.content.scope import Selection
from app.reports.render.html import PAPERS, render_document
from app.reports.render.pdf import PdfError, html_to_pdf
from app.reports.render.table import csv_filename, to_csv
from app.reports.render.view import make_view
from app.web.access.guards import require_viewer
from app.web.deps import ConnDep, TemplatesDep
from app.web.timerange import RangeError

router = APIRouter(dependencies=[Depends(require_viewer)])
WeekQ = Annotated[
    str | None,
    Query(
        max_length=20,
        description="ISO week YYYY-Www, month YYYY-MM, current, last, current-month or "
        "last-month (default: the last complete week, or this week so far when it has none)",
    ),
]
TargetsQ = Annotated[
    str | None, Query(max_length=300, description="target name patterns, comma-separated")
]
LabelsQ = Annotated[
    str | None, Query(max_length=300, description="key=value labels the targets must carry")
]
PaperQ = Annotated[Literal["a4", "letter"], Query(description="paper size of the PDF")]


def _report(
    conn: Connection, week: str | None, targets: str | None, labels: str | None
) -> ReportOut:
    now = datetime.now(UTC)
    try:
        period = parse_period(week, now)
        selection = Selection.parse(targets, labels)
    except PeriodError as exc:
        raise RangeError(str(exc)) from None
    except ValueError as exc:
        raise RangeError(f"labels: {exc}") from None
    return build_report(conn, period, selection, now=now)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@router.get(
    "/api/v1/report",
    tags=["api"],
    summary="The report: availability, logon/ping p95 and real changes per mode, trend, incidents",
)
def report_api(
    conn: ConnDep, week: WeekQ = None, targets: TargetsQ = None, labels: LabelsQ = None
) -> ReportOut:
    return _report(conn, week, targets, labels)


@router.get(
    "/api/v1/report.csv",
    tags=["api"],
    summary="The report's table as CSV (the same cells as the page)",
    response_class=Response,
)
def report_csv(
    conn: ConnDep, week: WeekQ = None, targets: TargetsQ = None, labels: LabelsQ = None
) -> Response:
    rep = _report(conn, week, targets, labels)
    return Response(
        to_csv(rep),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{csv_filename(rep)}"'},
    )


@router.get("/report.pdf", tags=["api"], summary="The report as a PDF rendered on the server")
def report_pdf(
    request: Request,
    conn: ConnDep,
    week: WeekQ = None,
    targets: TargetsQ = None,
    labels: LabelsQ = None,
    paper: PaperQ = "a4",
) -> Response:
    rep = _report(conn, week, targets, labels)
    html = render_document(make_view(rep, base_url=_base(request)), PAPERS[paper])
    try:
        chromium = get_settings().report_chromium
        pdf = html_to_pdf(html, browser=str(chromium) if chromium else None)
    except PdfError as exc:
        return Response(str(exc), status_code=503, media_type="text/plain")
    name = csv_filename(rep).removesuffix(".csv") + ".pdf"
    return Response(
        pdf,
        media_type="application/pdf",
        headers={"Content-Disposition": f'inline; filename="{name}"'},
    )


@router.get("/report", response_class=HTMLResponse, include_in_schema=False)
def report_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    week: WeekQ = None,
    targets: TargetsQ = None,
    labels: LabelsQ = None,
) -> Response:
    rep = _report(conn, week, targets, labels)
    params = {k: v for k, v in request.query_params.items() if v}
    return templates.TemplateResponse(
        request,
        "report.html",
        {
            "title": f"Report {rep.week}",
            "active": "Report",
            "v": make_view(rep),
            "params": params,
        },
    )
