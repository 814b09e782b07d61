"""Coordination through PostgreSQL advisory locks: fair shares, hand-over, dead agents."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.agent.coord import Coordinator
from app.demo.pgcluster import PgCluster
from tests.agent.conftest import pg_target_series


def test_fair_share_and_two_tick_hand_over(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 6, interval_ms=1000)
    a, b = Coordinator(store, "a", "default"), Coordinator(store, "b", "default")
    try:
        first = a.tick({})
        assert sorted(first.rows) == ids and first.live_agents == 1 and first.leader
        b.tick({})  # b is alive now, finds everything locked
        second = a.tick({})  # a stops running its excess, still holds the locks
        assert len(second.rows) == 3 and len(a.releasing) == 3
        assert not b.tick({}).rows  # nothing free yet: no overlap with a's last runs
        a.tick({})  # a unlocks
        got_b = b.tick({})
        assert sorted(set(got_b.rows) | set(a.held)) == ids
        assert not set(got_b.rows) & a.held and not got_b.leader
        with store.connect() as conn:
            rows = conn.execute(text("select series_id, agent from agent_assignments")).all()
            owners = {sid: who for sid, who in rows}
        assert owners == {**dict.fromkeys(a.held, "a"), **dict.fromkeys(b.held, "b")}
    finally:
        a.close({})
        b.close({})


def test_a_dead_agents_series_are_taken_at_the_next_tick(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 4, interval_ms=1000)
    a, b = Coordinator(store, "a", "default"), Coordinator(store, "b", "default")
    try:
        for _ in range(3):
            a.tick({})
            b.tick({})
        assert len(a.held) == len(b.held) == 2
        a._drop_session()  # the process died: its session and locks are gone
        took = b.tick({})
        assert sorted(took.rows) == ids and took.live_agents == 1 and took.leader
    finally:
        b.close({})


def test_a_silent_agent_holding_locks_is_cut_off(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 2, interval_ms=1000)
    a, b = Coordinator(store, "a", "default"), Coordinator(store, "b", "default")
    try:
        a.tick({})
        b.tick({})
        with store.begin() as conn:  # a hangs: its session lives on, its heartbeat stops
            conn.execute(
                text("update agents set heartbeat_at = now() - interval '1 hour' where name='a'")
            )
        b.tick({})  # terminates a's session
        took = b.tick({})
        assert sorted(took.rows) == ids
    finally:
        b.close({})
        a._drop_session()


def test_agents_of_other_sites_do_not_count(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    here = pg_target_series(store, pg_cluster, pg_database, 2, interval_ms=1000)
    there = pg_target_series(
        store, pg_cluster, pg_database, 2, interval_ms=1000, site="dc2", name="pg2"
    )
    a, b = Coordinator(store, "a", "default"), Coordinator(store, "b", "dc2")
    try:
        ra, rb = a.tick({}), b.tick({})
        ra, rb = a.tick({}), b.tick({})
        assert sorted(ra.rows) == here and sorted(rb.rows) == there
        assert ra.live_agents == rb.live_agents == 1
    finally:
        a.close({})
        b.close({})
