"""Every setting connwatch has, in one place (environment prefix ``CONNWATCH_``).

The README's settings table is generated from this class's fields and tested
against it, so a setting cannot exist without being documented.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# A list setting is written as comma-separated values: CONNWATCH_ALLOWED_HOSTS=a.corp,b.corp
CommaList = Annotated[list[str], NoDecode]
RoleOrNone = Literal["none", "viewer", "operator", "admin"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="CONNWATCH_",
        env_file=None,
        extra="ignore",
        validate_default=True,
    )

    database_url: SecretStr | None = Field(
        default=None,
        description=(
            "PostgreSQL (>= 14) URL, e.g. postgresql://user:pw@host:5432/connwatch. "
            "Unset: connwatch runs its own embedded PostgreSQL in the data directory."
        ),
    )
    data_dir: Path = Field(
        default=Path(".connwatch"),
        description="Where the embedded PostgreSQL, the generated key and the spool live.",
    )
    host: str = Field(default="127.0.0.1", description="Address the web server binds to.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port the web server binds to.")
    secret_key: SecretStr | None = Field(
        default=None,
        description=(
            "Fernet key that encrypts stored target passwords. Unset: read from "
            "secret_key_file, or generated there on first run."
        ),
    )
    secret_key_file: Path | None = Field(
        default=None,
        description="File holding the Fernet key. Default: <data_dir>/secret.key (mode 0600).",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level."
    )
    log_format: Literal["text", "json"] = Field(
        default="text", description="Log line format: human text or one JSON object per line."
    )
    retention_raw_days: int = Field(
        default=35, ge=1, description="Days raw samples are kept (whole partitions dropped)."
    )
    retention_1m_days: int = Field(default=400, ge=1, description="Days 1-minute rollups are kept.")
    retention_1h_days: int = Field(
        default=1826, ge=1, description="Days 1-hour rollups are kept (default 5 years)."
    )
    compact_after_days: int = Field(
        default=2,
        ge=1,
        le=35,
        description=(
            "Whole UTC days of raw samples older than this are rewritten into one compressed "
            "row per series and hour."
        ),
    )
    partition_days_ahead: int = Field(
        default=7, ge=1, le=90, description="Daily sample partitions created ahead of time."
    )
    agent_name: str | None = Field(
        default=None, description="This agent's name. Default: <hostname>-<pid>."
    )
    site: str = Field(default="default", description="Vantage point this agent probes from.")
    spool_max_mb: int = Field(
        default=512,
        ge=1,
        description="Upper bound of the agent's local spool while the store is away.",
    )
    web_workers: int = Field(
        default=0,
        ge=0,
        le=256,
        description=(
            "Web worker processes of 'connwatch web' and 'serve' (they share the port); "
            "0 = one per CPU core."
        ),
    )
    web_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description=(
            "How much lower the web worker processes' CPU priority is (nice) than the "
            "agent's: a busy dashboard must not delay probes. 0 = the same."
        ),
    )
    agent_workers: int = Field(
        default=0,
        ge=0,
        le=256,
        description=(
            "Worker processes of one agent, each with its own event loop and its share of "
            "the series; 0 = one per CPU core (1 = everything in the agent's process)."
        ),
    )
    # The agent's tuning knobs (app.agent.options.AgentOptions has the same defaults).
    agent_max_in_flight: int = Field(
        default=512,
        ge=1,
        le=100_000,
        description="Probe runs executing at once in one agent, all series together.",
    )
    agent_logons_per_s: float = Field(
        default=200.0,
        gt=0,
        le=100_000,
        description="Logons per second one agent may start, all targets together.",
    )
    agent_target_logons_per_s: float = Field(
        default=20.0,
        gt=0,
        le=10_000,
        description="Logons per second one agent may start against one target.",
    )
    agent_max_late_s: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description=(
            "A run that cannot start within min(interval/2, this) of its instant is "
            "recorded as skipped."
        ),
    )
    agent_thick_threads: int = Field(
        default=8,
        ge=1,
        le=1024,
        description="Worker threads for thick-mode (blocking) driver calls.",
    )
    agent_write_batch: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        description="Samples per COPY batch written to the store.",
    )
    agent_write_threads: int = Field(
        default=2,
        ge=1,
        le=32,
        description="Batches written at once, each on its own store connection.",
    )
    agent_flush_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        description="A sample waits at most this long before its batch is written.",
    )
    agent_retry_s: float = Field(
        default=1.0,
        gt=0,
        le=300,
        description="While the store is unreachable, how often the agent tries it again.",
    )
    agent_memory_backlog_max: int = Field(
        default=200_000,
        ge=0,
        le=100_000_000,
        description="Samples held in memory when even the spool is full (beyond: dropped, loudly).",
    )
    agent_stop_grace_s: float = Field(
        default=10.0,
        ge=0,
        le=3600,
        description="On SIGTERM, how long to wait for runs in flight and to replay the spool.",
    )
    agent_wal: Literal["fsync", "write", "off"] = Field(
        default="fsync",
        description=(
            "The agent's write-ahead log of measured samples: fsync (written at once, synced "
            "to the disk right behind), write (survives a killed agent, not a power cut) or off."
        ),
    )
    agent_wal_commit_ms: int = Field(
        default=20,
        ge=1,
        le=90,
        description=(
            "Group commit of the write-ahead log: samples measured within this many ms "
            "share one write; a sample is on disk this long (plus one write) after it ends."
        ),
    )
    oracle_client_lib_dir: Path | None = Field(
        default=None,
        description="Oracle Client library directory: enables thick mode (and IPC) when set.",
    )
    tns_admin: Path | None = Field(
        default=None, description="Directory with tnsnames.ora / sqlnet.ora for TNS aliases."
    )
    reports_enabled: bool = Field(
        default=True,
        description="Send scheduled reports from this web process (one sender of all).",
    )
    report_chromium: Path | None = Field(
        default=None,
        description="Chromium binary that prints report PDFs (default: chromium on PATH).",
    )

    # --- notifications and alerting (app/notify, app/alerts; docs/alerts.md) -------------
    public_url: str | None = Field(
        default=None,
        description=(
            "Base URL people open connwatch at (links in alert and report messages). "
            "Default: http://<host>:<port>."
        ),
    )
    smtp_host: str | None = Field(
        default=None, description="SMTP server for e-mail notifications and reports (unset: off)."
    )
    smtp_port: int = Field(default=587, ge=1, le=65535, description="SMTP server port.")
    smtp_security: Literal["starttls", "tls", "none"] = Field(
        default="starttls",
        description="starttls (upgrade after connecting), tls (implicit TLS, port 465), or none.",
    )
    smtp_username: str | None = Field(default=None, description="SMTP login (unset: no AUTH).")
    smtp_password: SecretStr | None = Field(default=None, description="SMTP password.")
    smtp_password_file: Path | None = Field(
        default=None, description="File holding the SMTP password (instead of smtp_password)."
    )
    smtp_from: str = Field(
        default="connwatch@localhost", description="Sender address of every e-mail."
    )
    smtp_ca_file: Path | None = Field(
        default=None,
        description="PEM file of the CA(s) that sign the SMTP server's certificate "
        "(default: the system's).",
    )
    smtp_timeout_s: float = Field(
        default=30.0, gt=0, le=600, description="Timeout of one SMTP conversation (seconds)."
    )
    notify_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Timeout of one webhook / Slack / Alertmanager call.",
    )
    notify_give_up_h: float = Field(
        default=24.0,
        gt=0,
        le=720,
        description="A notification still undelivered this many hours after it was queued fails.",
    )
    notify_retention_days: int = Field(
        default=90,
        ge=1,
        description="Days delivered or failed notifications and their log are kept.",
    )
    alerts_enabled: bool = Field(
        default=True,
        description="Run the alert evaluator and notification delivery (in one process of all).",
    )
    alerts_eval_interval_s: float = Field(
        default=15.0, ge=1, le=3600, description="Seconds between two alert evaluations."
    )
    alerts_lease_s: float = Field(
        default=45.0,
        ge=3,
        le=3600,
        description="The evaluator's lease: another process takes over after this long without "
        "renewal.",
    )
    alerts_history_days: int = Field(
        default=1826, ge=1, description="Days alert state transitions are kept."
    )

    # -- access control (app/auth, app/web/access; README "Security") --------------------
    anonymous_role: Literal["none", "viewer"] = Field(
        default="none",
        description=(
            "Role of a request without login from CONNWATCH_ANONYMOUS_NETWORKS: none, or "
            "viewer (read-only dashboard; the demo sets it)."
        ),
    )
    anonymous_networks: CommaList = Field(
        default=["127.0.0.0/8", "::1/128"],
        description="Client networks the anonymous role applies to (default: loopback only).",
    )
    allowed_hosts: CommaList = Field(
        default=[],
        description=(
            "Host header names the web answers to (DNS rebinding guard); '*.corp' matches "
            "subdomains. Empty: localhost, 127.0.0.1, ::1 and CONNWATCH_HOST."
        ),
    )
    trusted_proxies: CommaList = Field(
        default=[],
        description=(
            "Networks of reverse proxies whose X-Forwarded-For/-Proto and auth-proxy headers "
            "are believed. Empty: none."
        ),
    )
    session_idle_minutes: int = Field(
        default=480, ge=5, le=43_200, description="A login session ends after this idle time."
    )
    session_max_hours: int = Field(
        default=168, ge=1, le=8_760, description="A login session ends this long after login."
    )
    metrics_public: bool = Field(
        default=False,
        description="Serve /metrics without a token (else: a bearer token with read scope).",
    )
    metrics_cache_s: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="A web process answers /metrics with its last exposition for this long.",
    )
    overview_cache_s: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="A web process reuses the overview's per-mode figures for this long.",
    )
    reads_cache_s: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="A web process answers the same chart, comparison or sample-table "
        "request with the store reads it made for it this long ago.",
    )
    oidc_issuer: str | None = Field(
        default=None, description="OpenID Connect issuer URL: enables single sign-on."
    )
    oidc_client_id: str | None = Field(default=None, description="OIDC client id.")
    oidc_client_secret: SecretStr | None = Field(default=None, description="OIDC client secret.")
    oidc_scopes: str = Field(default="openid profile email", description="OIDC scopes requested.")
    oidc_role_claim: str = Field(
        default="groups", description="ID token / userinfo claim holding groups or roles."
    )
    oidc_roles: CommaList = Field(
        default=[],
        description="Claim value to role, e.g. 'dba=operator,dba-leads=admin' (highest wins).",
    )
    oidc_default_role: RoleOrNone = Field(
        default="none",
        description="Role of an allowed OIDC user no mapping matches (none: refused).",
    )
    oidc_allowed_subjects: CommaList = Field(
        default=[],
        description="If set, only these OIDC subjects or e-mail addresses may log in.",
    )
    oidc_redirect_url: str | None = Field(
        default=None,
        description=(
            "OIDC callback URL registered at the provider. Default: <origin>/login/oidc/callback."
        ),
    )
    proxy_user_header: str | None = Field(
        default=None,
        description=(
            "Auth-proxy header naming the user (e.g. X-Forwarded-User): enables proxy auth "
            "from CONNWATCH_TRUSTED_PROXIES."
        ),
    )
    proxy_groups_header: str | None = Field(
        default=None, description="Auth-proxy header listing the user's groups (comma-separated)."
    )
    proxy_roles: CommaList = Field(
        default=[], description="Proxy group to role, e.g. 'dba=operator,admins=admin'."
    )
    proxy_default_role: RoleOrNone = Field(
        default="none", description="Role of a proxy user no group maps (none: refused)."
    )
    # -- secrets and what a target may point at (app/secrets) ----------------------------
    secret_file_dirs: CommaList = Field(
        default=[],
        description=(
            "Directories file: password references may read from. Empty: file: references are off."
        ),
    )
    secret_env_prefix: str = Field(
        default="",
        description=(
            "Prefix of the variables env: password references may read. "
            "Empty: env: references are off."
        ),
    )
    target_networks: CommaList = Field(
        default=[],
        description="If set, targets and test now may only reach these networks (CIDRs).",
    )
    max_series_per_target: int = Field(
        default=64, ge=1, le=10_000, description="Probe series one target may have (all modes)."
    )
    min_interval_ms: int = Field(
        default=1000, ge=100, le=3_600_000, description="Smallest probe interval, in ms."
    )
    test_now_per_minute: int = Field(
        default=20, ge=1, le=10_000, description="'Test now' runs one user may start per minute."
    )

    @field_validator(
        "anonymous_networks",
        "allowed_hosts",
        "trusted_proxies",
        "oidc_roles",
        "oidc_allowed_subjects",
        "proxy_roles",
        "secret_file_dirs",
        "target_networks",
        mode="before",
    )
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [part.strip() for part in v.split(",") if part.strip()]
        return v

    @field_validator("anonymous_networks", "trusted_proxies", "target_networks", mode="after")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        import ipaddress

        for net in v:
            try:
                ipaddress.ip_network(net, strict=False)
            except ValueError:
                raise ValueError(f"{net!r} is not a network (e.g. 10.0.0.0/8 or ::1/128)") from None
        return v

    @field_validator("oidc_roles", "proxy_roles", mode="after")
    @classmethod
    def _role_map(cls, v: list[str]) -> list[str]:
        for item in v:
            value, sep, role = item.rpartition("=")
            if not sep or not value or role not in ("viewer", "operator", "admin"):
                raise ValueError(f"{item!r}: write VALUE=ROLE with ROLE viewer, operator or admin")
        return v

    @field_validator("secret_env_prefix", mode="after")
    @classmethod
    def _narrow_prefix(cls, v: str) -> str:
        if v and (len(v) < 4 or not v.endswith("_")):
            raise ValueError("the prefix must be at least 4 characters and end with '_'")
        return v

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute_data_dir(cls, v: Path) -> Path:
        return v.expanduser().resolve()

    @property
    def key_file(self) -> Path:
        return self.secret_key_file or (self.data_dir / "secret.key")

    @property
    def embedded(self) -> bool:
        return self.database_url is None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
