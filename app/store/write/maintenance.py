"""One maintenance pass: partitions ahead, pending rollups, compaction, retention.

The agent (or ``serve``) calls :func:`maintain` every ~10 s. Each step is
idempotent and safe to run from several processes at once: partition DDL is
serialised by an advisory lock, rollups run in one process at a time, a day is
compacted (:mod:`app.store.write.packed`) under its own lock and only once its rollups
are complete, at most one day per pass, and
retention only drops partitions wholly past their horizon (never a raw day whose
minutes still wait for their rollup).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from psycopg.errors import DeadlockDetected, LockNotAvailable
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from app.config import Settings, get_settings
from app.store.write.packed import CompactReport, compact_pending
from app.store.write.partitions import RetentionReport, apply_retention, ensure_partitions
from app.store.write.rollups import RollupReport, roll_up_pending
from app.store.write.serverstats import prune_server_stats


@dataclass(slots=True)
class MaintenanceReport:
    partitions_created: int = 0
    rollup: RollupReport = field(default_factory=RollupReport)
    compacted: list[CompactReport] = field(default_factory=list)
    retention: RetentionReport = field(default_factory=RetentionReport)
    server_stats_deleted: int = 0


def maintain(
    engine: Engine,
    settings: Settings | None = None,
    *,
    now: datetime | None = None,
    rollup_budget_s: float = 5.0,
    compact: bool = True,
) -> MaintenanceReport:
    """Create partitions ahead, roll up what was written since last time, apply retention,
    then compact the oldest closed day due (``compact_after_days``; only when no rollup
    is pending).

    ``rollup_budget_s`` bounds the rollup work per call; after an outage or a big
    import the backlog is worked off over successive calls
    (``report.rollup.more_pending``).
    """
    settings = settings or get_settings()
    now = (now or datetime.now(UTC)).astimezone(UTC)
    report = MaintenanceReport()
    with engine.begin() as conn:
        report.partitions_created = ensure_partitions(conn, settings.partition_days_ahead, now=now)
    report.rollup = roll_up_pending(engine, budget_s=rollup_budget_s)
    with engine.begin() as conn:
        report.retention = apply_retention(
            conn,
            raw_days=settings.retention_raw_days,
            minute_days=settings.retention_1m_days,
            hour_days=settings.retention_1h_days,
            now=now,
        )
        report.server_stats_deleted = prune_server_stats(
            conn,
            raw_days=settings.retention_raw_days,
            hour_days=settings.retention_1h_days,
            now=now,
        )
    if compact and not report.rollup.more_pending:
        report.compacted = compact_pending(
            engine, after_days=settings.compact_after_days, now=now, max_days=1
        )
    return report


def analyze_retrying(engine: Engine, *tables: str, tries: int = 5) -> None:
    """ANALYZE, in its own transaction, retried: next to a live agent, whose maintenance
    creates and packs partitions (ACCESS EXCLUSIVE), it can deadlock; statistics are an
    optimisation, so after the last try it is left to autovacuum."""
    for attempt in range(tries):
        try:
            with engine.begin() as conn:
                for table in tables:
                    conn.execute(text(f"analyze {table}"))
            return
        except DBAPIError as exc:
            if not isinstance(exc.orig, DeadlockDetected | LockNotAvailable):
                raise
            time.sleep(0.5 * (attempt + 1))
