"""The session cookie: ``HttpOnly``, ``SameSite=Lax``, ``Path=/``; over https also
``Secure`` with the ``__Host-`` prefix (no Domain, so no sibling host can set or read it)."""

from __future__ import annotations

from fastapi import Response

from app.web.access.config import LOGIN_NONCE_COOKIE, SECURE_SESSION_COOKIE, SESSION_COOKIE


def session_cookie_name(https: bool) -> str:
    return SECURE_SESSION_COOKIE if https else SESSION_COOKIE


def session_cookie_header(token: str, *, https: bool, max_age: int | None = None) -> str:
    parts = [f"{session_cookie_name(https)}={token}", "Path=/", "HttpOnly", "SameSite=Lax"]
    if https:
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts)


def set_session(response: Response, token: str, *, https: bool) -> None:
    response.headers.append("set-cookie", session_cookie_header(token, https=https))


def clear_session(response: Response) -> None:
    for https in (False, True):
        response.headers.append("set-cookie", session_cookie_header("", https=https, max_age=0))


def set_login_nonce(response: Response, nonce: str, *, https: bool) -> None:
    parts = [
        f"{LOGIN_NONCE_COOKIE}={nonce}",
        "Path=/login",
        "HttpOnly",
        "SameSite=Strict",
        "Max-Age=3600",
    ]
    if https:
        parts.append("Secure")
    response.headers.append("set-cookie", "; ".join(parts))
