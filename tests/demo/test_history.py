"""demo --history draws its synthetic history around the live samples: same level, same
instances, ending before the first live sample."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings
from app.demo.history import history_series, load_history
from app.demo.run import DemoOracle, demo_document, load_demo_targets
from app.samples import Sample, SampleStatus
from app.store.write.ingest import write_samples
from app.targets.schema import parse_targets
from app.targets.sync import dump_yaml

LIVE_PING_MS, LIVE_LOGON_MS = 1.4, 79.0


def test_history_matches_the_live_level_and_instances(
    migrated_engine: Engine, tmp_path: Path
) -> None:
    settings = Settings(
        data_dir=tmp_path, secret_key=Fernet.generate_key().decode(), compact_after_days=1
    )
    oracles = [DemoOracle("sales", "SALES1", 1521, port=1521)]
    doc = parse_targets(dump_yaml(demo_document(oracles, None)), "<demo targets>")
    load_demo_targets(migrated_engine, settings, doc)
    shared = next(s for s in history_series(migrated_engine) if s.mode == "shared")
    now = datetime.now(UTC).replace(microsecond=0)
    live = [
        Sample(
            series_id=shared.id,
            scheduled_at=now - timedelta(seconds=5 * i),
            started_at=now - timedelta(seconds=5 * i),
            status=SampleStatus.OK,
            total_ns=90_000_000,
            logon_ns=int(LIVE_LOGON_MS * 1e6),
            ping_ns=int(LIVE_PING_MS * 1e6),
            query_ns=2_000_000,
            logoff_ns=6_000_000,
            instance="SALES1" if i % 2 else "SALES3",  # what the live database serves
            agent="vm-1",
        )
        for i in range(10)
    ]
    with migrated_engine.begin() as conn:
        write_samples(conn, live)
    calibrated = next(
        s for s in history_series(migrated_engine, calibrate=True) if s.id == shared.id
    )
    assert calibrated.instances == ("SALES1", "SALES3")
    assert dict(calibrated.medians_ms)["ping"] == LIVE_PING_MS
    load_history(migrated_engine, settings, raw_days=2, days=3, calibrate=True)
    with migrated_engine.connect() as conn:
        ping, logon, instances, last = conn.execute(
            text(
                "select percentile_cont(0.5) within group (order by ping_ns) / 1e6, "
                "percentile_cont(0.5) within group (order by logon_ns) / 1e6, "
                "array_agg(distinct instance), max(scheduled_at) "
                "from connwatch_samples(array[:sid], '-infinity', 'infinity') "
                "where agent = 'synthetic' and status = 'ok'"
            ),
            {"sid": shared.id},
        ).one()
    # the built-in shape had ping 0.6 ms and logon 44 ms: now the live level, within the
    # history's daily swing (business hours, weekday, a slow walk: about +-12 %)
    assert abs(ping - LIVE_PING_MS) / LIVE_PING_MS < 0.15, ping
    assert abs(logon - LIVE_LOGON_MS) / LIVE_LOGON_MS < 0.15, logon
    assert sorted(instances) == ["SALES1", "SALES3"]  # no instance only history knows
    assert last < min(s.scheduled_at for s in live)  # it ends before the first live sample
