"""Report subscriptions and the archive in the UI: list, add/edit, delete, send now, preview,
and download every sent report. Thin routes over :mod:`app.reports.delivery`; forms post
``application/x-www-form-urlencoded`` bodies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from app.auth import audit
from app.auth.principal import Principal
from app.config import get_settings
from app.reports.delivery.archive import fetch_file, list_archive
from app.reports.delivery.schedule import last_due, period_due
from app.reports.delivery.send import deliver, render_mail_preview
from app.reports.delivery.subscriptions import (
    WEEKDAYS,
    Subscription,
    SubscriptionError,
    SubscriptionIn,
    get_subscription,
    list_subscriptions,
    remove,
    save,
    validate,
)
from app.reports.render.pdf import PdfError
from app.web.access.guards import OperatorDep, require_operator, require_viewer
from app.web.deps import ConnDep, EngineDep, TemplatesDep
from app.web.routes.admin import _form

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_viewer)])
PAGE = "/report/subscriptions"


def _base(request: Request) -> str:
    return (get_settings().public_url or str(request.base_url)).rstrip("/")


def _browser() -> str | None:
    chromium = get_settings().report_chromium
    return str(chromium) if chromium else None


def _form_values(sub: Subscription | None) -> dict[str, Any]:
    if sub is None:
        return {"name": "", "targets": "", "labels": "", "every": "week", "day": "monday",
                "at": "08:00", "timezone": "UTC", "recipients": "", "paper": "A4",
                "enabled": True, "existing": False}  # fmt: skip
    s = sub.spec
    return {
        "name": s.name, "targets": ", ".join(s.targets),
        "labels": ", ".join(f"{k}={v}" for k, v in s.labels.items()),
        "every": s.schedule.every, "day": str(s.schedule.day), "at": s.schedule.at,
        "timezone": s.schedule.timezone, "recipients": ", ".join(s.recipients),
        "paper": s.paper, "enabled": s.enabled, "existing": True,
    }  # fmt: skip


def _page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    *,
    form: dict[str, Any],
    errors: list[str] | None = None,
    message: str = "",
    status: int = 200,
) -> Response:
    now = datetime.now(UTC)
    subs = list_subscriptions(conn)
    return templates.TemplateResponse(
        request,
        "report_subscriptions.html",
        {
            "title": "Report subscriptions",
            "active": "Report",
            "subs": [(s, last_due(s.spec, now), period_due(s.spec, now)) for s in subs],
            "archive": list_archive(conn, limit=100),
            "form": form,
            "errors": errors or [],
            "message": message,
            "weekdays": WEEKDAYS,
        },
        status_code=status,
    )


@router.get(PAGE, response_class=HTMLResponse)
def subscriptions_page(
    request: Request, conn: ConnDep, templates: TemplatesDep, edit: str | None = None,
    message: str = "",
) -> Response:  # fmt: skip
    sub = get_subscription(conn, edit) if edit else None
    if edit and sub is None:
        raise HTTPException(404, f"no subscription named {edit!r}")
    return _page(request, conn, templates, form=_form_values(sub), message=message[:200])


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.replace(";", ",").replace("\n", ",").split(",") if x.strip()]


@router.post(PAGE, response_class=HTMLResponse, dependencies=[Depends(require_operator)])
async def save_subscription(
    request: Request,
    conn: ConnDep,
    engine: EngineDep,
    templates: TemplatesDep,
    principal: OperatorDep,
) -> Response:
    f = await _form(request)
    labels: dict[str, str] = {}
    errors: list[str] = []
    for item in _split(f.get("labels", "")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            errors.append(f"labels: {item!r} is not key=value")
        labels[key.strip()] = value.strip()
    data = {
        "name": f.get("name", "").strip(),
        "enabled": f.get("enabled") == "on",
        "targets": _split(f.get("targets", "")),
        "labels": labels,
        "schedule": {"every": f.get("every", "week"), "day": f.get("day", "monday").strip(),
                     "at": f.get("at", "08:00"), "timezone": f.get("timezone", "UTC")},
        "recipients": _split(f.get("recipients", "")),
        "paper": f.get("paper", "A4"),
    }  # fmt: skip
    try:
        spec = validate(data, "subscription")
    except SubscriptionError as exc:
        errors += exc.errors
    if errors:
        form = {**f, "enabled": f.get("enabled") == "on", "existing": f.get("existing") == "1"}
        return await run_in_threadpool(
            _page, request, conn, templates, form=form, errors=errors, status=422
        )
    await run_in_threadpool(_save, engine, spec, principal)
    return RedirectResponse(f"{PAGE}?message={quote('saved ' + spec.name)}", status_code=303)


@router.post(PAGE + "/{name}/delete", dependencies=[Depends(require_operator)])
async def delete_subscription(
    name: str, request: Request, engine: EngineDep, principal: OperatorDep
) -> Response:
    await _form(request)
    await run_in_threadpool(_remove, engine, name, principal)
    return RedirectResponse(f"{PAGE}?message={quote('deleted ' + name)}", status_code=303)


@router.post(PAGE + "/{name}/send", dependencies=[Depends(require_operator)])
async def send_now(
    name: str, request: Request, engine: EngineDep, principal: OperatorDep
) -> Response:
    """Send the period the schedule would send now, at once (not counted as a due send).
    Building and printing take seconds: they run in a worker thread, off the event loop."""
    await _form(request)
    msg = await run_in_threadpool(_send_now, engine, name, _base(request), principal)
    return RedirectResponse(f"{PAGE}?message={quote(msg[:200])}", status_code=303)


def _save(engine: Engine, spec: SubscriptionIn, who: Principal) -> None:
    """Save and audit in one transaction (before/after: the whole subscription)."""
    with engine.begin() as wconn:
        old = get_subscription(wconn, spec.name)
        save(wconn, spec)
        audit.record(
            wconn, who, "report_subscription.save", object_type="report_subscription",
            object_name=spec.name, before=old.spec.model_dump(mode="json") if old else None,
            after=spec.model_dump(mode="json"),
        )  # fmt: skip


def _remove(engine: Engine, name: str, who: Principal) -> None:
    with engine.begin() as conn:
        old = get_subscription(conn, name)
        if old is None or not remove(conn, name):
            raise HTTPException(404, f"no subscription named {name!r}")
        audit.record(
            conn, who, "report_subscription.delete", object_type="report_subscription",
            object_name=name, before=old.spec.model_dump(mode="json"),
        )  # fmt: skip


def _send_now(engine: Engine, name: str, base_url: str, who: Principal) -> str:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        sub = get_subscription(conn, name)
        if sub is None:
            raise HTTPException(404, f"no subscription named {name!r}")
        try:
            d = deliver(
                conn, sub, period_due(sub.spec, now), now=now, trigger="send-now", due_at=None,
                late=False, base_url=base_url, browser=_browser(),
            )  # fmt: skip
        except PdfError as exc:
            raise HTTPException(503, str(exc)) from None
        said = f"queued {d.subject} to {', '.join(sub.spec.recipients)} (archive #{d.archive_id})"
        audit.record(
            conn, who, "report_subscription.send_now", object_type="report_subscription",
            object_name=name, detail=said,
        )  # fmt: skip
    return said


@router.get(PAGE + "/{name}/preview", response_class=HTMLResponse)
def preview(name: str, request: Request, conn: ConnDep) -> Response:
    """The e-mail as its recipients would get it now (nothing is sent or stored)."""
    sub = get_subscription(conn, name)
    if sub is None:
        raise HTTPException(404, f"no subscription named {name!r}")
    now = datetime.now(UTC)
    html = render_mail_preview(
        conn, sub, period_due(sub.spec, now), now=now, base_url=_base(request)
    )
    return HTMLResponse(html)


@router.get("/report/archive/{archive_id}.{kind}")
def archived_file(archive_id: int, kind: str, conn: ConnDep) -> Response:
    if kind not in ("pdf", "csv", "html"):
        raise HTTPException(404, "an archived report has .pdf, .csv and .html")
    got = fetch_file(conn, archive_id, kind)
    if got is None:
        raise HTTPException(404, f"no archived report #{archive_id}")
    name, data = got
    media = {"pdf": "application/pdf", "csv": "text/csv; charset=utf-8", "html": "text/html"}
    disposition = "attachment" if kind == "csv" else "inline"
    return Response(
        data,
        media_type=media[kind],
        headers={"Content-Disposition": f'{disposition}; filename="{name}"'},
    )
