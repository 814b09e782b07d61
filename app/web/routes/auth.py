"""Logging in and out, and a user's own sessions: ``/login``, ``/logout``, ``/account``.

The login form is protected against forgery without a session: a random nonce in a
``SameSite=Strict`` cookie must match the form's hidden field (and the Origin check of
app.web.access.middleware applies). Failures get one generic message; throttling
(app.auth.throttle) answers 429 with ``Retry-After``. Every attempt is audited.
Single sign-on (OIDC) lives in :mod:`app.web.routes.oidc`.
"""

from __future__ import annotations

import hmac
import math
import secrets
from urllib.parse import parse_qsl

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from app.auth import audit, sessions, throttle, users
from app.auth.principal import Principal
from app.web.access.config import LOGIN_NONCE_COOKIE, AccessConfig
from app.web.access.cookies import clear_session, set_login_nonce, set_session
from app.web.access.guards import ViewerDep, public, require_viewer
from app.web.access.identify import client_of
from app.web.deps import TemplatesDep

router = APIRouter(include_in_schema=False)
MAX_LOGIN_FORM = 8 * 1024
GENERIC_FAILURE = "wrong user name or password"


def safe_next(value: str | None) -> str:
    """A local path to go to after login (never another site)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    if any(c in value for c in "\r\n\x00"):
        return "/"
    return value


def _login_page(
    request: Request,
    templates: TemplatesDep,
    *,
    next_url: str,
    error: str = "",
    username: str = "",
    status: int = 200,
) -> Response:
    nonce = secrets.token_urlsafe(24)
    cfg: AccessConfig = request.app.state.access
    response = templates.TemplateResponse(
        request,
        "login.html",
        {
            "title": "Log in",
            "active": "",
            "nonce": nonce,
            "next_url": next_url,
            "error": error,
            "username": username,
            "oidc": bool(cfg.settings.oidc_issuer),
        },
        status_code=status,
    )
    set_login_nonce(response, nonce, https=client_of(request).scheme == "https")
    return response


@router.get("/login", response_class=HTMLResponse, dependencies=[Depends(public)])
def login_page(request: Request, templates: TemplatesDep, next: str | None = None) -> Response:
    return _login_page(request, templates, next_url=safe_next(next))


async def _small_form(request: Request, limit: int) -> dict[str, str]:
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise HTTPException(415, "send the form as application/x-www-form-urlencoded")
    body = await request.body()
    if len(body) > limit:
        raise HTTPException(413, "form too large")
    try:
        return dict(parse_qsl(body.decode(), keep_blank_values=True))
    except UnicodeDecodeError:
        raise HTTPException(400, "the form is not UTF-8") from None


@router.post("/login", response_class=HTMLResponse, dependencies=[Depends(public)])
async def login(request: Request, templates: TemplatesDep) -> Response:
    form = await _small_form(request, MAX_LOGIN_FORM)
    next_url = safe_next(form.get("next"))
    username = form.get("username", "").strip()[:100]
    password = form.get("password", "")
    cookie = request.cookies.get(LOGIN_NONCE_COOKIE, "")
    if not cookie or not hmac.compare_digest(cookie.encode(), form.get("nonce", "").encode()):
        return _login_page(
            request,
            templates,
            next_url=next_url,
            username=username,
            error="the login form expired: please try again",
            status=400,
        )
    if not username or not password or "\x00" in username + password:
        return _login_page(
            request,
            templates,
            next_url=next_url,
            username=username,
            error=GENERIC_FAILURE,
            status=401,
        )
    outcome, value = await run_in_threadpool(_attempt, request, username, password)
    if outcome == "throttled":
        wait = math.ceil(float(value))
        response = _login_page(
            request,
            templates,
            next_url=next_url,
            username=username,
            error=f"too many failed attempts: try again in {wait} s",
            status=429,
        )
        response.headers["Retry-After"] = str(wait)
        return response
    if outcome == "failed":
        return _login_page(
            request,
            templates,
            next_url=next_url,
            username=username,
            error=GENERIC_FAILURE,
            status=401,
        )
    redirect = RedirectResponse(next_url, status_code=303)
    set_session(redirect, str(value), https=client_of(request).scheme == "https")
    redirect.delete_cookie(LOGIN_NONCE_COOKIE, path="/login")
    return redirect


def _attempt(request: Request, username: str, password: str) -> tuple[str, str | float]:
    """('ok', session token) | ('failed', '') | ('throttled', seconds to wait)."""
    cfg: AccessConfig = request.app.state.access
    client = client_of(request)
    acct, src = throttle.account_key(username), throttle.source_key(client.address)
    who = Principal(username, None, "password", source=client.address)
    with request.app.state.engine.begin() as conn:
        throttle.lock(conn, acct)
        wait = throttle.wait_s(conn, [acct, src])
        if wait > 0:
            audit.record(
                conn,
                who,
                "login.throttled",
                object_type="user",
                object_name=username,
                outcome="denied",
            )
            return "throttled", wait
        user = users.authenticate(conn, username, password)
        if user is None:
            n = throttle.failed(conn, acct, throttle.ACCOUNT)
            throttle.failed(conn, src, throttle.SOURCE)
            audit.record(
                conn,
                who,
                "login.failure",
                object_type="user",
                object_name=username,
                outcome="denied",
                detail=f"failure {n} this hour for this account name",
            )
            return "failed", ""
        throttle.succeeded(conn, acct)
        token, _ = sessions.create(
            conn,
            user.id,
            via="password",
            source=client.address,
            user_agent=request.headers.get("user-agent", ""),
            max_hours=cfg.settings.session_max_hours,
        )
        me = Principal(user.name, user.role, "session", source=client.address, user_id=user.id)
        audit.record(conn, me, "login.success", object_type="user", object_name=user.name)
    return "ok", token


@router.post("/logout", dependencies=[Depends(require_viewer)])
def logout(request: Request, principal: ViewerDep) -> Response:
    response = RedirectResponse("/login", status_code=303)
    if principal.session_id is not None:
        with request.app.state.engine.begin() as conn:
            sessions.revoke(conn, principal.session_id)
            audit.record(conn, principal, "logout", object_type="user", object_name=principal.name)
    clear_session(response)
    return response


@router.get("/account", response_class=HTMLResponse, dependencies=[Depends(require_viewer)])
def account(request: Request, principal: ViewerDep, templates: TemplatesDep) -> Response:
    if principal.user_id is None:
        raise HTTPException(404, "you are not logged in: there is no account to show")
    cfg: AccessConfig = request.app.state.access
    with request.app.state.engine.connect() as conn:
        mine = sessions.for_user(
            conn, principal.user_id, idle_minutes=cfg.settings.session_idle_minutes
        )
        user = users.by_id(conn, principal.user_id)
    return templates.TemplateResponse(
        request,
        "account.html",
        {
            "title": "Your account",
            "active": "",
            "user": user,
            "sessions": mine,
            "current": principal.session_id,
        },
    )


@router.post("/account/sessions/{session_id}/revoke", dependencies=[Depends(require_viewer)])
def revoke_own_session(request: Request, session_id: int, principal: ViewerDep) -> Response:
    if principal.user_id is None:
        raise HTTPException(404, "you are not logged in")
    with request.app.state.engine.begin() as conn:
        if not sessions.revoke(conn, session_id, user_id=principal.user_id):
            raise HTTPException(404, "no such session of yours")
        audit.record(
            conn, principal, "session.revoke", object_type="session", object_name=str(session_id)
        )
    return RedirectResponse("/account?revoked=1", status_code=303)
