"""Coordination through PostgreSQL advisory locks: fair shares per worker, hand-over,
dead workers and silent agents."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.agent.coordination.registry import Registry
from app.agent.coordination.series import SeriesCoordinator
from app.demo.pgcluster import PgCluster
from tests.agent.conftest import pg_target_series


def worker(store: Engine, name: str, site: str = "default", index: int = 0) -> SeriesCoordinator:
    """A registered agent's worker (the agent row and presence lock live on)."""
    reg = Registry(store, name, site)
    w = SeriesCoordinator(store, name, reg.register(), site, worker=index)
    w.registry = reg  # type: ignore[attr-defined]  # kept alive with the worker
    return w


def test_fair_share_and_two_tick_hand_over(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 6, interval_ms=1000)
    a, b = worker(store, "a"), worker(store, "b")
    try:
        a.join()
        first = a.tick()
        assert sorted(first.rows) == ids and first.live_workers == 1
        b.join()  # b is alive now
        assert not b.tick().rows  # it finds everything locked
        second = a.tick()  # a stops running its excess, still holds the locks
        assert len(second.rows) == 3 and len(a.releasing) == 3
        assert not b.tick().rows  # nothing free yet: no overlap with a's last runs
        a.tick()  # a unlocks
        got_b = b.tick()
        assert sorted(set(got_b.rows) | set(a.held)) == ids
        assert not set(got_b.rows) & a.held
        with store.connect() as conn:
            rows = conn.execute(text("select series_id, agent from agent_assignments")).all()
            owners = {sid: who for sid, who in rows}
        assert owners == {**dict.fromkeys(a.held, "a"), **dict.fromkeys(b.held, "b")}
    finally:
        a.close()
        b.close()


def test_workers_of_one_agent_share_like_agents(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 9, interval_ms=1000)
    reg = Registry(store, "multi", "default")
    agent_id = reg.register()
    ws = [SeriesCoordinator(store, "multi", agent_id, "default", worker=i) for i in range(3)]
    try:
        for w in ws:
            w.join()  # every worker joins before any takes series
        for _ in range(2):
            for w in ws:
                w.tick()
        assert [len(w.held) for w in ws] == [3, 3, 3] and ws[0].live == 3
        assert sorted(s for w in ws for s in w.held) == ids
        with store.connect() as conn:
            rows = conn.execute(
                text("select series_id, agent, worker from agent_assignments")
            ).all()
        assert {(a, w) for _, a, w in rows} == {("multi", 0), ("multi", 1), ("multi", 2)}
        assert reg.heartbeat({}).live_agents == 1  # one agent, three workers
        ws[1].session.drop()  # worker 1's process died: its session and locks are gone
        for _ in range(2):
            ws[0].tick()
            ws[2].tick()
        assert sorted(ws[0].held | ws[2].held) == ids and ws[0].live == 2
    finally:
        for w in ws:
            w.close()
        reg.close({})


def test_a_silent_agent_holding_locks_is_cut_off(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 2, interval_ms=1000)
    a, b = worker(store, "a"), worker(store, "b")
    try:
        a.join()
        b.join()
        a.tick()
        b.tick()
        with store.begin() as conn:  # a hangs: its sessions live on, its heartbeat stops
            conn.execute(
                text("update agents set heartbeat_at = now() - interval '1 hour' where name='a'")
            )
        b.registry.heartbeat({})  # type: ignore[attr-defined]  # terminates a's sessions
        b.tick()
        took = b.tick()
        assert sorted(took.rows) == ids
        assert took.live_workers == 1
    finally:
        b.close()
        a.session.drop()


def test_agents_of_other_sites_do_not_count(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    here = pg_target_series(store, pg_cluster, pg_database, 2, interval_ms=1000)
    there = pg_target_series(
        store, pg_cluster, pg_database, 2, interval_ms=1000, site="dc2", name="pg2"
    )
    a, b = worker(store, "a"), worker(store, "b", "dc2")
    try:
        a.join()
        b.join()
        ra, rb = a.tick(), b.tick()
        ra, rb = a.tick(), b.tick()
        assert sorted(ra.rows) == here and sorted(rb.rows) == there
        assert ra.live_workers == rb.live_workers == 1
    finally:
        a.close()
        b.close()


def test_only_one_agent_leads_maintenance(store: Engine) -> None:
    a, b = Registry(store, "a", "default"), Registry(store, "b", "default")
    try:
        a.register()
        b.register()
        assert a.heartbeat({"runs": 1}).leader and not b.heartbeat({}).leader
        with store.connect() as conn:
            stats = conn.execute(text("select stats from agents where name = 'a'")).scalar_one()
        assert stats["runs"] == 1 and stats["maintenance"] is False  # written before it led
        a.close({"runs": 2})
        assert b.heartbeat({}).leader  # a's session ended: b takes over
        with store.connect() as conn:
            stats = conn.execute(text("select stats from agents where name = 'a'")).scalar_one()
        assert stats["stopped"] is True and stats["runs"] == 2
    finally:
        b.close({})
