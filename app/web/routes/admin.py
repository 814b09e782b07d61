"""Pages that manage configuration and show the agents: Targets (add / edit / disable /
test now) and Agents. Forms post ``application/x-www-form-urlencoded`` bodies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from starlette.concurrency import run_in_threadpool

from app.auth import audit
from app.auth.principal import Principal
from app.secrets import Vault
from app.store import probe_requests
from app.store.read.agents import ALIVE_S, agent_status
from app.targets.policy import WritePolicy, network_problem
from app.targets.schema import TargetEntry
from app.targets.sync import snapshot
from app.web.access.guards import OperatorDep, require_operator, require_viewer
from app.web.deps import ConnDep, EngineDep, TemplatesDep, VaultDep
from app.web.params import target_or_404
from app.web.views import forms
from app.web.views.agents import overload_view, worker_rows
from app.web.views.lookups import load_targets

router = APIRouter(include_in_schema=False, dependencies=[Depends(require_viewer)])
MAX_FORM_BYTES = 64 * 1024


async def _form(request: Request) -> dict[str, str]:
    ctype = request.headers.get("content-type", "")
    if not ctype.startswith("application/x-www-form-urlencoded"):
        raise HTTPException(415, "send the form as application/x-www-form-urlencoded")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, "form too large")
    try:
        pairs = parse_qsl(body.decode(), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise HTTPException(400, "the form is not UTF-8") from None
    return dict(pairs)


FLASH = {
    "saved": "Saved {}.",
    "enabled": "Enabled {}: its modes are probed again.",
    "disabled": "Disabled {}: it is no longer probed; its history stays. Enable it again here.",
    "deleted": "Deleted {}: its modes and series are gone; the samples already stored stay "
    "until retention drops them.",
}


@router.get("/targets", response_class=HTMLResponse)
def targets_page(
    request: Request,
    conn: ConnDep,
    templates: TemplatesDep,
    saved: str | None = None,
    done: str | None = None,
) -> Response:
    what = done if done in FLASH else "saved"
    flash = FLASH[what].format(saved) if saved else None
    return templates.TemplateResponse(
        request,
        "targets.html",
        {"title": "Targets", "active": "Targets", "targets": load_targets(conn), "flash": flash},
    )


def _confirm_page(
    request: Request, templates: TemplatesDep, name: str, action: str, **ctx: Any
) -> Response:
    return templates.TemplateResponse(
        request,
        "target_confirm.html",
        {"title": f"{action.capitalize()} {name}?", "active": "Targets", "name": name,
         "action": action, **ctx},
    )  # fmt: skip


@router.get("/targets/new", response_class=HTMLResponse, dependencies=[Depends(require_operator)])
def new_target(request: Request, templates: TemplatesDep, kind: str = "oracle") -> Response:
    if kind not in ("oracle", "postgres"):
        raise HTTPException(422, "kind: expected oracle or postgres")
    return _form_page(request, templates, forms.blank_form(kind))


def _form_page(
    request: Request,
    templates: TemplatesDep,
    form: forms.TargetForm,
    *,
    status: int = 200,
    probe_request: int | None = None,
    target: Any = None,
) -> Response:
    return templates.TemplateResponse(
        request,
        "target_form.html",
        {
            "title": f"Edit {form.name}" if form.existing else "Add a target",
            "active": "Targets",
            "form": form,
            "dsn_hint": forms.DEFAULT_PORT_HINT.get(form.kind, ""),
            "probe_request": probe_request,
            "target": target,
        },
        status_code=status,
    )


@router.post("/targets/new", response_class=HTMLResponse, dependencies=[Depends(require_operator)])
async def create_target(
    request: Request,
    engine: EngineDep,
    templates: TemplatesDep,
    vault: VaultDep,
    principal: OperatorDep,
) -> Response:
    data = await _form(request)
    policy = _write_policy(request, principal)
    # YAML parsing, policy checks (DNS for CONNWATCH_TARGET_NETWORKS) and the store: off the loop
    form, entry = await run_in_threadpool(_create, engine, vault, principal, policy, data)
    if entry is None or form.errors:
        return _form_page(request, templates, form, status=422)
    return RedirectResponse(f"/targets/{quote(entry.name)}/edit?saved=1", status_code=303)


def _write_policy(request: Request, principal: Principal) -> WritePolicy:
    """What this writer may store: an operator types passwords, an admin may set references."""
    return WritePolicy.from_settings(request.app.state.settings, admin=principal.role == "admin")


def _create(
    engine: Engine, vault: Vault, principal: Principal, policy: WritePolicy, data: dict[str, str]
) -> tuple[forms.TargetForm, TargetEntry | None]:
    form, doc = forms.read_form(data, existing=None)
    entry = forms.validate(form, doc)
    if entry is None:
        return form, None
    try:
        with engine.begin() as conn:
            if forms.name_taken(conn, entry.name):
                form.errors["name"] = f"a target named {entry.name!r} already exists"
                return form, entry
            forms.save(conn, entry, vault, policy)
            audit.record(
                conn,
                principal,
                "target.create",
                object_type="target",
                object_name=entry.name,
                after=snapshot(conn, entry.name),
            )
    except (ValueError, IntegrityError) as exc:
        form.errors["form"] = str(exc).splitlines()[0]
    return form, entry


@router.get(
    "/targets/{name}/edit", response_class=HTMLResponse, dependencies=[Depends(require_operator)]
)
def edit_target(
    request: Request,
    name: str,
    conn: ConnDep,
    templates: TemplatesDep,
    test: int | None = None,
) -> Response:
    target = target_or_404(conn, name)
    return _form_page(
        request, templates, forms.form_from_target(target), probe_request=test, target=target
    )


@router.post(
    "/targets/{name}/edit", response_class=HTMLResponse, dependencies=[Depends(require_operator)]
)
async def update_target(
    request: Request,
    name: str,
    engine: EngineDep,
    templates: TemplatesDep,
    vault: VaultDep,
    principal: OperatorDep,
) -> Response:
    data = await _form(request)
    policy = _write_policy(request, principal)
    form, target, ok = await run_in_threadpool(
        _update, engine, vault, principal, policy, name, data
    )
    if not ok:
        return _form_page(request, templates, form, status=422, target=target)
    return RedirectResponse(f"/targets/{quote(name)}/edit?saved=1", status_code=303)


def _update(
    engine: Engine,
    vault: Vault,
    principal: Principal,
    policy: WritePolicy,
    name: str,
    data: dict[str, str],
) -> tuple[forms.TargetForm, Any, bool]:
    with engine.connect() as conn:
        target = target_or_404(conn, name)
    form, doc = forms.read_form(data, existing=target)
    entry = forms.validate(form, doc)
    if entry is None:
        return form, target, False
    try:
        with engine.begin() as conn:
            before = snapshot(conn, name)
            forms.save(conn, entry, vault, policy)
            audit.record(
                conn,
                principal,
                "target.update",
                object_type="target",
                object_name=name,
                before=before,
                after=snapshot(conn, name),
            )
    except (ValueError, IntegrityError) as exc:
        form.errors["form"] = str(exc).splitlines()[0]
        return form, target, False
    return form, target, True


@router.post("/targets/{name}/enabled", dependencies=[Depends(require_operator)])
async def toggle_target(
    request: Request,
    name: str,
    engine: EngineDep,
    templates: TemplatesDep,
    principal: OperatorDep,
) -> Response:
    data = await _form(request)
    value = data.get("enabled")
    if value not in ("true", "false"):
        raise HTTPException(422, "enabled: expected true or false")
    if value == "false" and data.get("confirm") != "yes":  # ask first: probing stops
        with engine.connect() as conn:
            target = target_or_404(conn, name)
        return _confirm_page(request, templates, name, "disable", target=target)
    with engine.begin() as conn:
        if not forms.set_enabled(conn, name, value == "true"):
            raise HTTPException(404, f"no target named {name!r}")
        audit.record(
            conn,
            principal,
            "target.enable" if value == "true" else "target.disable",
            object_type="target",
            object_name=name,
        )
    done = "enabled" if value == "true" else "disabled"
    return RedirectResponse(f"/targets?saved={quote(name)}&done={done}", status_code=303)


@router.post(
    "/targets/{name}/delete", response_class=HTMLResponse, dependencies=[Depends(require_operator)]
)
async def delete_target(
    request: Request,
    name: str,
    engine: EngineDep,
    templates: TemplatesDep,
    principal: OperatorDep,
) -> Response:
    data = await _form(request)
    typed = data.get("confirm_name")
    if typed != name:  # ask first, by typing the name: this cannot be undone
        with engine.connect() as conn:
            target = target_or_404(conn, name)
        wrong = typed is not None
        return _confirm_page(
            request, templates, name, "delete", target=target, wrong=wrong, typed=typed or ""
        )
    with engine.begin() as conn:
        before = snapshot(conn, name)
        if not forms.delete_target(conn, name):
            raise HTTPException(404, f"no target named {name!r}")
        audit.record(
            conn, principal, "target.delete", object_type="target", object_name=name, before=before
        )
    return RedirectResponse(f"/targets?saved={quote(name)}&done=deleted", status_code=303)


@router.post("/targets/{name}/test", dependencies=[Depends(require_operator)])
async def test_now(
    request: Request, name: str, engine: EngineDep, principal: OperatorDep
) -> Response:
    data = await _form(request)
    mode_name = data.get("mode", "")
    settings = request.app.state.settings
    problem = await run_in_threadpool(_unreachable, engine, settings, name)
    if problem:
        raise HTTPException(422, f"'test now' refused: {problem}")
    with engine.begin() as conn:
        target = target_or_404(conn, name)
        recent = audit.count_recent(conn, principal.name, "target.test", 60)
        if recent >= settings.test_now_per_minute:
            raise HTTPException(
                429,
                f"'test now' is limited to {settings.test_now_per_minute} runs a minute per "
                "user (CONNWATCH_TEST_NOW_PER_MINUTE): wait a little",
            )
        mode = target.mode(mode_name)
        if mode is None:
            raise HTTPException(422, f"mode: target {name!r} has no mode {mode_name!r}")
        connping = next((s for s in mode.series if s.probe == "connping"), None)
        timeout = min(
            connping.timeout_ms if connping else probe_requests.DEFAULT_TIMEOUT_MS, 300_000
        )
        request_id = probe_requests.insert(conn, target.id, mode.id, "connping", timeout_ms=timeout)
        audit.record(
            conn,
            principal,
            "target.test",
            object_type="target",
            object_name=name,
            detail=f"mode {mode.name}, probe request {request_id}",
        )
    return RedirectResponse(
        f"/targets/{quote(name)}/edit?test={request_id}#test-now", status_code=303
    )


def _unreachable(engine: Engine, settings: Any, name: str) -> str | None:
    """CONNWATCH_TARGET_NETWORKS applied to the target as stored now (DNS: a worker thread)."""
    if not settings.target_networks:
        return None
    with engine.connect() as conn:
        found = snapshot(conn, name)
    if found is None:
        return None
    fields = {k: v for k, v in found.items() if k not in ("password", "password_encrypted")}
    try:
        entry = TargetEntry.model_validate(fields)
    except ValueError:
        return "the stored target no longer validates: edit it first"
    return network_problem(entry, WritePolicy.from_settings(settings))


@router.get("/agents", response_class=HTMLResponse)
def agents_page(request: Request, conn: ConnDep, templates: TemplatesDep) -> Response:
    now = datetime.now(UTC)
    agents = agent_status(conn, now=now)
    return templates.TemplateResponse(
        request,
        "agents.html",
        {
            "title": "Agents",
            "active": "Agents",
            "agents": agents,
            "now": now,
            "alive_s": ALIVE_S,
            "overload_view": overload_view,
            "worker_rows": worker_rows,
        },
    )
