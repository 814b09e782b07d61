"""What a writer may store for a target, and its password bound to its endpoints.

Every writer of targets (``targets import``, the web form, the API, the demo) goes
through :func:`app.targets.sync.import_targets`, which applies a :class:`WritePolicy`:

- **references and file paths are admin-only**: a password reference (``env:``/``file:``)
  and the parameters that make the client read a file or name a secret
  (:data:`PRIVILEGED_PARAMS`) may be set or changed only by an admin (the CLI acts as
  one); an operator may only type a password, and keeps what an admin set;
- **references obey the allow lists** (:class:`app.secrets.ReferencePolicy`), checked when
  written (refused with the rule) and again when resolved;
- **nothing points into the data directory**: no unix-socket directory and no
  wallet/config directory inside it (the embedded store's socket lives there; the
  demo's own target cluster in ``<data_dir>/demo-pg`` is the one exception);
- **networks**: with ``CONNWATCH_TARGET_NETWORKS`` set, every TCP host of the target must
  resolve into those networks (a tnsnames alias, which hides its host, is refused);
- **caps**: at most ``CONNWATCH_MAX_SERIES_PER_TARGET`` series, no interval below
  ``CONNWATCH_MIN_INTERVAL_MS``;
- **binding**: a typed password is sealed with the ids of the endpoints of every mode
  of the target (app.secrets.binding); a change that adds an endpoint (host, port,
  service or database, user, TLS or alias settings) without a new password is refused
  naming what changed. A reference is bound the same way (``targets.ref_binding``).

Violations raise :class:`PolicyError` (a :class:`~app.targets.schema.TargetsFileError`),
whose message names the target and field; the transaction then writes nothing.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from app.auth.network import Network, in_networks, networks
from app.config import Settings, get_settings
from app.models import modes, series, targets
from app.secrets import ReferencePolicy, ReferenceRefused, SecretError, Vault, is_reference
from app.secrets.binding import Endpoint, changed_fields
from app.secrets.placement import dsn_problem, options_problems, wallet_password_problem
from app.secrets.rotate import target_endpoints
from app.targets.schema import TargetEntry, TargetsFileError

PRIVILEGED_PARAMS = ("wallet_location", "wallet_password_ref", "config_dir", "tns_admin")
PATH_PARAMS = ("wallet_location", "config_dir", "tns_admin")
DEMO_TARGET_DIR = "demo-pg"


class PolicyError(TargetsFileError):
    """A target may not be stored as given; ``field`` says where (``modes[1].params``...)."""

    def __init__(self, target: str, field: str, message: str) -> None:
        super().__init__([f"target {target!r}: {field}: {message}"])
        self.target = target
        self.field = field
        self.message = message


@dataclass(frozen=True)
class WritePolicy:
    admin: bool = True
    references: ReferencePolicy = field(default_factory=ReferencePolicy)
    data_dir: Path | None = None
    networks: tuple[Network, ...] = ()
    max_series_per_target: int = 64
    min_interval_ms: int = 1000

    @classmethod
    def from_settings(cls, s: Settings, *, admin: bool = True) -> WritePolicy:
        return cls(
            admin=admin,
            references=ReferencePolicy.from_settings(s),
            data_dir=Path(os.path.realpath(s.data_dir)),
            networks=networks(s.target_networks),
            max_series_per_target=s.max_series_per_target,
            min_interval_ms=s.min_interval_ms,
        )


def default_policy() -> WritePolicy:
    return WritePolicy.from_settings(get_settings())


@dataclass(frozen=True)
class Stored:
    """A target as stored before a write: what an operator must leave alone, and its binding."""

    id: int
    password_enc: str | None
    password_ref: str | None
    ref_binding: str | None
    params: dict[str, Any]
    mode_params: dict[str, dict[str, Any]]
    endpoints: list[Endpoint]


def stored(conn: Connection, name: str) -> Stored | None:
    row = conn.execute(select(targets).where(targets.c.name == name)).mappings().first()
    if row is None:
        return None
    mrows = conn.execute(select(modes.c.name, modes.c.params).where(modes.c.target_id == row["id"]))
    return Stored(
        id=int(row["id"]),
        password_enc=row["password_enc"],
        password_ref=row["password_ref"],
        ref_binding=row["ref_binding"],
        params=dict(row["params"] or {}),
        mode_params={m.name: dict(m.params or {}) for m in mrows},
        endpoints=target_endpoints(conn, int(row["id"])),
    )


# -- checks on the entry, before anything is written -----------------------------------


def check_entry(entry: TargetEntry, before: Stored | None, policy: WritePolicy) -> None:
    _check_placement(entry)
    _check_password(entry, before, policy)
    where_params = [("params", entry.params, (before.params if before else {}))]
    for i, m in enumerate(entry.modes):
        old = before.mode_params.get(m.name, {}) if before else {}
        where_params.append((f"modes[{i}].params", m.params, old))
    for where, params, old in where_params:
        _check_privileged(entry.name, where, params, old, policy)
        _check_paths(entry.name, where, params, policy)
    for i, m in enumerate(entry.modes):
        host = {**entry.params, **m.params}.get("host")
        unix = m.transport == "unix" or m.kind == "unix"
        if unix and isinstance(host, str) and _in_data_dir(host, policy):
            raise PolicyError(
                entry.name, f"modes[{i}].params.host",
                "a unix socket directory inside connwatch's data directory is never a "
                "target (the store's own socket is there)",
            )  # fmt: skip
    _check_caps(entry, policy)
    if policy.networks:
        _check_networks(entry, policy)


def _check_placement(entry: TargetEntry) -> None:
    """No password outside the password field (app.secrets.placement)."""
    problem = dsn_problem(entry.dsn)
    if problem:
        raise PolicyError(entry.name, "dsn", problem)
    where_params = [("params", entry.params)]
    where_params += [(f"modes[{i}].params", m.params) for i, m in enumerate(entry.modes)]
    for where, params in where_params:
        if "options" in params and entry.kind == "postgres":
            found = options_problems(params["options"])
            if found:
                raise PolicyError(entry.name, where, found[0])
        if "wallet_password_ref" in params:
            wallet = wallet_password_problem(params["wallet_password_ref"])
            if wallet:
                raise PolicyError(entry.name, f"{where}.wallet_password_ref", wallet)


def _check_password(entry: TargetEntry, before: Stored | None, policy: WritePolicy) -> None:
    pw = entry.password
    if pw is None or not is_reference(pw):
        return
    if before is not None and pw == before.password_ref:
        return  # unchanged
    if not policy.admin:
        raise PolicyError(
            entry.name, "password",
            "only an admin may set a password reference (env:/file:); type the password "
            "instead: it is encrypted and bound to this target's endpoint",
        )  # fmt: skip
    try:
        policy.references.check(pw)
    except ReferenceRefused as exc:
        raise PolicyError(entry.name, "password", str(exc)) from None


def _check_privileged(
    name: str, where: str, params: dict[str, Any], old: dict[str, Any], policy: WritePolicy
) -> None:
    for key in PRIVILEGED_PARAMS:
        if params.get(key) == old.get(key):
            continue
        if not policy.admin:
            raise PolicyError(
                name, f"{where}.{key}",
                "only an admin may set or change it (it makes connwatch read a file or a "
                "secret on the probing host)",
            )  # fmt: skip
        if key == "wallet_password_ref" and key in params:
            try:
                policy.references.check(str(params[key]))
            except ReferenceRefused as exc:
                raise PolicyError(name, f"{where}.{key}", str(exc)) from None


def _in_data_dir(path: str, policy: WritePolicy) -> bool:
    """``path`` (symlinks resolved) is the data directory or inside it (but not the demo's
    own target cluster)."""
    if policy.data_dir is None or not path.startswith("/"):
        return False
    real, root = Path(os.path.realpath(path)), policy.data_dir
    demo = root / DEMO_TARGET_DIR
    if real == demo or demo in real.parents:
        return False
    return real == root or root in real.parents


def _check_paths(name: str, where: str, params: dict[str, Any], policy: WritePolicy) -> None:
    for key in PATH_PARAMS:
        value = params.get(key)
        if isinstance(value, str) and _in_data_dir(value, policy):
            raise PolicyError(
                name, f"{where}.{key}", "must not point into connwatch's data directory"
            )


def _check_caps(entry: TargetEntry, policy: WritePolicy) -> None:
    n = sum(len(m.probes) for m in entry.modes)
    if n > policy.max_series_per_target:
        raise PolicyError(
            entry.name, "modes",
            f"{n} probe series; at most {policy.max_series_per_target} per target "
            "(CONNWATCH_MAX_SERIES_PER_TARGET)",
        )  # fmt: skip
    for i, m in enumerate(entry.modes):
        for j, p in enumerate(m.probes):
            if p.interval < policy.min_interval_ms:
                raise PolicyError(
                    entry.name, f"modes[{i}].probes[{j}].interval",
                    f"{p.interval} ms is below the smallest interval allowed here, "
                    f"{policy.min_interval_ms} ms (CONNWATCH_MIN_INTERVAL_MS)",
                )  # fmt: skip


_EZ_HOST = re.compile(r"^(?:[a-z]+://)?/{0,2}(\[[^\]]+\]|[^:/\s?]+)", re.I)
_DESC_HOST = re.compile(r"\(\s*HOST\s*=\s*([^)\s]+)\s*\)", re.I)


def hosts_of(entry: TargetEntry) -> list[tuple[str, str]]:
    """(field, host) for every TCP host the target's modes reach; a tnsnames alias gives
    ("dsn", "") since its host is not known here."""
    out: list[tuple[str, str]] = []
    dsn = entry.dsn.strip()
    if "(" in dsn:
        base = [("dsn", h) for h in _DESC_HOST.findall(dsn)]
    else:
        m = _EZ_HOST.match(dsn)
        alias = entry.kind == "oracle" and not any(c in dsn for c in ":/")
        base = [("dsn", "" if alias or m is None else m.group(1).strip("[]"))]
    for i, mode in enumerate(entry.modes):
        merged = {**entry.params, **mode.params}
        if mode.transport == "unix" or mode.kind == "unix":
            continue
        if "host" in merged and entry.kind == "postgres":
            out.append((f"modes[{i}].params.host", str(merged["host"])))
        else:
            out.extend(base)
    return list(dict.fromkeys(out))


def _check_networks(entry: TargetEntry, policy: WritePolicy) -> None:
    for where, host in hosts_of(entry):
        if not host:
            raise PolicyError(
                entry.name, where,
                "a tnsnames alias hides its host, and CONNWATCH_TARGET_NETWORKS is set: use "
                "an Easy Connect string (host:port/service)",
            )  # fmt: skip
        problem = outside_networks(host, policy.networks)
        if problem:
            raise PolicyError(entry.name, where, problem)


def network_problem(entry: TargetEntry, policy: WritePolicy) -> str | None:
    """Why a stored target may not be reached now ("test now" re-checks it: the networks
    may have been narrowed since it was written), or None."""
    if not policy.networks:
        return None
    try:
        _check_networks(entry, policy)
    except PolicyError as exc:
        return f"{exc.field}: {exc.message}"
    return None


def outside_networks(host: str, nets: tuple[Network, ...]) -> str | None:
    """Why ``host`` may not be reached under CONNWATCH_TARGET_NETWORKS (None: it may)."""
    try:
        addrs = [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return f"{host!r} does not resolve, and CONNWATCH_TARGET_NETWORKS is set"
        addrs = sorted({str(i[4][0]) for i in infos})
    bad = [a for a in addrs if not in_networks(a, nets)]
    if bad:
        return (
            f"{host!r} ({', '.join(bad)}) is outside the networks targets may reach "
            "(CONNWATCH_TARGET_NETWORKS)"
        )
    return None


# -- after the upsert: the secret, bound to the endpoints the target has now --------------


def store_secret(
    conn: Connection, tid: int, entry: TargetEntry, before: Stored | None, vault: Vault
) -> bool:
    """Write (or keep) the target's secret, sealed for its current endpoints; True when a
    column was written. The same secret already sealed for these endpoints is kept (each
    encryption gives a new token, so re-importing a file changes nothing)."""
    now = target_endpoints(conn, tid)
    ids = {e.id for e in now}
    values: dict[str, Any] | None = None
    if entry.password_encrypted is not None:
        try:
            sealed = vault.open(entry.password_encrypted)
        except SecretError as exc:
            raise PolicyError(entry.name, "password_encrypted", str(exc)) from None
        if sealed.endpoints is None or not ids <= sealed.endpoints:
            raise PolicyError(
                entry.name, "password_encrypted",
                "was encrypted for another endpoint (host, port, service or user): give the "
                "password again",
            )  # fmt: skip
        if before is None or before.password_enc != entry.password_encrypted:
            values = {
                "password_enc": entry.password_encrypted,
                "password_ref": None,
                "ref_binding": None,
            }
    elif entry.password is not None and is_reference(entry.password):
        if (
            before is None
            or before.password_ref != entry.password
            or not ids <= _bound(before, vault)
        ):
            values = {
                "password_enc": None,
                "password_ref": entry.password,
                "ref_binding": vault.seal(entry.password, sorted(ids)),
            }
    elif entry.password is not None:
        if not _same_literal(before, entry.password, ids, vault):
            values = {
                "password_enc": vault.seal(entry.password, sorted(ids)),
                "password_ref": None,
                "ref_binding": None,
            }
    elif before is not None and (before.password_enc or before.password_ref):
        bound = _bound(before, vault)
        if not ids <= bound:
            what = changed_fields(before.endpoints, now, bound) or ["the endpoint"]
            raise PolicyError(
                entry.name, "password",
                f"changing {', '.join(what)} needs the password again (a stored password only "
                "goes to the endpoint it was given for)",
            )  # fmt: skip
    if values is None:
        return False
    conn.execute(update(targets).where(targets.c.id == tid).values(**values, updated_at=func.now()))
    return True


def _same_literal(before: Stored | None, password: str, ids: set[str], vault: Vault) -> bool:
    if before is None or not before.password_enc:
        return False
    try:
        sealed = vault.open(before.password_enc)
    except SecretError:
        return False
    return sealed.secret == password and sealed.endpoints is not None and ids <= sealed.endpoints


def _bound(before: Stored, vault: Vault) -> set[str]:
    """The endpoints a stored secret may go to. One stored before binding existed is taken
    as bound to the endpoints its target had until this write."""
    legacy = {e.id for e in before.endpoints}
    try:
        if before.password_enc:
            sealed = vault.open(before.password_enc)
            return set(sealed.endpoints) if sealed.endpoints is not None else legacy
        if before.password_ref:
            if not before.ref_binding:
                return legacy
            sealed = vault.open(before.ref_binding)
            if sealed.secret != before.password_ref or sealed.endpoints is None:
                return set()
            return set(sealed.endpoints)
    except SecretError:
        return set()
    return set()


def check_series_cap(conn: Connection, tid: int, name: str, policy: WritePolicy) -> None:
    """After the upsert: the target's series (kept ones included) within the cap."""
    n = conn.execute(
        select(func.count())
        .select_from(series.join(modes, modes.c.id == series.c.mode_id))
        .where(modes.c.target_id == tid)
    ).scalar_one()
    if n > policy.max_series_per_target:
        raise PolicyError(
            name, "modes",
            f"the target would have {n} probe series; at most {policy.max_series_per_target} "
            "(CONNWATCH_MAX_SERIES_PER_TARGET)",
        )  # fmt: skip
