"""An agent with worker processes (``connwatch agent --workers N``), as a real process tree:
the workers share the series, one agents row reports them all, the logon caps hold
across them, and a worker that dies is replaced while the others take its series."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from tests.agent.conftest import gaps, pg_target_series, samples_of
from tests.agent.procs import AgentProcs, agent_stats, by_series, term, wait_for


def assignments(store: Engine) -> dict[int, int]:
    with store.connect() as conn:
        return dict(conn.execute(text("select series_id, worker from agent_assignments")).all())


def test_workers_share_the_series_and_replace_a_dead_one(
    store: Engine, pg_cluster: PgCluster, pg_database: str, agents: AgentProcs
) -> None:
    interval = 1000
    ids = pg_target_series(store, pg_cluster, pg_database, 8, interval_ms=interval)
    proc = agents.start(pg_cluster.url(pg_database), "multi", env={"CONNWATCH_AGENT_WORKERS": "2"})

    def shared() -> dict[str, Any] | None:
        st = agent_stats(store, "multi")
        per = [w.get("series") for w in st.get("workers", [])]
        return st if per == [4, 4] else None

    stats = wait_for(shared, 90, "two workers running four series each")
    assert stats["workers_configured"] == 2 and stats["series"] == 8
    assert len({w["pid"] for w in stats["workers"]}) == 2 and proc.pid not in {
        w["pid"] for w in stats["workers"]
    }
    assert sorted(set(assignments(store).values())) == [0, 1]
    # both worker processes probe on connwatch's redirect-safe loop (python-oracledb's
    # listener-REDIRECT race, app/drivers/eventloop.py)
    assert [w["redirect_safe"] for w in stats["workers"]] == [True, True]
    t0 = datetime.now(UTC) + timedelta(seconds=1)
    time.sleep(3.5)
    t1 = datetime.now(UTC)

    victim = stats["workers"][1]
    moved = sorted(sid for sid, w in assignments(store).items() if w == 1)
    killed_at = datetime.now(UTC)
    os.kill(victim["pid"], signal.SIGKILL)

    def replaced() -> dict[str, Any] | None:
        st = agent_stats(store, "multi")
        w1 = st.get("workers", [{}, {}])[1]
        return st if w1.get("restarts") == 1 and w1.get("pid") != victim["pid"] else None

    wait_for(replaced, 60, "worker 1 to be started again")
    wait_for(shared, 60, "the shares to settle again")
    time.sleep(1.5)
    assert term(proc) == 0

    rows = by_series(samples_of(store, ids))
    for sid in ids:
        window = [r for r in rows[sid] if t0 <= r.scheduled_at <= t1]
        assert len(window) >= 2 and gaps([r.scheduled_at for r in window], interval) == []
        assert {r.agent for r in rows[sid]} == {"multi"}
    for sid in moved:  # worker 0 ran the dead worker's series within two intervals
        after = [r.scheduled_at for r in rows[sid] if r.scheduled_at > killed_at]
        assert after and min(after) - killed_at <= timedelta(milliseconds=2 * interval)
    final = agent_stats(store, "multi")
    assert final["stopped"] is True and final["workers_configured"] == 2
    # no instant ran twice: every run the surviving processes reported is a distinct sample
    # (the killed worker's last figures are in its slot until it was replaced)
    stored = sum(len(v) for v in rows.values())
    assert final["runs"] + final["skipped"] <= stored


def test_logon_caps_hold_across_workers(
    store: Engine, pg_cluster: PgCluster, pg_database: str, agents: AgentProcs
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 8, interval_ms=500)
    proc = agents.start(
        pg_cluster.url(pg_database),
        "capped",
        env={"CONNWATCH_AGENT_WORKERS": "2", "CONNWATCH_AGENT_TARGET_LOGONS_PER_S": "4"},
    )
    wait_for(
        lambda: (
            [w.get("series") for w in agent_stats(store, "capped").get("workers", [])] == [4, 4]
        ),
        90,
        "two workers running four series each",
    )
    time.sleep(4.0)
    assert term(proc) == 0
    rows = samples_of(store, ids)
    ok = sorted(r.started_at for r in rows if r.status == "ok")
    limited = [r for r in rows if r.error_code == "RATE_LIMIT"]
    assert limited  # 8 series x 2 logons/s wanted, 4 allowed for the agent as a whole
    # in any 2-second stretch: at most the burst (4) plus 2 s x 4/s, both workers together
    for i, start in enumerate(ok):
        within = [t for t in ok[i:] if t - start <= timedelta(seconds=2)]
        assert len(within) <= 4 + 8 + 1, (start, len(within))
