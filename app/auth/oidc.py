"""Single sign-on with OpenID Connect: authorization code flow with PKCE, state and nonce.

Discovery (``<issuer>/.well-known/openid-configuration``) and the provider's keys are
fetched with httpx and cached; the ID token is verified with joserfc (signature by a key
of the provider's JWKS, ``iss``, ``aud``, ``exp``, ``nonce``); PKCE challenges and tokens
come from Authlib. A login under way lives in the ``oidc_logins`` table (state, nonce,
PKCE verifier, where to go next), so any web process can finish a login another began;
it is good for 10 minutes and used once.

Who may log in and as what: the user's groups or roles (``CONNWATCH_OIDC_ROLE_CLAIM``,
from the ID token or userinfo) are mapped by ``CONNWATCH_OIDC_ROLES`` (highest wins),
else ``CONNWATCH_OIDC_DEFAULT_ROLE``; ``CONNWATCH_OIDC_ALLOWED_SUBJECTS``, when set,
admits only those subjects or e-mail addresses. No role: refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx2 as httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.auth.roles import Role, as_role, highest
from app.config import Settings

LOGIN_TTL_S = 600
CACHE_S = 3600
HTTP_TIMEOUT_S = 10.0
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"]


class OidcError(Exception):
    """The login cannot be completed; the message is safe to show."""


@dataclass(frozen=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str | None
    scopes: str
    role_claim: str
    roles: dict[str, Role]
    default_role: Role | None
    allowed: frozenset[str]
    redirect_url: str | None

    @classmethod
    def from_settings(cls, s: Settings) -> OidcConfig | None:
        if not s.oidc_issuer or not s.oidc_client_id:
            return None
        roles: dict[str, Role] = {}
        for item in s.oidc_roles:
            value, _, role = item.rpartition("=")
            roles[value.strip()] = as_role(role.strip())
        return cls(
            issuer=s.oidc_issuer.rstrip("/"),
            client_id=s.oidc_client_id,
            client_secret=s.oidc_client_secret.get_secret_value() if s.oidc_client_secret else None,
            scopes=s.oidc_scopes,
            role_claim=s.oidc_role_claim,
            roles=roles,
            default_role=None if s.oidc_default_role == "none" else as_role(s.oidc_default_role),
            allowed=frozenset(a.strip() for a in s.oidc_allowed_subjects),
            redirect_url=s.oidc_redirect_url,
        )


@dataclass
class _Cache:
    metadata: dict[str, Any] | None = None
    keys: KeySet | None = None
    at: float = 0.0
    by_issuer: dict[str, _Cache] = field(default_factory=dict)


_cache = _Cache()


async def _get_json(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    try:
        res = await client.get(url, timeout=HTTP_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise OidcError(f"the identity provider is unreachable ({type(exc).__name__})") from None
    if res.status_code != 200:
        raise OidcError(f"the identity provider answered {res.status_code} for {url}")
    try:
        doc = res.json()
    except ValueError:
        raise OidcError(f"the identity provider sent no JSON for {url}") from None
    if not isinstance(doc, dict):
        raise OidcError(f"the identity provider sent unexpected JSON for {url}")
    return doc


async def metadata(cfg: OidcConfig, *, refresh: bool = False) -> tuple[dict[str, Any], KeySet]:
    """The provider's discovery document and keys (cached for an hour)."""
    entry = _cache.by_issuer.setdefault(cfg.issuer, _Cache())
    if entry.metadata and entry.keys and not refresh and time.monotonic() - entry.at < CACHE_S:
        return entry.metadata, entry.keys
    async with httpx.AsyncClient() as client:
        meta = await _get_json(client, cfg.issuer + "/.well-known/openid-configuration")
        if meta.get("issuer", "").rstrip("/") != cfg.issuer:
            raise OidcError("the discovery document names another issuer")
        jwks = await _get_json(client, str(meta.get("jwks_uri", "")))
    try:
        keys = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError):
        raise OidcError("the identity provider's keys cannot be read") from None
    entry.metadata, entry.keys, entry.at = meta, keys, time.monotonic()
    return meta, keys


def begin(
    conn: Connection, cfg: OidcConfig, meta: dict[str, Any], redirect_uri: str, next_url: str
) -> str:
    """Store a new login (state, nonce, PKCE verifier) and return the provider's URL."""
    state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
    conn.execute(
        text("delete from oidc_logins where created_at < now() - make_interval(secs => :ttl)"),
        {"ttl": LOGIN_TTL_S},
    )
    conn.execute(
        text(
            "insert into oidc_logins (state, nonce, code_verifier, next_url, redirect_uri) "
            "values (:s, :n, :v, :next, :r)"
        ),
        {"s": state, "n": nonce, "v": verifier, "next": next_url, "r": redirect_uri},
    )
    query = urlencode(
        {
            "response_type": "code",
            "client_id": cfg.client_id,
            "redirect_uri": redirect_uri,
            "scope": cfg.scopes,
            "state": state,
            "nonce": nonce,
            "code_challenge": create_s256_code_challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    return f"{meta['authorization_endpoint']}?{query}"


@dataclass(frozen=True)
class PendingLogin:
    nonce: str
    code_verifier: str
    next_url: str
    redirect_uri: str


def take(conn: Connection, state: str) -> PendingLogin:
    """The login a callback's ``state`` belongs to (used once), or OidcError."""
    row = conn.execute(
        text(
            "delete from oidc_logins where state = :s and "
            "created_at > now() - make_interval(secs => :ttl) "
            "returning nonce, code_verifier, next_url, redirect_uri"
        ),
        {"s": state[:200], "ttl": LOGIN_TTL_S},
    ).first()
    if row is None:
        raise OidcError("this sign-in link expired or was already used: start again")
    return PendingLogin(row.nonce, row.code_verifier, row.next_url, row.redirect_uri)


@dataclass(frozen=True)
class Identity:
    subject: str  # issuer|sub, unique across providers
    name: str
    display_name: str
    email: str
    groups: tuple[str, ...]


async def finish(cfg: OidcConfig, pending: PendingLogin, code: str) -> Identity:
    """Exchange the code, verify the ID token, read userinfo; the user's identity."""
    meta, keys = await metadata(cfg)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "code_verifier": pending.code_verifier,
        "client_id": cfg.client_id,
    }
    async with httpx.AsyncClient() as client:
        try:
            if cfg.client_secret:
                res = await client.post(
                    str(meta["token_endpoint"]),
                    data=form,
                    auth=(cfg.client_id, cfg.client_secret),
                    timeout=HTTP_TIMEOUT_S,
                )
            else:
                res = await client.post(
                    str(meta["token_endpoint"]), data=form, timeout=HTTP_TIMEOUT_S
                )
        except httpx.HTTPError as exc:
            raise OidcError(
                f"the identity provider is unreachable ({type(exc).__name__})"
            ) from None
        if res.status_code != 200:
            raise OidcError(f"the identity provider refused the code ({res.status_code})")
        tokens = res.json()
        claims = _verify_id_token(cfg, keys, str(tokens.get("id_token", "")), pending.nonce)
        if meta.get("userinfo_endpoint") and tokens.get("access_token"):
            info = await client.get(
                str(meta["userinfo_endpoint"]),
                headers={"Authorization": f"Bearer {tokens['access_token']}"},
                timeout=HTTP_TIMEOUT_S,
            )
            if info.status_code == 200:
                extra = info.json()
                if isinstance(extra, dict) and extra.get("sub") == claims.get("sub"):
                    claims = {**extra, **claims}
    return _identity(cfg, claims)


def _verify_id_token(cfg: OidcConfig, keys: KeySet, id_token: str, nonce: str) -> dict[str, Any]:
    try:
        token = jwt.decode(id_token, keys, algorithms=ALGORITHMS)
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": cfg.issuer},
            aud={"essential": True, "value": cfg.client_id},
            sub={"essential": True},
            exp={"essential": True},
            nonce={"essential": True, "value": nonce},
        ).validate(token.claims)
    except (JoseError, ValueError) as exc:
        raise OidcError(f"the ID token is not valid ({type(exc).__name__})") from None
    return dict(token.claims)


def _identity(cfg: OidcConfig, claims: dict[str, Any]) -> Identity:
    raw = claims.get(cfg.role_claim, [])
    groups = tuple(str(g) for g in raw) if isinstance(raw, list) else (str(raw),) if raw else ()
    sub = str(claims["sub"])
    email = str(claims.get("email") or "")
    name = str(claims.get("preferred_username") or email or sub)
    return Identity(
        subject=f"{cfg.issuer}|{sub}",
        name=name,
        display_name=str(claims.get("name") or name),
        email=email,
        groups=groups,
    )


def role_for(cfg: OidcConfig, ident: Identity) -> Role | None:
    """The role this identity gets, or None when it may not log in."""
    if cfg.allowed:
        sub = ident.subject.split("|", 1)[1]
        if not ({sub, ident.email} & cfg.allowed):
            return None
    mapped = highest([r for g, r in cfg.roles.items() if g in ident.groups])
    return mapped or cfg.default_role
