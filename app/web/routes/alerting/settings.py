"""Alert rules (YAML editor with a backtest shown before saving), contact points (with "send
a test message" and their delivery log) and maintenance windows, in the browser. The
editors validate exactly as ``connwatch alerts import`` does; changes are operator actions,
audited with the before and after (secrets never)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from app.alerts.ascode import AlertsFileError, dump_yaml, parse_entry
from app.alerts.backtest import BacktestResult, backtest
from app.alerts.mute.maintenance import delete_window, list_windows, upsert_window
from app.alerts.queries import firing_counts
from app.alerts.rules import RuleSpec, delete_rule, get_rule, list_rules, upsert_rule
from app.auth.audit import record
from app.notify.contacts import (
    ContactPointSpec,
    delete_contact_point,
    get_contact_point,
    list_contact_points,
    upsert_contact_point,
)
from app.notify.outbox import delivery_log
from app.slo.definitions import get_slo
from app.web.access.guards import OperatorDep, require_viewer
from app.web.deps import ConnDep, EngineDep, TemplatesDep, VaultDep
from app.web.routes.admin import _form
from app.web.routes.alerting.common import send_test

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_viewer)])

TEMPLATES = {
    "latency": "name: sales-logon-slow\nkind: latency\n"
    "selector: {targets: [sales*], probe: connping}\nphase: logon\npercentile: p95\n"
    "window: 5m\nthreshold_ms: 200\nclear_ms: 150\npending: 2m\n"
    "contact_points: []\n",
    "availability": "name: listener-refusing\nkind: availability\nselector: {probe: connping}\n"
    "m: 3\nn: 5\ncodes: [TNS-125*]\ncontact_points: []\n",
    "baseline": "name: slower-than-usual\nkind: baseline\nselector: {modes: [pooled]}\n"
    "window: 15m\nratio: 2.0\nbaseline: weeks\n",
    "slo_burn": "name: budget-burn\nkind: slo_burn\nslo: NAME-OF-AN-SLO\n",
    "mode_compare": "name: drcp-vs-dedicated\nkind: mode_compare\nmode: pooled\n"
    "against: dedicated\nslower_pct: 20\nwindow: 1h\n",
    "nodata": "name: no-samples\nkind: nodata\nper: series\nintervals: 3\n",
    "agent": "name: agent-down\nkind: agent\nafter: 60s\n",
}


def _msg(where: str, message: str) -> Response:
    return RedirectResponse(f"{where}?message={quote(message)}", status_code=303)


# --------------------------------------------------------------------------- rules


@router.get("/alerts/rules", response_class=HTMLResponse)
def rules_page(
    request: Request, conn: ConnDep, templates: TemplatesDep, message: str | None = None
) -> Response:
    counts = firing_counts(conn)
    page: Response = templates.TemplateResponse(
        request,
        "alert_rules.html",
        {
            "title": "Alert rules",
            "active": "Alerts",
            "rules": list_rules(conn),
            "counts": counts,
            "kinds": list(TEMPLATES),
            "message": message,
        },
    )
    return page


@router.get("/alerts/rules/edit", response_class=HTMLResponse)
def rule_editor(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    name: str | None = None,
    kind: str = "latency",
) -> Response:
    text = TEMPLATES.get(kind, TEMPLATES["latency"])
    existing = False
    if name:
        rule = get_rule(conn, name)
        if rule is None:
            raise HTTPException(404, f"no rule named {name!r}")
        text, existing = dump_yaml(rule.spec.export()), True
    return _editor(request, templates, text=text, existing=existing)


def _editor(
    request: Request,
    templates: Any,
    *,
    text: str,
    existing: bool,
    errors: list[str] | None = None,
    result: BacktestResult | None = None,
    status: int = 200,
) -> Response:
    page: Response = templates.TemplateResponse(
        request,
        "alert_rule_edit.html",
        {
            "title": "Alert rule",
            "active": "Alerts",
            "text": text,
            "existing": existing,
            "errors": errors or [],
            "result": result,
            "kinds": list(TEMPLATES),
        },
        status_code=status,
    )
    return page


@router.post("/alerts/rules/edit", response_class=HTMLResponse)
async def rule_submit(
    request: Request, conn: ConnDep, engine: EngineDep, templates: TemplatesDep, who: OperatorDep
) -> Response:
    f = await _form(request)
    text, existing = f.get("rule", ""), f.get("existing") == "1"
    try:
        spec: RuleSpec = parse_entry("rules", text, "rule")
    except AlertsFileError as exc:
        return _editor(
            request, templates, text=text, existing=existing, errors=exc.errors, status=422
        )
    refs = [
        f"contact_points: no contact point {c!r}"
        for c in spec.contact_points
        if get_contact_point(conn, c) is None
    ]
    if spec.slo is not None and get_slo(conn, spec.slo) is None:
        refs.append(f"slo: no SLO {spec.slo!r}")
    if f.get("action") == "backtest" or refs:
        result = backtest(conn, spec, datetime.now(UTC), days=7) if not refs else None
        return _editor(
            request,
            templates,
            text=text,
            existing=existing,
            errors=refs,
            result=result,
            status=422 if refs else 200,
        )
    with engine.begin() as wconn:
        before = get_rule(wconn, spec.name)
        _, created = upsert_rule(wconn, spec, author=who.name)
        record(
            wconn,
            who,
            "rule.create" if created else "rule.update",
            object_type="rule",
            object_name=spec.name,
            before=before.spec.export() if before else None,
            after=spec.export(),
        )
    return _msg("/alerts/rules", f"saved rule {spec.name}")


@router.post("/alerts/rules/{name}/delete")
async def rule_delete(name: str, request: Request, engine: EngineDep, who: OperatorDep) -> Response:
    await _form(request)
    with engine.begin() as conn:
        before = get_rule(conn, name)
        if before is None or not delete_rule(conn, name):
            raise HTTPException(404, f"no rule named {name!r}")
        record(
            conn,
            who,
            "rule.delete",
            object_type="rule",
            object_name=name,
            before=before.spec.export(),
        )
    return _msg("/alerts/rules", f"deleted rule {name} (its history stays)")


@router.post("/alerts/rules/{name}/toggle")
async def rule_toggle(name: str, request: Request, engine: EngineDep, who: OperatorDep) -> Response:
    await _form(request)
    with engine.begin() as conn:
        rule = get_rule(conn, name)
        if rule is None:
            raise HTTPException(404, f"no rule named {name!r}")
        spec = rule.spec.model_copy(update={"enabled": not rule.spec.enabled})
        upsert_rule(conn, spec, author=who.name)
        record(
            conn,
            who,
            "rule.enable" if spec.enabled else "rule.disable",
            object_type="rule",
            object_name=name,
        )
    return _msg("/alerts/rules", f"{'enabled' if spec.enabled else 'disabled'} rule {name}")


# --------------------------------------------------------------------------- contact points


@router.get("/alerts/contacts", response_class=HTMLResponse)
def contacts_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    message: str | None = None,
    edit: str | None = None,
) -> Response:
    form: dict[str, Any] = {"channel": "webhook"}
    if edit:
        cp = get_contact_point(conn, edit)
        if cp is None:
            raise HTTPException(404, f"no contact point named {edit!r}")
        form = {
            "name": cp.name,
            "channel": cp.channel,
            "description": cp.description,
            "url": cp.settings.get("url", ""),
            "to": ", ".join(cp.settings.get("to", [])),
            "channel_name": cp.settings.get("channel", ""),
            "username": cp.settings.get("username", ""),
            "existing": True,
            "secret_kind": cp.secret,
            "secret_ref": cp.secret_ref or "",
            "enabled": cp.enabled,
        }
    return _contacts(request, conn, templates, form=form, message=message)


def _contacts(
    request: Request,
    conn: Any,
    templates: Any,
    *,
    form: dict[str, Any],
    message: str | None = None,
    errors: list[str] | None = None,
    status: int = 200,
) -> Response:
    from app.config import get_settings
    from app.notify.smtp import SmtpConfig

    cps = list_contact_points(conn)
    page: Response = templates.TemplateResponse(
        request,
        "contact_points.html",
        {
            "title": "Contact points",
            "active": "Alerts",
            "contacts": cps,
            "log": {c.name: delivery_log(conn, contact_point_id=c.id, limit=8) for c in cps},
            "smtp": SmtpConfig.from_settings(get_settings()).describe(),
            "form": form,
            "message": message,
            "errors": errors or [],
        },
        status_code=status,
    )
    return page


@router.post("/alerts/contacts", response_class=HTMLResponse)
async def contact_save(
    request: Request,
    conn: ConnDep,
    engine: EngineDep,
    templates: TemplatesDep,
    vault: VaultDep,
    who: OperatorDep,
) -> Response:
    f = await _form(request)
    data: dict[str, Any] = {
        "name": f.get("name", "").strip(),
        "channel": f.get("channel", ""),
        "description": f.get("description", ""),
        "enabled": f.get("enabled") == "on",
    }
    for key in ("url", "channel_name", "username"):
        if f.get(key, "").strip():
            data[key] = f[key].strip()
    if f.get("to", "").strip():
        data["to"] = [x.strip() for x in f["to"].replace(";", ",").split(",") if x.strip()]
    if f.get("secret", ""):
        data["secret"] = f["secret"]  # typed: encrypted on save, never shown again
    try:
        spec = ContactPointSpec.model_validate(data)
    except ValidationError as exc:
        errs = [
            f"{'.'.join(map(str, e['loc'])) or 'contact point'}: "
            f"{str(e['msg']).removeprefix('Value error, ')}"
            for e in exc.errors()
        ]
        form = {**f, "secret": "", "existing": f.get("existing") == "1"}
        return _contacts(request, conn, templates, form=form, errors=errs, status=422)
    with engine.begin() as wconn:
        before = get_contact_point(wconn, spec.name)
        _, created = upsert_contact_point(wconn, spec, vault)
        after = spec.model_dump(mode="json", exclude={"secret", "secret_encrypted"})
        after["secret"] = "(set)" if spec.secret else "(unchanged)"
        record(
            wconn,
            who,
            "contact_point.create" if created else "contact_point.update",
            object_type="contact_point",
            object_name=spec.name,
            before=None
            if before is None
            else {"channel": before.channel, "settings": before.settings},
            after=after,
        )
    return _msg("/alerts/contacts", f"saved contact point {spec.name}")


@router.post("/alerts/contacts/{name}/delete")
async def contact_delete(
    name: str, request: Request, engine: EngineDep, who: OperatorDep
) -> Response:
    await _form(request)
    with engine.begin() as conn:
        if not delete_contact_point(conn, name):
            raise HTTPException(404, f"no contact point named {name!r}")
        record(conn, who, "contact_point.delete", object_type="contact_point", object_name=name)
    return _msg("/alerts/contacts", f"deleted contact point {name}")


@router.post("/alerts/contacts/{name}/test")
async def contact_test(
    name: str, request: Request, engine: EngineDep, vault: VaultDep, who: OperatorDep
) -> Response:
    await _form(request)
    res = send_test(engine, who, name, vault)
    if res["status"] == "delivered":
        return _msg("/alerts/contacts", f"test message to {name} delivered")
    return _msg(
        "/alerts/contacts", f"test message to {name} NOT delivered: {res['error'] or res['status']}"
    )


# --------------------------------------------------------------------------- maintenance

WINDOW_TEMPLATE = (
    "name: sunday-patching\nselector: {targets: [sales*]}\n"
    'schedule: {weekly: {days: [sun], at: "02:00"}}\ntimezone: Europe/Paris\nduration: 2h\n'
    "pause_probes: false\n"
)


@router.get("/alerts/maintenance", response_class=HTMLResponse)
def maintenance_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    message: str | None = None,
    edit: str | None = None,
) -> Response:
    text = WINDOW_TEMPLATE
    if edit:
        w = next((w for w in list_windows(conn) if w.spec.name == edit), None)
        if w is None:
            raise HTTPException(404, f"no maintenance window named {edit!r}")
        text = dump_yaml(w.spec.export())
    return _maintenance(request, conn, templates, text=text, message=message)


def _maintenance(
    request: Request,
    conn: Any,
    templates: Any,
    *,
    text: str,
    message: str | None = None,
    errors: list[str] | None = None,
    status: int = 200,
) -> Response:
    now = datetime.now(UTC)
    windows = [
        (w, w.spec.open_at(now), w.spec.spans(now, now + timedelta(days=31))[:3])
        for w in list_windows(conn)
    ]
    page: Response = templates.TemplateResponse(
        request,
        "maintenance.html",
        {
            "title": "Maintenance windows",
            "active": "Alerts",
            "windows": windows,
            "text": text,
            "message": message,
            "errors": errors or [],
        },
        status_code=status,
    )
    return page


@router.post("/alerts/maintenance", response_class=HTMLResponse)
async def maintenance_save(
    request: Request, conn: ConnDep, engine: EngineDep, templates: TemplatesDep, who: OperatorDep
) -> Response:
    f = await _form(request)
    text = f.get("window", "")
    try:
        spec = parse_entry("maintenance_windows", text, "window")
    except AlertsFileError as exc:
        return _maintenance(request, conn, templates, text=text, errors=exc.errors, status=422)
    with engine.begin() as wconn:
        _, created = upsert_window(wconn, spec)
        record(
            wconn,
            who,
            "maintenance.create" if created else "maintenance.update",
            object_type="maintenance_window",
            object_name=spec.name,
            after=spec.export(),
        )
    return _msg("/alerts/maintenance", f"saved maintenance window {spec.name}")


@router.post("/alerts/maintenance/{name}/delete")
async def maintenance_delete(
    name: str, request: Request, engine: EngineDep, who: OperatorDep
) -> Response:
    await _form(request)
    with engine.begin() as conn:
        if not delete_window(conn, name):
            raise HTTPException(404, f"no maintenance window named {name!r}")
        record(conn, who, "maintenance.delete", object_type="maintenance_window", object_name=name)
    return _msg("/alerts/maintenance", f"deleted maintenance window {name}")
