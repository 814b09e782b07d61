"""Addresses: who the client is behind trusted proxies, and network allow lists.

``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only when the direct peer is
in ``CONNWATCH_TRUSTED_PROXIES``; the client is then the right-most address of the chain
that is not itself a trusted proxy (so a client cannot prepend a fake address).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(values: Iterable[str]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(v, strict=False) for v in values)


def in_networks(address: str, nets: Sequence[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == n.version and ip in n for n in nets)


@dataclass(frozen=True, slots=True)
class Client:
    address: str
    scheme: str  # http | https, as the client used it
    via_trusted_proxy: bool


def resolve_client(
    peer: str | None,
    scheme: str,
    forwarded_for: str | None,
    forwarded_proto: str | None,
    trusted: Sequence[Network],
) -> Client:
    peer = peer or ""
    if not trusted or not in_networks(peer, trusted):
        return Client(peer, scheme, False)
    address = peer
    if forwarded_for:
        chain = [a.strip() for a in forwarded_for.split(",") if a.strip()]
        for hop in reversed(chain):
            address = hop
            if not in_networks(hop, trusted):
                break
    proto = (forwarded_proto or "").split(",")[0].strip().lower()
    return Client(address[:100], proto if proto in ("http", "https") else scheme, True)
