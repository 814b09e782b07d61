"""Plain, typed descriptions of what a probe is asked to measure.

The agent and the CLI build these from stored targets and modes; a probe receives
one :class:`ProbeSpec`. Credentials arrive already resolved (the store decrypts
them); they live only in memory, are excluded from ``repr`` and are never logged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class OracleServerType(enum.StrEnum):
    """Oracle Net ``(SERVER=...)``: how the listener hands over the session."""

    DEDICATED = "dedicated"
    SHARED = "shared"
    POOLED = "pooled"  # DRCP


class Purity(enum.StrEnum):
    """DRCP session purity (sent in auth phase two)."""

    DEFAULT = "default"
    NEW = "new"
    SELF = "self"


class PgRoute(enum.StrEnum):
    """How a PostgreSQL mode reaches the server (the analogue of Oracle's server types)."""

    DIRECT = "direct"
    PGBOUNCER_SESSION = "pgbouncer_session"
    PGBOUNCER_TRANSACTION = "pgbouncer_transaction"


@dataclass(frozen=True, slots=True)
class OracleEndpoint:
    """One Oracle mode.

    ``connect`` is an Easy Connect string (``host:port/service[:server]``, or the
    full ``tcps://host:port/service?...`` form), a ``(DESCRIPTION=...)`` descriptor,
    or a tnsnames.ora alias looked up in ``config_dir`` (TNS_ADMIN). Values written
    inside ``connect`` win over the fields below (python-oracledb thin semantics).
    """

    connect: str
    user: str
    password: str = field(repr=False)
    server_type: OracleServerType | None = None
    cclass: str | None = None
    purity: Purity = Purity.DEFAULT
    pool_boundary: str | None = None  # "statement" | "transaction" (implicit pooling)
    protocol: str = "tcp"  # "tcp" | "tcps" (thin); "ipc" only with thick mode
    wallet_location: str | None = None  # a directory with ewallet.pem (the CA, for tcps)
    wallet_password: str | None = field(default=None, repr=False)
    ssl_ca_file: str | None = None  # tcps: trust this CA (PEM file) instead of the system's
    ssl_server_dn_match: bool | None = None  # tcps: check the certificate (driver default on)
    ssl_server_cert_dn: str | None = None  # tcps: the subject DN the certificate must carry
    ssl_version: str | None = None  # tcps: "1.2" or "1.3" only
    instance_name: str | None = None  # RAC: connect to this instance only (INSTANCE_NAME)
    sdu: int | None = None
    connect_timeout_s: float | None = None  # python-oracledb tcp_connect_timeout
    config_dir: str | None = None  # TNS_ADMIN for tnsnames.ora aliases
    thick_lib_dir: str | None = None  # Oracle Client libraries: opt into thick mode

    @property
    def kind(self) -> str:
        return "oracle"

    def describe(self) -> str:
        """A loggable, secret-free label."""
        st = f" server={self.server_type}" if self.server_type else ""
        return f"oracle {self.user}@{self.connect}{st}"


@dataclass(frozen=True, slots=True)
class PostgresEndpoint:
    """One PostgreSQL mode.

    ``host`` is a host name / address (TCP) or a directory holding the server's
    unix socket (a path starting with ``/``). ``route`` says whether a pgbouncer
    sits in between and in which pool mode (recorded, and it changes what the
    ``sid`` means: the backend pid that served this session's query).
    """

    host: str
    port: int
    dbname: str
    user: str
    password: str | None = field(default=None, repr=False)
    route: PgRoute = PgRoute.DIRECT
    connect_timeout_s: float | None = None
    sslmode: str | None = None
    options: dict[str, str] = field(default_factory=dict)  # extra libpq keywords

    @property
    def kind(self) -> str:
        return "postgres"

    @property
    def unix_socket(self) -> bool:
        return self.host.startswith("/")

    def describe(self) -> str:
        return f"postgres {self.user}@{self.host}:{self.port}/{self.dbname} ({self.route})"


Endpoint = OracleEndpoint | PostgresEndpoint


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    """What to run: the probe kind, the endpoint, its parameters and the deadline.

    ``params`` are the probe kind's own knobs (see each probe module's
    ``Params``); unknown keys are an error raised before anything is measured.
    """

    kind: str
    endpoint: Endpoint
    deadline_s: float = 10.0
    params: dict[str, Any] = field(default_factory=dict)
    series_id: int | None = None
    agent: str | None = None
    site: str | None = None
