"""The web's access settings, parsed once per app from :class:`~app.config.Settings`."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.auth.network import Network, networks
from app.auth.roles import Role, as_role
from app.config import Settings

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
SESSION_COOKIE = "connwatch_session"
SECURE_SESSION_COOKIE = "__Host-connwatch_session"  # https only: Secure, Path=/, no Domain
LOGIN_NONCE_COOKIE = "connwatch_login"


def role_map(items: list[str]) -> dict[str, Role]:
    out: dict[str, Role] = {}
    for item in items:
        value, _, role = item.rpartition("=")
        out[value.strip()] = as_role(role.strip())
    return out


@dataclass(frozen=True)
class AccessConfig:
    settings: Settings
    anonymous_role: Role | None
    anonymous_networks: tuple[Network, ...]
    trusted_proxies: tuple[Network, ...]
    allowed_hosts: tuple[str, ...]
    proxy_roles: dict[str, Role] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, s: Settings) -> AccessConfig:
        hosts = [h.lower() for h in s.allowed_hosts]
        if not hosts:
            hosts = list(LOOPBACK_NAMES)
            if s.host not in ("0.0.0.0", "::", ""):
                hosts.append(s.host.lower())
        return cls(
            settings=s,
            anonymous_role=None if s.anonymous_role == "none" else as_role(s.anonymous_role),
            anonymous_networks=networks(s.anonymous_networks),
            trusted_proxies=networks(s.trusted_proxies),
            allowed_hosts=tuple(hosts),
            proxy_roles=role_map(s.proxy_roles),
        )

    def host_allowed(self, host_header: str) -> bool:
        host = _hostname(host_header)
        if not host:
            return False
        for allowed in self.allowed_hosts:
            if allowed == "*" or host == allowed.strip("[]"):
                return True
            if allowed.startswith("*.") and host.endswith(allowed[1:]):
                return True
        return False


def _hostname(host_header: str) -> str:
    h = host_header.strip().lower()
    if h.startswith("["):  # [v6]:port
        return h[1 : h.find("]")] if "]" in h else ""
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h
