"""The agent as real processes (``python -m app.cli.main agent``) against real PostgreSQL servers.

- the store goes away for ``CONNWATCH_TEST_OUTAGE_S`` seconds (default 30) while the
  agent probes: afterwards every expected sample is there exactly once;
- SIGKILL while the store is away: the next start replays the spool;
- SIGTERM flushes every sample;
- two agents share the series, each instant probed once; kill one, the other takes
  over within two intervals;
- inside ``serve`` (the FastAPI lifespan), and series changes applied without restart.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from app import migrate
from app.agent.output.spool import Spool, read_frames
from app.demo.pgcluster import PgCluster
from tests.agent.conftest import gaps, make_settings, pg_target_series, run_agent, samples_of
from tests.agent.procs import (
    AgentProcs,
    agent_stats,
    by_series,
    count_samples,
    term,
    wait_for,
)

OUTAGE_S = float(os.environ.get("CONNWATCH_TEST_OUTAGE_S", "30"))


@pytest.fixture
def own_store(own_cluster: PgCluster) -> Iterator[tuple[PgCluster, Engine]]:
    own_cluster.create_database("store")
    engine = create_engine(
        own_cluster.url("store"), connect_args={"connect_timeout": 2}, pool_pre_ping=True
    )
    migrate.upgrade(engine)
    try:
        yield own_cluster, engine
    finally:
        engine.dispose()


@pytest.mark.slow
def test_store_outage_loses_nothing(
    own_store: tuple[PgCluster, Engine],
    pg_cluster: PgCluster,
    pg_database: str,
    agents: AgentProcs,
) -> None:
    store_cluster, store = own_store
    ids = pg_target_series(store, pg_cluster, pg_database, 3, interval_ms=1000)
    proc = agents.start(store_cluster.url("store"), "outage")
    wait_for(lambda: count_samples(store, ids) >= 6, 60, "the first samples")
    down_at = datetime.now(UTC)
    store_cluster.stop(mode="fast")
    time.sleep(OUTAGE_S)
    store_cluster.start()
    up_at = datetime.now(UTC)
    time.sleep(3)
    assert term(proc) == 0
    rows = by_series(samples_of(store, ids))
    for sid in ids:
        times = [r.scheduled_at for r in rows[sid]]
        assert gaps(times, 1000) == [], f"series {sid} misses instants"
        during = [r for r in rows[sid] if down_at <= r.scheduled_at <= up_at]
        assert len(during) >= OUTAGE_S - 1
        assert {r.status for r in during} == {"ok"}  # the target stayed up: real runs
    stats = agent_stats(store, "outage")
    assert stats["dropped"] == 0 and stats["spool_samples"] == 0
    # every run the agent made is stored exactly once (the key rules out twice)
    assert stats["runs"] + stats["skipped"] == sum(len(v) for v in rows.values())


@pytest.mark.slow
def test_sigkill_then_restart_replays_the_spool(
    own_store: tuple[PgCluster, Engine],
    pg_cluster: PgCluster,
    pg_database: str,
    agents: AgentProcs,
    tmp_path: Path,
) -> None:
    store_cluster, store = own_store
    ids = pg_target_series(store, pg_cluster, pg_database, 3, interval_ms=500)
    data = tmp_path / "killed"
    proc = agents.start(store_cluster.url("store"), "killed", data_dir=data)
    wait_for(lambda: count_samples(store, ids) >= 6, 60, "the first samples")
    store_cluster.stop(mode="fast")
    spool_dir = data / "spool"
    wait_for(lambda: Spool(spool_dir, 1 << 30).samples >= 15, 20, "samples in the spool")
    proc.kill()
    proc.wait(10)
    spooled = {
        (s.series_id, s.scheduled_at)
        for seg in sorted(spool_dir.glob("seg-*.spool"))
        for frame in read_frames(seg)
        for s in frame
    }
    assert len(spooled) >= 15
    store_cluster.start()
    again = agents.start(store_cluster.url("store"), "killed", data_dir=data)

    def replayed() -> bool:
        with store.connect() as conn:
            have = set(
                conn.execute(
                    text("select series_id, scheduled_at from samples where series_id = any(:i)"),
                    {"i": ids},
                ).all()
            )
        return spooled <= have

    wait_for(replayed, 60, "the spool to be replayed")
    assert term(again) == 0
    assert Spool(spool_dir, 1 << 30).samples == 0


def test_sigterm_flushes_every_sample(
    store: Engine, pg_cluster: PgCluster, pg_database: str, agents: AgentProcs
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 4, interval_ms=200)
    proc = agents.start(pg_cluster.url(pg_database), "flusher")
    wait_for(lambda: agent_stats(store, "flusher").get("runs", 0) >= 10, 60, "runs")
    assert term(proc) == 0
    stats = agent_stats(store, "flusher")
    assert stats["stopped"] is True
    assert count_samples(store, ids) == stats["runs"] + stats["skipped"]


@pytest.mark.slow
def test_two_agents_share_and_take_over(
    store: Engine, pg_cluster: PgCluster, pg_database: str, agents: AgentProcs
) -> None:
    interval = 2000
    ids = pg_target_series(store, pg_cluster, pg_database, 6, interval_ms=interval)
    url = pg_cluster.url(pg_database)
    a = agents.start(url, "agent-a")
    b = agents.start(url, "agent-b")

    def shared() -> bool:
        return (
            agent_stats(store, "agent-a").get("series") == 3
            and agent_stats(store, "agent-b").get("series") == 3
        )

    wait_for(shared, 60, "both agents to run three series each")
    t0 = datetime.now(UTC) + timedelta(seconds=1)
    time.sleep(3 * interval / 1000 + 1)
    t1 = datetime.now(UTC)
    with store.connect() as conn:
        owners = dict(conn.execute(text("select series_id, agent from agent_assignments")).all())
    assert sorted(owners) == sorted(ids)
    assert set(owners.values()) == {"agent-a", "agent-b"}
    a_series = [sid for sid, who in owners.items() if who == "agent-a"]

    killed_at = datetime.now(UTC)
    a.kill()
    a.wait(10)
    time.sleep(2 * interval / 1000 + 2)
    assert term(b) == 0

    rows = by_series(samples_of(store, ids))
    for sid in ids:
        window = [r for r in rows[sid] if t0 <= r.scheduled_at <= t1]
        # exactly one sample per instant, all by the series' one owner
        assert gaps([r.scheduled_at for r in window], interval) == []
        assert len(window) >= 2
        assert {r.agent for r in window} == {owners[sid]}
    for sid in a_series:
        first_b = min(
            r.scheduled_at for r in rows[sid] if r.agent == "agent-b" and r.scheduled_at > t1
        )
        assert first_b - killed_at <= timedelta(milliseconds=2 * interval)
    # b ran each of its instants once: every run it made is a distinct stored sample
    stats_b = agent_stats(store, "agent-b")
    by_b = sum(1 for rs in rows.values() for r in rs if r.agent == "agent-b")
    assert stats_b["runs"] + stats_b["skipped"] == by_b


def test_series_changes_apply_without_restart(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    first = pg_target_series(store, pg_cluster, pg_database, 1, interval_ms=500, name="one")
    marks: dict[str, datetime] = {}

    async def change(agent: Any) -> None:
        await asyncio.sleep(2.0)
        marks["changed"] = datetime.now(UTC)
        with store.begin() as conn:
            conn.execute(text("update series set enabled = false where id = :i"), {"i": first[0]})
        marks["second"] = datetime.now(UTC)
        second = pg_target_series(store, pg_cluster, pg_database, 1, interval_ms=500, name="two")
        marks["id"] = second[0]  # type: ignore[assignment]
        await asyncio.sleep(4.0)

    run_agent(store, make_settings(tmp_path, "postgresql://unused/x"), 0, during=change)
    rows = by_series(samples_of(store, [first[0], marks["id"]]))  # type: ignore[list-item]
    new = rows[marks["id"]]  # type: ignore[index]
    assert new and min(r.scheduled_at for r in new) - marks["second"] < timedelta(seconds=3)
    old_last = max(r.scheduled_at for r in rows[first[0]])
    assert old_last - marks["changed"] < timedelta(seconds=3)


def test_runs_inside_serve_lifespan(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from app.agent.service import Agent, attach
    from app.web.app import create_app

    ids = pg_target_series(store, pg_cluster, pg_database, 2, interval_ms=500)
    from tests.fixtures.auth import web_settings

    app = create_app(store, settings=web_settings())
    attach(app, store, make_settings(tmp_path, "postgresql://unused/x"))
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        agent = app.state.agent
        assert isinstance(agent, Agent) and agent.started
        time.sleep(2.5)
    assert not agent.started  # stopped with the app, samples flushed
    assert count_samples(store, ids) == agent.stats.runs + agent.stats.skipped > 0
