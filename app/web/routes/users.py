"""Admin pages: users, API tokens, everybody's sessions (``/admin/users``) and the audit
log (``/admin/audit``, ``GET /api/v1/audit``). Every change is audited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel

from app.auth import audit, sessions, tokens, users
from app.auth.passwords import PasswordPolicyError
from app.auth.roles import ROLES
from app.web.access.config import AccessConfig
from app.web.access.guards import AdminDep, require_admin
from app.web.deps import TemplatesDep
from app.web.routes.auth import _small_form

router = APIRouter(dependencies=[Depends(require_admin)])
MAX_FORM = 16 * 1024


def _engine(request: Request) -> Any:
    return request.app.state.engine


def _users_page(
    request: Request,
    templates: TemplatesDep,
    *,
    message: str = "",
    error: str = "",
    new_token: str = "",
    status: int = 200,
) -> Response:
    cfg: AccessConfig = request.app.state.access
    with _engine(request).connect() as conn:
        everyone = users.list_all(conn)
        all_tokens = tokens.list_all(conn)
        live = sessions.for_user(conn, None, idle_minutes=cfg.settings.session_idle_minutes)
    return templates.TemplateResponse(
        request,
        "users.html",
        {
            "title": "Users and tokens",
            "active": "Users",
            "users": everyone,
            "tokens": all_tokens,
            "sessions": live,
            "roles": ROLES,
            "message": message or request.query_params.get("done", ""),
            "error": error,
            "new_token": new_token,
        },
        status_code=status,
    )


@router.get("/admin/users", response_class=HTMLResponse, include_in_schema=False)
def users_page(request: Request, templates: TemplatesDep) -> Response:
    return _users_page(request, templates)


def _done(message: str) -> Response:
    from urllib.parse import quote

    return RedirectResponse(f"/admin/users?done={quote(message)}", status_code=303)


@router.post("/admin/users", include_in_schema=False)
async def create_user(request: Request, principal: AdminDep, templates: TemplatesDep) -> Response:
    form = await _small_form(request, MAX_FORM)
    name, role = form.get("name", "").strip(), form.get("role", "viewer")
    kind = "service" if form.get("kind") == "service" else "local"
    password = form.get("password", "") if kind == "local" else None
    try:
        with _engine(request).begin() as conn:
            user = users.add(conn, name, role, password or None, kind=kind)
            audit.record(
                conn,
                principal,
                "user.create",
                object_type="user",
                object_name=user.name,
                after={"role": user.role, "kind": user.kind, "password": bool(password)},
            )
    except (users.UserError, PasswordPolicyError, ValueError) as exc:
        return _users_page(request, templates, error=str(exc), status=422)
    return _done(f"created {kind} user {name} ({role})")


@router.post("/admin/users/{name}/role", include_in_schema=False)
async def set_role(
    request: Request, name: str, principal: AdminDep, templates: TemplatesDep
) -> Response:
    form = await _small_form(request, MAX_FORM)
    try:
        with _engine(request).begin() as conn:
            before, after = users.set_role(conn, name, form.get("role", ""))
            audit.record(
                conn,
                principal,
                "user.role",
                object_type="user",
                object_name=name,
                before={"role": before.role},
                after={"role": after.role},
            )
    except (users.UserError, ValueError) as exc:
        return _users_page(request, templates, error=str(exc), status=422)
    return _done(f"{name} is now {after.role}")


@router.post("/admin/users/{name}/disabled", include_in_schema=False)
async def set_disabled(
    request: Request, name: str, principal: AdminDep, templates: TemplatesDep
) -> Response:
    form = await _small_form(request, MAX_FORM)
    value = form.get("disabled")
    if value not in ("true", "false"):
        raise HTTPException(422, "disabled: expected true or false")
    try:
        with _engine(request).begin() as conn:
            before, after = users.set_disabled(conn, name, value == "true")
            audit.record(
                conn,
                principal,
                "user.disable" if after.disabled else "user.enable",
                object_type="user",
                object_name=name,
                before={"disabled": before.disabled},
                after={"disabled": after.disabled},
            )
    except users.UserError as exc:
        return _users_page(request, templates, error=str(exc), status=422)
    return _done(f"{name} {'disabled' if after.disabled else 'enabled'}")


@router.post("/admin/users/{name}/password", include_in_schema=False)
async def reset_password(
    request: Request, name: str, principal: AdminDep, templates: TemplatesDep
) -> Response:
    form = await _small_form(request, MAX_FORM)
    try:
        with _engine(request).begin() as conn:
            users.set_password(conn, name, form.get("password", ""))
            audit.record(
                conn,
                principal,
                "user.password",
                object_type="user",
                object_name=name,
                detail="password reset by an admin; the user's sessions ended",
            )
    except (users.UserError, PasswordPolicyError) as exc:
        return _users_page(request, templates, error=str(exc), status=422)
    return _done(f"new password set for {name}; their sessions ended")


@router.post("/admin/tokens", include_in_schema=False)
async def create_token(request: Request, principal: AdminDep, templates: TemplatesDep) -> Response:
    form = await _small_form(request, MAX_FORM)
    days = form.get("expires_days", "").strip()
    try:
        expires = None
        if days:
            n = int(days)
            if not 1 <= n <= 3650:
                raise ValueError("expiry: 1 to 3650 days, or empty for none")
            expires = datetime.now(UTC) + timedelta(days=n)
        with _engine(request).begin() as conn:
            owner = users.require(conn, form.get("user", "").strip())
            token, info = tokens.create(
                conn,
                user_id=owner.id,
                name=form.get("name", ""),
                scope=form.get("scope", "read"),
                created_by=principal.name,
                expires_at=expires,
            )
            audit.record(
                conn,
                principal,
                "token.create",
                object_type="token",
                object_name=info.name,
                after={
                    "user": owner.name,
                    "scope": info.scope,
                    "expires_at": expires,
                    "prefix": info.prefix,
                },
            )
    except (users.UserError, tokens.TokenError, ValueError) as exc:
        return _users_page(
            request,
            templates,
            error=str(exc).removeprefix("invalid literal for int() with base 10: "),
            status=422,
        )
    return _users_page(
        request, templates, message=f"token {info.name!r} created for {owner.name}", new_token=token
    )


@router.post("/admin/tokens/{token_id}/revoke", include_in_schema=False)
def revoke_token(request: Request, token_id: int, principal: AdminDep) -> Response:
    with _engine(request).begin() as conn:
        info = tokens.revoke(conn, token_id)
        if info is None:
            raise HTTPException(404, "no such live token")
        audit.record(
            conn,
            principal,
            "token.revoke",
            object_type="token",
            object_name=info.name,
            before={"user": info.user_name, "scope": info.scope, "prefix": info.prefix},
        )
    return _done(f"token {info.name} revoked")


@router.post("/admin/sessions/{session_id}/revoke", include_in_schema=False)
def revoke_session(request: Request, session_id: int, principal: AdminDep) -> Response:
    with _engine(request).begin() as conn:
        if not sessions.revoke(conn, session_id):
            raise HTTPException(404, "no such live session")
        audit.record(
            conn, principal, "session.revoke", object_type="session", object_name=str(session_id)
        )
    return _done(f"session {session_id} ended")


# -- the audit log ---------------------------------------------------------------------


class AuditEntryOut(BaseModel):
    id: int
    at: datetime
    actor: str
    actor_role: str | None
    via: str
    source: str
    action: str
    object_type: str
    object_name: str
    outcome: str
    detail: str
    before: Any = None
    after: Any = None


class AuditOut(BaseModel):
    entries: list[AuditEntryOut]
    next: int | None  # pass as before_id for older entries


Text100 = Annotated[str | None, Query(max_length=100)]


def audit_filter(
    actor: Text100 = None,
    action: Text100 = None,
    object_type: Text100 = None,
    object_name: Annotated[str | None, Query(max_length=300)] = None,
    outcome: Annotated[str | None, Query(pattern="^(ok|denied|failed)$")] = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> audit.Filter:
    return audit.Filter(
        actor=actor or None,
        action=action or None,
        object_type=object_type or None,
        object_name=object_name or None,
        outcome=outcome or None,
        since=since,
        until=until,
    )


FilterDep = Annotated[audit.Filter, Depends(audit_filter)]
Limit = Annotated[int, Query(ge=1, le=1000)]
BeforeId = Annotated[int | None, Query(ge=1, le=2**62)]


def _read(request: Request, f: audit.Filter, limit: int, before_id: int | None) -> AuditOut:
    with _engine(request).connect() as conn:
        rows = audit.query(conn, f, limit=limit, before_id=before_id)
    return AuditOut(
        entries=[AuditEntryOut.model_validate(r, from_attributes=True) for r in rows],
        next=rows[-1].id if len(rows) == limit else None,
    )


@router.get("/api/v1/audit", tags=["admin"], summary="The audit log, newest first (admins)")
def api_audit(
    request: Request, f: FilterDep, limit: Limit = 100, before_id: BeforeId = None
) -> AuditOut:
    return _read(request, f, limit, before_id)


@router.get("/admin/audit", response_class=HTMLResponse, include_in_schema=False)
def audit_page(
    request: Request,
    templates: TemplatesDep,
    f: FilterDep,
    limit: Limit = 100,
    before_id: BeforeId = None,
) -> Response:
    out = _read(request, f, limit, before_id)
    return templates.TemplateResponse(
        request,
        "audit.html",
        {"title": "Audit log", "active": "Audit", "out": out, "f": f, "limit": limit},
    )
