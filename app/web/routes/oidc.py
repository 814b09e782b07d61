"""Single sign-on: ``/login/oidc`` sends the browser to the OpenID provider, and
``/login/oidc/callback`` logs the user in (app.auth.oidc does the protocol).

The ``state`` of a login is also kept in a ``SameSite=Lax`` cookie of the browser that
began it, so a callback link made by someone else (login CSRF) logs nobody in."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.auth import audit, oidc, sessions, users
from app.auth.principal import Principal
from app.web.access.cookies import set_session
from app.web.access.guards import public
from app.web.access.identify import client_of
from app.web.deps import TemplatesDep
from app.web.routes.auth import safe_next

router = APIRouter(include_in_schema=False, dependencies=[Depends(public)])
STATE_COOKIE = "connwatch_oidc_state"


def _config(request: Request) -> oidc.OidcConfig:
    cfg = oidc.OidcConfig.from_settings(request.app.state.settings)
    if cfg is None:
        raise HTTPException(404, "single sign-on is not configured (CONNWATCH_OIDC_ISSUER)")
    return cfg


def _redirect_uri(request: Request, cfg: oidc.OidcConfig) -> str:
    if cfg.redirect_url:
        return cfg.redirect_url
    host = request.headers.get("host", "localhost")  # already checked against the allow list
    return f"{client_of(request).scheme}://{host}/login/oidc/callback"


def _failure(request: Request, templates: TemplatesDep, message: str, status: int) -> Response:
    return templates.TemplateResponse(
        request,
        "error.html",
        {
            "title": "Single sign-on failed",
            "message": message + " (you may log in with a password instead)",
        },
        status_code=status,
    )


@router.get("/login/oidc")
async def oidc_start(
    request: Request, templates: TemplatesDep, next: str | None = None
) -> Response:
    cfg = _config(request)
    try:
        meta, _ = await oidc.metadata(cfg)
    except oidc.OidcError as exc:
        return _failure(request, templates, str(exc), 502)
    redirect_uri = _redirect_uri(request, cfg)

    def start() -> str:
        with request.app.state.engine.begin() as conn:
            return oidc.begin(conn, cfg, meta, redirect_uri, safe_next(next))

    url = await run_in_threadpool(start)
    response = RedirectResponse(url, status_code=303)
    state = url.split("state=", 1)[1].split("&", 1)[0]
    response.set_cookie(
        STATE_COOKIE,
        state,
        max_age=oidc.LOGIN_TTL_S,
        path="/login/oidc",
        httponly=True,
        samesite="lax",
        secure=client_of(request).scheme == "https",
    )
    return response


@router.get("/login/oidc/callback")
async def oidc_callback(
    request: Request,
    templates: TemplatesDep,
    state: str = "",
    code: str = "",
    error: str = "",
) -> Response:
    cfg = _config(request)
    client = client_of(request)
    if error:
        return _failure(request, templates, f"the identity provider said: {error[:100]}", 401)
    cookie = request.cookies.get(STATE_COOKIE, "")
    if not state or not cookie or not hmac.compare_digest(cookie.encode(), state.encode()):
        return _failure(request, templates, "this sign-in was not started in this browser", 400)

    def take() -> oidc.PendingLogin:
        with request.app.state.engine.begin() as conn:
            return oidc.take(conn, state)

    try:
        pending = await run_in_threadpool(take)
        ident = await oidc.finish(cfg, pending, code)
    except oidc.OidcError as exc:
        return _failure(request, templates, str(exc), 401)
    role = oidc.role_for(cfg, ident)

    def login() -> str | None:
        with request.app.state.engine.begin() as conn:
            who = Principal(ident.name, None, "oidc", source=client.address)
            if role is None:
                audit.record(
                    conn,
                    who,
                    "login.failure",
                    object_type="user",
                    object_name=ident.name,
                    outcome="denied",
                    detail="single sign-on: no connwatch role for this identity",
                )
                return None
            user = users.upsert_external(
                conn,
                kind="oidc",
                external_id=ident.subject,
                name=ident.name,
                display_name=ident.display_name,
                role=role,
            )
            if user.disabled:
                audit.record(
                    conn,
                    who,
                    "login.failure",
                    object_type="user",
                    object_name=user.name,
                    outcome="denied",
                    detail="single sign-on: account disabled",
                )
                return None
            token, _ = sessions.create(
                conn,
                user.id,
                via="oidc",
                source=client.address,
                user_agent=request.headers.get("user-agent", ""),
                max_hours=request.app.state.settings.session_max_hours,
            )
            me = Principal(user.name, role, "session", source=client.address, user_id=user.id)
            audit.record(
                conn,
                me,
                "login.success",
                object_type="user",
                object_name=user.name,
                detail=f"single sign-on as {role}",
            )
            return token

    token = await run_in_threadpool(login)
    if token is None:
        return _failure(
            request,
            templates,
            f"{ident.name!r} may not use connwatch (no role for this account)",
            403,
        )
    response = RedirectResponse(pending.next_url, status_code=303)
    set_session(response, token, https=client.scheme == "https")
    response.delete_cookie(STATE_COOKIE, path="/login/oidc")
    return response
