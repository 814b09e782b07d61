"""The relational schema (SQLAlchemy Core tables).

Migrations in ``migrations/versions`` create exactly these tables; a test
compares the migrated database with this metadata.

- ``targets``: one database (an Oracle service or a PostgreSQL server). Its
  credentials are either a Fernet token (``password_enc``) or a reference
  resolved only when a probe runs (``password_ref``: ``env:NAME`` / ``file:PATH``).
- ``modes``: one way of connecting to a target (dedicated / shared / pooled,
  direct / unix / pgbouncer ...).
- ``series``: one (mode, probe kind, site) with its interval and parameters.
- ``samples``: one row per probe run, range-partitioned by day on
  ``scheduled_at``; ``(series_id, scheduled_at)`` is the key, so writing the
  same sample twice is harmless (``ON CONFLICT DO NOTHING``).
- ``agents``: one row per agent process, its heartbeat and self-monitoring.
- ``server_stats`` / ``server_stats_1h``: what the server saw (the serverstats probe),
  one row per run and instance, and per hour (migration 0015, docs/store.md).

The store's own tables (rollups at 1 minute / 1 hour / 1 day / 1 week, the queue of
minutes to roll up) are defined by their migrations and documented in docs/store.md.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REAL

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

TARGET_KINDS = ("oracle", "postgres")
ORACLE_MODES = ("dedicated", "shared", "pooled")
POSTGRES_MODES = ("direct", "unix", "pgbouncer_session", "pgbouncer_transaction")
PROBE_KINDS = ("connping", "sessionping", "poolacquire", "commit", "sweep", "serverstats")
SAMPLE_STATUSES = ("ok", "error", "timeout", "skipped")


def _one_of(column: str, values: tuple[str, ...]) -> CheckConstraint:
    """CHECK that ``column`` holds one of ``values``, named for the column."""
    listed = ",".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} in ({listed})", name=column)


def _ts(name: str, nullable: bool = False, default_now: bool = False) -> Column[object]:
    return Column(
        name,
        DateTime(timezone=True),
        nullable=nullable,
        server_default=func.now() if default_now else None,
    )


targets = Table(
    "targets",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("kind", Text, nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    # Connect string without credentials: Easy Connect, a tnsnames alias, or host:port/db.
    Column("dsn", Text, nullable=False),
    Column("username", Text, nullable=False),
    Column("password_enc", Text, nullable=True),
    Column("password_ref", Text, nullable=True),
    # the reference and the endpoints it is bound to, encrypted (app/secrets/binding.py)
    Column("ref_binding", Text, nullable=True),
    Column("params", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("labels", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    _ts("created_at", default_now=True),
    _ts("updated_at", default_now=True),
    _one_of("kind", TARGET_KINDS),
    CheckConstraint(
        "not (password_enc is not null and password_ref is not null)", name="one_secret"
    ),
)

modes = Table(
    "modes",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("target_id", ForeignKey("targets.id", ondelete="CASCADE"), nullable=False),
    Column("name", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("transport", Text, nullable=False, server_default="tcp"),
    Column("params", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    UniqueConstraint("target_id", "name", name="uq_modes_target_name"),
    _one_of("kind", ORACLE_MODES + POSTGRES_MODES),
    _one_of("transport", ("tcp", "tcps", "ipc", "unix")),
)

series = Table(
    "series",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("mode_id", ForeignKey("modes.id", ondelete="CASCADE"), nullable=False),
    Column("probe", Text, nullable=False),
    Column("interval_ms", Integer, nullable=False),
    Column("timeout_ms", Integer, nullable=False),
    Column("params", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("enabled", Boolean, nullable=False, server_default=text("true")),
    Column("site", Text, nullable=False, server_default="default"),
    _ts("created_at", default_now=True),
    _ts("updated_at", default_now=True),
    UniqueConstraint("mode_id", "probe", "site", name="uq_series_mode_probe_site"),
    _one_of("probe", PROBE_KINDS),
    CheckConstraint("interval_ms >= 100", name="interval"),
    CheckConstraint("timeout_ms > 0 and timeout_ms <= interval_ms", name="timeout"),
)

# Partitioned by range on scheduled_at (one partition per UTC day); the migration
# creates it with PARTITION BY and the partition helper function.
samples = Table(
    "samples",
    metadata,
    Column("series_id", Integer, nullable=False, primary_key=True),
    Column("scheduled_at", DateTime(timezone=True), nullable=False, primary_key=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("status", Text, nullable=False),
    Column("total_ns", BigInteger),
    Column("logon_ns", BigInteger),
    Column("ping_ns", BigInteger),
    Column("query_ns", BigInteger),
    Column("logoff_ns", BigInteger),
    Column("commit_ns", BigInteger),
    Column("acquire_ns", BigInteger),
    Column("round_trips", SmallInteger),
    Column("logon_phases", JSONB),
    Column("error_class", Text),
    Column("error_code", Text),
    Column("error_phase", Text),
    Column("error_message", Text),
    Column("sid", Integer),
    Column("serial", Integer),
    Column("instance", Text),
    Column("service", Text),
    Column("server_type", Text),
    Column("agent", Text),
    Column("site", Text),
    Column("extra", JSONB),
    _one_of("status", SAMPLE_STATUSES),
    # failed samples are rare: a partial index finds them (error markers, outages)
    Index(
        "ix_samples_not_ok",
        "series_id",
        "scheduled_at",
        postgresql_where=text("status <> 'ok'"),
    ),
    postgresql_partition_by="RANGE (scheduled_at)",
)

agents = Table(
    "agents",
    metadata,
    Column("id", Integer, Identity(), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("site", Text, nullable=False),
    Column("version", Text, nullable=False),
    Column("hostname", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    _ts("started_at", default_now=True),
    _ts("heartbeat_at", default_now=True),
    Column("stats", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
)

# --- the agent's tables (migration 0020) -------------------------------------------

# Which agent runs which series now (informational; the agent's advisory lock on the
# series is the truth). Rows of a dead agent stay until another agent takes over.
agent_assignments = Table(
    "agent_assignments",
    metadata,
    Column(
        "series_id", ForeignKey("series.id", ondelete="CASCADE"), primary_key=True, nullable=False
    ),
    Column("agent", Text, nullable=False),
    Column("site", Text, nullable=False),
    _ts("since", default_now=True),
    # which worker process of the agent (0: the first, or an agent without workers)
    Column("worker", SmallInteger, nullable=False, server_default="0"),
)

PROBE_REQUEST_STATUSES = ("pending", "running", "done", "error")

# "Test now": the web inserts a pending row; an agent claims it (FOR UPDATE SKIP
# LOCKED), runs the probe once and stores the result JSON (see docs/agent.md).
probe_requests = Table(
    "probe_requests",
    metadata,
    Column("id", BigInteger, Identity(), primary_key=True),
    Column("target_id", ForeignKey("targets.id", ondelete="CASCADE"), nullable=False),
    Column("mode_id", ForeignKey("modes.id", ondelete="CASCADE"), nullable=False),
    Column("probe", Text, nullable=False, server_default="connping"),
    Column("params", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("timeout_ms", Integer, nullable=False, server_default="10000"),
    Column("site", Text, nullable=True),  # NULL: any agent; else an agent of that site
    _ts("requested_at", default_now=True),
    Column("status", Text, nullable=False, server_default="pending"),
    Column("claimed_by", Text, nullable=True),
    _ts("claimed_at", nullable=True),
    _ts("finished_at", nullable=True),
    Column("result", JSONB, nullable=True),
    _one_of("status", PROBE_REQUEST_STATUSES),
    _one_of("probe", PROBE_KINDS),
    CheckConstraint("timeout_ms > 0 and timeout_ms <= 300000", name="timeout"),
)

# --- what the server saw (migration 0015) --------------------------------------------

# One row per serverstats run and instance; metrics maps each derived number to its value.
server_stats = Table(
    "server_stats",
    metadata,
    Column("series_id", Integer, nullable=False, primary_key=True),
    Column("scheduled_at", DateTime(timezone=True), nullable=False, primary_key=True),
    Column("inst_id", SmallInteger, nullable=False, primary_key=True),
    Column("instance", Text),
    Column("startup", Text),
    Column("interval_s", Float),
    Column("reset", Boolean, nullable=False, server_default=text("false")),
    Column("metrics", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("classes", JSONB),
    Column("unavailable", JSONB),
    Column("chart", ARRAY(REAL)),  # the charted figures (SERVER_CHART_METRICS), migration 0016
    Index("ix_server_stats_scheduled_at", "scheduled_at"),
)

# Per series, instance and UTC hour: metrics maps each number to [mean, max, n].
server_stats_1h = Table(
    "server_stats_1h",
    metadata,
    Column("series_id", Integer, nullable=False, primary_key=True),
    Column("bucket", DateTime(timezone=True), nullable=False, primary_key=True),
    Column("inst_id", SmallInteger, nullable=False, primary_key=True),
    Column("instance", Text),
    Column("n", Integer, nullable=False),
    Column("n_reset", Integer, nullable=False, server_default="0"),
    Column("metrics", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
)
