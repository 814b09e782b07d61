"""The writer against a real PostgreSQL: batches, idempotence, outage -> spool -> replay."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from app import migrate
from app.agent.options import AgentOptions
from app.agent.output.spool import Spool
from app.agent.output.writer import Writer
from app.demo.pgcluster import PgCluster
from app.samples import Sample, SampleStatus

T0 = datetime.now(UTC).replace(microsecond=0)
FAST = AgentOptions(flush_s=0.1, retry_s=0.2)


def make(series: int, i: int) -> Sample:
    at = T0 + timedelta(seconds=i)
    return Sample(series, at, at, SampleStatus.OK, total_ns=1000 + i)


def count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("select count(*) from samples")).scalar_one())


def test_batches_are_written_and_stop_flushes(store: Engine, tmp_path: Path) -> None:
    w = Writer(store, Spool(tmp_path, 10_000_000), AgentOptions(flush_s=5.0, batch_max=100))
    w.start()
    for i in range(250):
        w.submit(make(1, i))
    deadline = time.monotonic() + 5
    while w.written < 200 and time.monotonic() < deadline:  # two full batches, no waiting
        time.sleep(0.02)
    assert w.written == 200 and w.batches == 2
    w.stop()  # the last 50 were waiting for flush_s: stop writes them
    assert count(store) == 250 and w.written == 250


def test_duplicates_are_stored_once(store: Engine, tmp_path: Path) -> None:
    w = Writer(store, Spool(tmp_path, 10_000_000), FAST)
    w.start()
    for _ in range(2):
        for i in range(20):
            w.submit(make(2, i))
    w.stop()
    assert count(store) == 20 and w.handed == 40 and w.written == 20


def test_outage_spools_then_replays_in_order(own_cluster: PgCluster, tmp_path: Path) -> None:
    own_cluster.create_database("store")
    engine = create_engine(own_cluster.url("store"), connect_args={"connect_timeout": 2})
    migrate.upgrade(engine)
    spool = Spool(tmp_path / "spool", 10_000_000)
    w = Writer(engine, spool, FAST)
    w.start()
    try:
        for i in range(10):
            w.submit(make(3, i))
        time.sleep(0.5)
        own_cluster.stop(mode="fast")
        for i in range(10, 60):
            w.submit(make(3, i))
            time.sleep(0.01)
        deadline = time.monotonic() + 5
        while spool.samples < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not w.store_ok and spool.samples == 50  # every sample of the outage, on disk
        own_cluster.start()
        deadline = time.monotonic() + 10
        while (w.backlog or not w.store_ok) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert w.store_ok and spool.empty
    finally:
        w.stop()
    with engine.connect() as conn:
        rows = conn.execute(
            text("select scheduled_at from samples where series_id = 3 order by 1")
        ).scalars()
        assert list(rows) == [T0 + timedelta(seconds=i) for i in range(60)]
    engine.dispose()


def test_stop_while_store_is_down_keeps_everything_in_the_spool(
    tmp_path: Path, pg_cluster: PgCluster
) -> None:
    # a store that does not exist: every write fails as "unreachable"
    dead = create_engine(
        f"postgresql+psycopg://postgres@127.0.0.1:{pg_cluster.port}/no_such_db",
        connect_args={"connect_timeout": 2},
    )
    spool_dir = tmp_path / "spool"
    w = Writer(dead, Spool(spool_dir, 10_000_000), FAST)
    w.start()
    for i in range(30):
        w.submit(make(4, i))
    w.stop()
    again = Spool(spool_dir, 10_000_000)
    assert again.samples == 30
    dead.dispose()
