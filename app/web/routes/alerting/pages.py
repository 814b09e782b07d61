"""The Alerts page for on-call: what fires (first), what is acknowledged, silenced or in
maintenance, pending, without data; each with its chart window and raw samples; silences,
the last day's history and annotations. Acknowledging, silencing and annotating are
operator actions (forms, anti-forgery token, audited)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.alerts import queries
from app.alerts.annotations import AnnotationError, AnnotationSpec, events
from app.alerts.lease import lease_holder
from app.alerts.mute.acks import AckError, acknowledge, unacknowledge
from app.alerts.mute.maintenance import list_windows, open_windows
from app.alerts.mute.silences import SilenceSpec, expire_silence, list_silences
from app.auth.audit import record
from app.targets.durations import parse_duration_ms
from app.targets.selector import Selector
from app.web.access.guards import OperatorDep, require_viewer
from app.web.deps import ConnDep, EngineDep, TemplatesDep
from app.web.routes.admin import _form
from app.web.routes.alerting.common import (
    base_url,
    create_annotation_audited,
    create_silence_audited,
)

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_viewer)])


def groups(alerts: list[queries.AlertRow]) -> list[tuple[str, str, list[queries.AlertRow]]]:
    """(id, heading, rows): firing that needs someone first."""
    firing = [a for a in alerts if a.state == "firing"]
    muted = [a for a in firing if a.silenced or a.in_maintenance]
    acked = [a for a in firing if a.ack_by and a not in muted]
    open_ = [a for a in firing if a not in muted and a not in acked]
    return [
        ("firing", "Firing", open_),
        ("acknowledged", "Firing, acknowledged", acked),
        ("muted", "Firing, silenced or in maintenance", muted),
        ("pending", "Pending", [a for a in alerts if a.state == "pending"]),
        (
            "nodata",
            "No data or evaluation error",
            [a for a in alerts if a.state in ("nodata", "error")],
        ),
        ("resolved", "Resolved in the last hour", [a for a in alerts if a.state == "resolved"]),
    ]


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.replace(";", ",").split(",") if x.strip()]


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(
    request: Request, conn: ConnDep, templates: TemplatesDep, message: str | None = None
) -> Response:
    return _page(request, conn, templates, message=message)


def _page(
    request: Request,
    conn: Any,
    templates: Any,
    *,
    message: str | None = None,
    errors: list[str] | None = None,
    form: dict[str, str] | None = None,
    status: int = 200,
) -> Response:
    now = datetime.now(UTC)
    alerts = queries.current_alerts(conn, now, base_url="")
    holder = lease_holder(conn)
    windows = open_windows(list_windows(conn, enabled_only=True), now)
    page: Response = templates.TemplateResponse(
        request,
        "alerts.html",
        {
            "title": "Alerts",
            "active": "Alerts",
            "groups": groups(alerts),
            "n_firing": sum(1 for a in alerts if a.state == "firing"),
            "silences": list_silences(conn, now=now),
            "open_windows": windows,
            "history": queries.history(conn, now - timedelta(days=1), now, limit=100),
            "annotations": [e for e in events(conn, now - timedelta(days=7), now, alerts=False)][
                -20:
            ],
            "targets": [r[0] for r in conn.exec_driver_sql("select name from targets order by 1")],
            "evaluator": holder,
            "evaluator_alive": holder is not None and holder[2] > now,
            "now": now,
            "message": message,
            "errors": errors or [],
            "form": form or {},
        },
        status_code=status,
    )
    return page


def _back(message: str) -> Response:
    return RedirectResponse(f"/alerts?message={quote(message)}", status_code=303)


MAX_ACK_HOURS = 720  # what the form's field allows (30 days)


@router.post("/alerts/ack")
async def ack(request: Request, engine: EngineDep, who: OperatorDep) -> Response:
    f = await _form(request)
    until = None
    if f.get("hours", "").strip():
        try:
            hours = float(f["hours"])
        except ValueError:
            hours = math.nan
        if not 0 < hours <= MAX_ACK_HOURS:  # NaN too; 1e40 overflowed timedelta (a 500)
            shown = f["hours"][:40]
            raise HTTPException(
                422, f"hours: {shown!r} is not a number of hours above 0 and up to {MAX_ACK_HOURS}"
            )
        until = datetime.now(UTC) + timedelta(hours=hours)
    with engine.begin() as conn:
        try:
            acknowledge(
                conn,
                rule=f.get("rule", ""),
                fingerprint=f.get("fingerprint", ""),
                by=who.name,
                comment=f.get("comment", ""),
                until=until,
            )
        except AckError as exc:
            raise HTTPException(422, str(exc)) from None
        record(
            conn,
            who,
            "alert.ack",
            object_type="alert",
            object_name=f"{f.get('rule')} {{{f.get('fingerprint')}}}",
            detail=f.get("comment", ""),
        )
    return _back(f"acknowledged {f.get('rule')}")


@router.post("/alerts/unack")
async def unack(request: Request, engine: EngineDep, who: OperatorDep) -> Response:
    f = await _form(request)
    with engine.begin() as conn:
        if not unacknowledge(conn, rule=f.get("rule", ""), fingerprint=f.get("fingerprint", "")):
            raise HTTPException(404, "no acknowledgement to withdraw")
        record(
            conn,
            who,
            "alert.unack",
            object_type="alert",
            object_name=f"{f.get('rule')} {{{f.get('fingerprint')}}}",
        )
    return _back(f"acknowledgement of {f.get('rule')} withdrawn")


@router.post("/alerts/silences", response_class=HTMLResponse)
async def silence(
    request: Request, conn: ConnDep, engine: EngineDep, templates: TemplatesDep, who: OperatorDep
) -> Response:
    f = await _form(request)
    errors: list[str] = []
    try:
        span = parse_duration_ms(f.get("duration", "1h") or "1h")
    except ValueError as exc:
        errors.append(f"for: {exc}")
        span = 0
    try:
        start = datetime.now(UTC)
        selector = Selector(targets=_split(f.get("targets", "")), modes=_split(f.get("modes", "")))
        spec = SilenceSpec(
            rules=_split(f.get("rules", "")),
            selector=selector,
            starts_at=start,
            ends_at=start + timedelta(milliseconds=max(span, 1)),
            author=who.name,
            comment=f.get("comment", ""),
        )
    except ValidationError as exc:
        errors += [
            f"{'.'.join(map(str, e['loc']))}: {str(e['msg']).removeprefix('Value error, ')}"
            for e in exc.errors()
        ]
    if errors:
        return _page(request, conn, templates, errors=errors, form=f, status=422)
    with engine.begin() as wconn:
        sid = create_silence_audited(wconn, who, spec)
    return _back(f"silence {sid} until {spec.ends_at:%H:%M} UTC")


@router.post("/alerts/silences/{silence_id}/expire")
async def expire(
    silence_id: int, request: Request, engine: EngineDep, who: OperatorDep
) -> Response:
    await _form(request)
    with engine.begin() as conn:
        if not expire_silence(conn, silence_id):
            raise HTTPException(404, f"no active or pending silence {silence_id}")
        record(conn, who, "silence.expire", object_type="silence", object_name=str(silence_id))
    return _back(f"silence {silence_id} ended")


@router.post("/annotations", response_class=HTMLResponse)
async def annotate(
    request: Request, conn: ConnDep, engine: EngineDep, templates: TemplatesDep, who: OperatorDep
) -> Response:
    f = await _form(request)
    try:
        spec = AnnotationSpec(text=f.get("text", ""), target=f.get("target") or None)
        with engine.begin() as wconn:
            create_annotation_audited(wconn, who, spec, source="ui", now=datetime.now(UTC))
    except ValidationError as exc:
        errs = [f"annotation {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        return _page(request, conn, templates, errors=errs, form=f, status=422)
    except AnnotationError as exc:
        return _page(request, conn, templates, errors=[f"annotation {exc}"], form=f, status=422)
    back = f.get("back", "")
    if back.startswith("/") and not back.startswith("//"):
        return RedirectResponse(back, status_code=303)
    return _back("annotation recorded")


def firing_summary(conn: Any) -> list[queries.AlertRow]:
    """For the overview: alerts firing now, most urgent first (none acknowledged first)."""
    rows = [
        a
        for a in queries.current_alerts(conn, datetime.now(UTC), base_url=base_url())
        if a.state == "firing"
    ]
    return sorted(
        rows,
        key=lambda a: (
            a.ack_by is not None or a.silenced or a.in_maintenance,
            queries.SEVERITY_ORDER.get(a.severity, 9),
        ),
    )
