"""Endpoint binding: a stored password only ever goes to the endpoint it was given for.

An *endpoint* is everything that decides where a mode's logon goes and who it claims
to be: the target's kind, connect string (dsn) and user; the mode's transport and (for
PostgreSQL) its route (direct, unix socket, pgbouncer: the default port differs); and
the connection parameters that move it (``host``, ``port``, ``dbname``, ``sslmode``,
``options``; Oracle's ``config_dir``/``tns_admin`` that resolve an alias and
``wallet_location`` that holds its TLS trust). The mode's own parameters win over the
target's, as the agent applies them.

:func:`endpoint_id` is a digest of that; a sealed password carries the ids of every
endpoint its target's modes had when it was typed (:meth:`app.secrets.vault.Vault.seal`).
Writers refuse a change that adds an endpoint without a new password, and the agent
refuses to hand a password to an endpoint whose id it does not carry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ENDPOINT_PARAMS = (
    "host",
    "port",
    "dbname",
    "sslmode",
    "options",
    "config_dir",
    "tns_admin",
    "wallet_location",
)


@dataclass(frozen=True)
class Endpoint:
    """Where one mode logs on; ``fields`` are what :func:`endpoint_id` digests."""

    mode: str
    fields: dict[str, Any]

    @property
    def id(self) -> str:
        return endpoint_id(self.fields)


def endpoint_fields(
    *,
    kind: str,
    dsn: str,
    username: str,
    mode_kind: str,
    transport: str,
    target_params: Mapping[str, Any] | None,
    mode_params: Mapping[str, Any] | None,
) -> dict[str, Any]:
    merged = {**(target_params or {}), **(mode_params or {})}
    fields: dict[str, Any] = {
        "kind": kind,
        "dsn": dsn.strip(),
        "username": username.strip(),
        "transport": transport,
    }
    if kind == "postgres":
        fields["route"] = mode_kind
    for key in ENDPOINT_PARAMS:
        if key in merged:
            fields[key] = merged[key]
    return fields


def endpoint_id(fields: Mapping[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


_LABELS = {"dsn": "dsn", "username": "username", "kind": "kind", "transport": "transport"}


def changed_fields(old: Iterable[Endpoint], new: Iterable[Endpoint], bound: set[str]) -> list[str]:
    """What moved: for each new endpoint that ``bound`` lacks, the fields that differ from
    the same mode's old endpoint (or the mode's name when it is new)."""
    before = {e.mode: e.fields for e in old}
    out: list[str] = []
    for ep in new:
        if ep.id in bound:
            continue
        prev = before.get(ep.mode)
        if prev is None:
            out.append(f"new mode {ep.mode!r}")
            continue
        keys = sorted(k for k in set(prev) | set(ep.fields) if prev.get(k) != ep.fields.get(k))
        target_level = [k for k in keys if k in ("dsn", "username", "kind")]
        mode_level = [k for k in keys if k not in target_level]
        out += [_LABELS[k] for k in target_level]
        if mode_level:
            out.append(f"mode {ep.mode!r} {', '.join(mode_level)}")
    return sorted(dict.fromkeys(out))
