"""From stored rows (targets, modes, series) to a :class:`~app.probes.spec.ProbeSpec`.

Parameters come from the target's ``params`` overlaid by the mode's ``params`` (the
mode wins). Oracle keys: ``cclass``, ``purity`` (default/new/self),
``pool_boundary`` (statement/transaction), ``sdu``, ``connect_timeout`` (seconds or
a duration such as ``3s``), ``wallet_location``, ``wallet_password_ref``
(``env:NAME``/``file:PATH``), ``config_dir`` (or ``tns_admin``; default
``Settings.tns_admin``). The mode's kind gives the server type; its transport
``tcps`` selects TLS, ``ipc`` needs thick mode (``Settings.oracle_client_lib_dir``,
which also switches every Oracle mode to thick mode).

PostgreSQL: the target's dsn is ``host[:port]/dbname``. Keys: ``host`` (``unix``
modes: the socket directory, default ``/var/run/postgresql``; ``pgbouncer_*``
modes: pgbouncer's host, default the dsn's), ``port`` (pgbouncer default 6432),
``dbname``, ``connect_timeout``, ``sslmode``, ``options`` (extra libpq keywords).

Anything wrong raises :class:`SpecError` with a message naming the series, target,
mode and key; the agent turns it into ERROR samples (class PROBE, code
``PROBE-CONFIG``: probe-side, not the target's failure).
The password is resolved by :func:`resolve_password` only when a probe is created,
and lives only inside the endpoint in memory.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.config import Settings
from app.probes.spec import (
    OracleEndpoint,
    OracleServerType,
    PgRoute,
    PostgresEndpoint,
    ProbeSpec,
    Purity,
)
from app.secrets import SecretError, Vault
from app.secrets.binding import endpoint_fields, endpoint_id
from app.secrets.references import resolve_reference
from app.targets.durations import parse_duration_ms
from app.targets.params import ORACLE_KEYS, POSTGRES_KEYS


class SpecError(ValueError):
    """A series cannot be turned into a probe; the message says what and where."""


_PG_DSN = re.compile(r"^(?:postgres(?:ql)?://)?(\[[^\]]+\]|[^:/\s]+)(?::(\d+))?/([^/\s?]+)$")
DEFAULT_SOCKET_DIR = "/var/run/postgresql"


@dataclass(frozen=True, slots=True)
class SeriesRow:
    """One enabled series with its mode and target, as the agent needs them."""

    series_id: int
    probe: str
    interval_ms: int
    timeout_ms: int
    params: dict[str, Any]
    site: str
    mode_id: int
    mode_name: str
    mode_kind: str
    transport: str
    mode_params: dict[str, Any]
    target_id: int
    target_name: str
    target_kind: str
    dsn: str
    username: str
    password_enc: str | None
    password_ref: str | None
    target_params: dict[str, Any]
    ref_binding: str | None = None

    @property
    def label(self) -> str:
        return f"series {self.series_id} ({self.target_name}/{self.mode_name}/{self.probe})"


_SELECT = """
select s.id as series_id, s.probe, s.interval_ms, s.timeout_ms, s.params, s.site,
       m.id as mode_id, m.name as mode_name, m.kind as mode_kind, m.transport,
       m.params as mode_params, t.id as target_id, t.name as target_name,
       t.kind as target_kind, t.dsn, t.username, t.password_enc, t.password_ref,
       t.params as target_params, t.ref_binding
from series s join modes m on m.id = s.mode_id join targets t on t.id = m.target_id
"""
_ENABLED = "s.enabled and m.enabled and t.enabled and s.site = :site"

FINGERPRINT_SQL = text(
    "select count(*), md5(coalesce(string_agg(concat_ws('|', s.id, s.probe, s.interval_ms, "
    "s.timeout_ms, s.params::text, s.updated_at, m.kind, m.transport, m.params::text, "
    "t.kind, t.dsn, t.username, t.password_enc, t.password_ref, t.ref_binding, "
    "t.params::text, "
    "t.updated_at), ',' order by s.id), '')) "
    "from series s join modes m on m.id = s.mode_id join targets t on t.id = m.target_id "
    f"where {_ENABLED}"
)


def fingerprint(conn: Connection, site: str) -> str:
    """A cheap digest of everything that decides this site's schedule."""
    count, digest = conn.execute(FINGERPRINT_SQL, {"site": site}).one()
    return f"{count}:{digest}"


def load_series(conn: Connection, site: str) -> dict[int, SeriesRow]:
    """The enabled series of ``site`` (series, mode and target all enabled)."""
    rows = conn.execute(text(_SELECT + f" where {_ENABLED} order by s.id"), {"site": site})
    return {r.series_id: SeriesRow(**r._asdict()) for r in rows}


def load_for_request(conn: Connection, target_id: int, mode_id: int, probe: str) -> SeriesRow:
    """A one-off row for a "test now" request (the mode need not have a series)."""
    row = conn.execute(
        text(
            "select 0 as series_id, :probe as probe, 10000 as interval_ms, 10000 as timeout_ms,"
            " '{}'::jsonb as params, '' as site, m.id as mode_id, m.name as mode_name,"
            " m.kind as mode_kind, m.transport, m.params as mode_params, t.id as target_id,"
            " t.name as target_name, t.kind as target_kind, t.dsn, t.username,"
            " t.password_enc, t.password_ref, t.params as target_params, t.ref_binding"
            " from modes m join targets t on t.id = m.target_id"
            " where m.id = :mode and t.id = :target"
        ),
        {"mode": mode_id, "target": target_id, "probe": probe},
    ).one_or_none()
    if row is None:
        raise SpecError(f"no mode {mode_id} of target {target_id}")
    return SeriesRow(**row._asdict())


def resolve_password(row: SeriesRow, vault: Vault, settings: Settings) -> str:
    """The target's password for this series' endpoint, or :class:`SpecError`.

    A typed password goes only to an endpoint it was sealed for, and a reference only
    where it was set for (``ref_binding``) and inside the allow lists of ``settings``
    (app.secrets.references): whatever the row says now, a secret never follows a
    connect string that was changed without it.
    """
    here = endpoint_id(
        endpoint_fields(
            kind=row.target_kind,
            dsn=row.dsn,
            username=row.username,
            mode_kind=row.mode_kind,
            transport=row.transport,
            target_params=row.target_params,
            mode_params=row.mode_params,
        )
    )
    moved = (
        "was given for another endpoint (host, port, service or database, user): "
        "give the password again for this one"
    )
    try:
        if row.password_enc is not None:
            sealed = vault.open(row.password_enc)
            if sealed.endpoints is not None and here not in sealed.endpoints:
                raise SecretError(f"the stored password {moved}")
            return sealed.secret
        if row.password_ref is not None:
            if row.ref_binding is not None:
                bound = vault.open(row.ref_binding)
                if bound.secret != row.password_ref or (
                    bound.endpoints is not None and here not in bound.endpoints
                ):
                    raise SecretError(f"the password reference {moved}")
            return resolve_reference(row.password_ref, settings)
        return ""
    except SecretError as exc:
        raise SpecError(f"{row.label}: target {row.target_name!r}: {exc}") from None


def _params(row: SeriesRow, known: frozenset[str]) -> dict[str, Any]:
    merged = {**(row.target_params or {}), **(row.mode_params or {})}
    unknown = sorted(set(merged) - known)
    if unknown:
        raise SpecError(
            f"{row.label}: unknown {row.target_kind} parameter(s) {', '.join(unknown)} in target "
            f"{row.target_name!r} / mode {row.mode_name!r} (known: {', '.join(sorted(known))})"
        )
    return merged


def _seconds(row: SeriesRow, key: str, value: Any) -> float:
    try:
        ms = parse_duration_ms(value)
    except ValueError as exc:
        raise SpecError(f"{row.label}: parameter {key!r}: {exc} (got {value!r})") from None
    if ms <= 0:
        raise SpecError(f"{row.label}: parameter {key!r} must be positive (got {value!r})")
    return ms / 1000.0


def _str(row: SeriesRow, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise SpecError(f"{row.label}: parameter {key!r} must be a non-empty string, got {value!r}")
    return value


def _int(row: SeriesRow, key: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise SpecError(
            f"{row.label}: parameter {key!r} must be an integer {lo}..{hi}, got {value!r}"
        )
    return value


_EZ_PORT = re.compile(
    r"^(?P<scheme>tcps?://)?(?P<host>\[[^\]]+\]|[^:/\s()]+)(?::\d+)?(?P<rest>/.*)$"
)


def with_port(row: SeriesRow, dsn: str, port: int) -> str:
    """The Easy Connect ``dsn`` with its port replaced (a mode's ``port``, e.g. the tcps
    listener's); other connect strings name their ports themselves."""
    m = _EZ_PORT.match(dsn.strip())
    if m is None:
        raise SpecError(
            f"{row.label}: parameter 'port' needs an Easy Connect dsn (host:port/service), "
            f"not {dsn!r}"
        )
    return f"{m.group('scheme') or ''}{m.group('host')}:{port}{m.group('rest')}"


def _bool(row: SeriesRow, key: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise SpecError(f"{row.label}: parameter {key!r} must be true or false, got {value!r}")


def _choice(row: SeriesRow, key: str, value: Any, choices: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if str(value) not in choices:
        raise SpecError(
            f"{row.label}: parameter {key!r} must be one of {', '.join(choices)}, got {value!r}"
        )
    return str(value)


def oracle_endpoint(row: SeriesRow, password: str, settings: Settings) -> OracleEndpoint:
    p = _params(row, ORACLE_KEYS)
    try:
        server_type = OracleServerType(row.mode_kind)
    except ValueError:
        raise SpecError(f"{row.label}: {row.mode_kind!r} is not an Oracle mode") from None
    thick = str(settings.oracle_client_lib_dir) if settings.oracle_client_lib_dir else None
    if row.transport not in ("tcp", "tcps", "ipc"):
        raise SpecError(f"{row.label}: transport {row.transport!r} is not one Oracle uses")
    if row.transport == "ipc" and thick is None:
        raise SpecError(
            f"{row.label}: transport 'ipc' needs thick mode: set CONNWATCH_ORACLE_CLIENT_LIB_DIR"
        )
    purity = Purity.DEFAULT
    if "purity" in p:
        try:
            purity = Purity(str(p["purity"]).lower())
        except ValueError:
            raise SpecError(
                f"{row.label}: parameter 'purity' must be default, new or self, got {p['purity']!r}"
            ) from None
    boundary = p.get("pool_boundary")
    if boundary is not None and boundary not in ("statement", "transaction"):
        raise SpecError(
            f"{row.label}: parameter 'pool_boundary' must be statement or transaction, "
            f"got {boundary!r}"
        )
    wallet_pw = None
    if "wallet_password_ref" in p:
        try:
            wallet_pw = resolve_reference(
                _str(row, "wallet_password_ref", p["wallet_password_ref"]), settings
            )
        except SecretError as exc:
            raise SpecError(f"{row.label}: {exc}") from None
    config_dir = p.get("config_dir", p.get("tns_admin"))
    if config_dir is None and settings.tns_admin is not None:
        config_dir = str(settings.tns_admin)
    dsn = row.dsn
    if "port" in p:
        dsn = with_port(row, dsn, _int(row, "port", p["port"], 1, 65535))
    return OracleEndpoint(
        connect=dsn,
        user=row.username,
        password=password,
        server_type=server_type,
        cclass=_str(row, "cclass", p["cclass"]) if "cclass" in p else None,
        purity=purity,
        pool_boundary=boundary,
        protocol=row.transport,
        wallet_location=(
            _str(row, "wallet_location", p["wallet_location"]) if "wallet_location" in p else None
        ),
        wallet_password=wallet_pw,
        sdu=_int(row, "sdu", p["sdu"], 512, 2_097_152) if "sdu" in p else None,
        connect_timeout_s=(
            _seconds(row, "connect_timeout", p["connect_timeout"])
            if "connect_timeout" in p
            else None
        ),
        config_dir=_str(row, "config_dir", config_dir) if config_dir is not None else None,
        thick_lib_dir=thick,
        ssl_ca_file=_str(row, "ssl_ca_file", p["ssl_ca_file"]) if "ssl_ca_file" in p else None,
        ssl_server_dn_match=_bool(row, "ssl_server_dn_match", p.get("ssl_server_dn_match")),
        ssl_server_cert_dn=(
            _str(row, "ssl_server_cert_dn", p["ssl_server_cert_dn"])
            if "ssl_server_cert_dn" in p
            else None
        ),
        ssl_version=_choice(row, "ssl_version", p.get("ssl_version"), ("1.2", "1.3")),
        instance_name=(
            _str(row, "instance_name", p["instance_name"]) if "instance_name" in p else None
        ),
    )


def postgres_endpoint(row: SeriesRow, password: str) -> PostgresEndpoint:
    p = _params(row, POSTGRES_KEYS)
    m = _PG_DSN.match(row.dsn.strip())
    if m is None:
        raise SpecError(
            f"{row.label}: target {row.target_name!r}: dsn {row.dsn!r} is not host[:port]/dbname"
        )
    host = m.group(1).strip("[]")
    port = int(m.group(2) or 5432)
    dbname = m.group(3)
    try:
        route = PgRoute(row.mode_kind) if row.mode_kind.startswith("pgbouncer") else PgRoute.DIRECT
    except ValueError:
        raise SpecError(f"{row.label}: {row.mode_kind!r} is not a PostgreSQL mode") from None
    if row.mode_kind == "unix" or row.transport == "unix":
        host = _str(row, "host", p.get("host", DEFAULT_SOCKET_DIR))
        if not host.startswith("/"):
            raise SpecError(
                f"{row.label}: parameter 'host' of a unix mode must be the socket directory "
                f"(an absolute path), got {host!r}"
            )
    elif row.mode_kind not in ("direct", "pgbouncer_session", "pgbouncer_transaction"):
        raise SpecError(f"{row.label}: {row.mode_kind!r} is not a PostgreSQL mode")
    else:
        host = _str(row, "host", p.get("host", host))
    if "port" in p:
        port = _int(row, "port", p["port"], 1, 65535)
    elif route is not PgRoute.DIRECT:
        port = 6432
    if "dbname" in p:
        dbname = _str(row, "dbname", p["dbname"])
    options = p.get("options", {})
    if not isinstance(options, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in options.items()
    ):
        raise SpecError(f"{row.label}: parameter 'options' must map libpq keywords to strings")
    return PostgresEndpoint(
        host=host,
        port=port,
        dbname=dbname,
        user=row.username,
        password=password or None,
        route=route,
        connect_timeout_s=(
            _seconds(row, "connect_timeout", p["connect_timeout"])
            if "connect_timeout" in p
            else None
        ),
        sslmode=_str(row, "sslmode", p["sslmode"]) if "sslmode" in p else None,
        options=dict(options),
    )


def _monitoring_account(row: SeriesRow, ep: OracleEndpoint, settings: Settings) -> OracleEndpoint:
    """serverstats may log on as a monitoring account of its own (``user`` with
    ``password_ref``, resolved now) instead of the target's account."""
    user = (row.params or {}).get("user") if row.probe == "serverstats" else None
    if not user:
        return ep
    ref = (row.params or {}).get("password_ref")
    try:
        password = resolve_reference(_str(row, "password_ref", ref), settings)
    except SecretError as exc:
        raise SpecError(f"{row.label}: {exc}") from None
    return dataclasses.replace(ep, user=_str(row, "user", user), password=password)


def build_spec(
    row: SeriesRow,
    vault: Vault,
    settings: Settings,
    *,
    agent: str | None = None,
    site: str | None = None,
    deadline_s: float | None = None,
) -> ProbeSpec:
    """The probe spec of one series, password resolved now. Raises :class:`SpecError`."""
    password = resolve_password(row, vault, settings)
    endpoint: OracleEndpoint | PostgresEndpoint
    if row.target_kind == "oracle":
        endpoint = oracle_endpoint(row, password, settings)
        endpoint = _monitoring_account(row, endpoint, settings)
    elif row.target_kind == "postgres":
        endpoint = postgres_endpoint(row, password)
    else:
        raise SpecError(f"{row.label}: unknown target kind {row.target_kind!r}")
    return ProbeSpec(
        kind=row.probe,
        endpoint=endpoint,
        deadline_s=deadline_s if deadline_s is not None else row.timeout_ms / 1000.0,
        params=dict(row.params or {}),
        series_id=row.series_id or None,
        agent=agent,
        site=site,
    )
