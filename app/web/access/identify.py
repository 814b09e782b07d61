"""Who is asking: a bearer token, an auth proxy's user, a session cookie, or the
anonymous role (in that order). Runs in a worker thread (it reads the store)."""

from __future__ import annotations

from fastapi import HTTPException, Request
from sqlalchemy.engine import Connection

from app.auth import sessions, tokens, users
from app.auth.network import Client, in_networks, resolve_client
from app.auth.principal import Principal
from app.auth.roles import Role, highest
from app.web.access.config import SECURE_SESSION_COOKIE, SESSION_COOKIE, AccessConfig


class NotAuthenticated(Exception):
    """No usable credentials (or bad ones): 401, or the login page for a browser."""

    def __init__(self, message: str = "log in first", *, bearer: bool = False) -> None:
        super().__init__(message)
        self.bearer = bearer


def client_of(request: Request) -> Client:
    client = getattr(request.state, "client", None)
    if isinstance(client, Client):
        return client
    cfg: AccessConfig = request.app.state.access
    peer = request.client.host if request.client else ""
    client = resolve_client(
        peer,
        request.url.scheme,
        request.headers.get("x-forwarded-for"),
        request.headers.get("x-forwarded-proto"),
        cfg.trusted_proxies,
    )
    request.state.client = client
    return client


def session_cookie(request: Request) -> str | None:
    return request.cookies.get(SECURE_SESSION_COOKIE) or request.cookies.get(SESSION_COOKIE)


def identify(request: Request) -> Principal:
    cfg: AccessConfig = request.app.state.access
    client = client_of(request)
    auth = request.headers.get("authorization")
    with request.app.state.engine.begin() as conn:
        if auth:
            return _bearer(conn, auth, client)
        if cfg.settings.proxy_user_header and client.via_trusted_proxy:
            name = request.headers.get(cfg.settings.proxy_user_header, "").strip()
            if name:
                return _proxy_user(conn, request, cfg, name, client)
        token = session_cookie(request)
        if token:
            info = sessions.lookup(conn, token, idle_minutes=cfg.settings.session_idle_minutes)
            if info is not None:
                return Principal(
                    name=info.user_name,
                    role=info.role,
                    via="session",
                    source=client.address,
                    user_id=info.user_id,
                    session_id=info.id,
                    csrf_token=info.csrf_token,
                )
    if cfg.anonymous_role is not None and in_networks(client.address, cfg.anonymous_networks):
        return Principal("anonymous", cfg.anonymous_role, "anonymous", source=client.address)
    return Principal("anonymous", None, "anonymous", source=client.address)


def _bearer(conn: Connection, auth: str, client: Client) -> Principal:
    scheme, _, value = auth.partition(" ")
    if scheme.lower() != "bearer":
        raise NotAuthenticated("only Bearer tokens are accepted", bearer=True)
    info = tokens.authenticate(conn, value.strip(), source=client.address)
    if info is None:
        raise NotAuthenticated("invalid, expired or revoked token", bearer=True)
    return Principal(
        name=info.user_name,
        role=info.role,
        via="token",
        source=client.address,
        user_id=info.user_id,
        token_id=info.id,
        scope=info.scope,
    )


def _proxy_user(
    conn: Connection, request: Request, cfg: AccessConfig, name: str, client: Client
) -> Principal:
    """A user an auth proxy vouches for; their role follows their groups on every request.
    A session row gives them an anti-forgery token (the proxy's login is ambient too)."""
    s = cfg.settings
    groups_raw = request.headers.get(s.proxy_groups_header, "") if s.proxy_groups_header else ""
    groups = {g.strip() for g in groups_raw.split(",") if g.strip()}
    role: Role | None = highest([r for g, r in cfg.proxy_roles.items() if g in groups])
    if role is None and s.proxy_default_role != "none":
        role = s.proxy_default_role
    if role is None:
        raise HTTPException(403, f"the auth proxy's user {name[:64]!r} has no connwatch role")
    try:
        users.check_name(name)
    except users.UserError as exc:
        raise HTTPException(403, str(exc)) from None
    user = users.get(conn, name)
    if user is None or user.kind != "proxy" or user.role != role:
        if user is not None and user.kind != "proxy":
            raise HTTPException(403, f"{name!r} is a {user.kind} account, not an auth-proxy one")
        user = users.upsert_external(
            conn, kind="proxy", external_id=f"proxy|{name}", name=name, display_name=name, role=role
        )
    if user.disabled:
        raise HTTPException(403, f"the account {name!r} is disabled")
    csrf = _proxy_session(conn, request, cfg, user.id, client)
    return Principal(
        name=user.name,
        role=role,
        via="proxy",
        source=client.address,
        user_id=user.id,
        csrf_token=csrf,
    )


def _proxy_session(
    conn: Connection, request: Request, cfg: AccessConfig, user_id: int, client: Client
) -> str:
    token = session_cookie(request)
    if token:
        info = sessions.lookup(conn, token, idle_minutes=cfg.settings.session_idle_minutes)
        if info is not None and info.user_id == user_id:
            return info.csrf_token
    token, csrf = sessions.create(
        conn,
        user_id,
        via="proxy",
        source=client.address,
        user_agent=request.headers.get("user-agent", ""),
        max_hours=cfg.settings.session_max_hours,
    )
    request.state.set_session = token
    return csrf
