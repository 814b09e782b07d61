"""Kill drill: SIGKILL the agent at random moments under load, restart it, and count.

A sample that completed more than 100 ms before a SIGKILL must be in the store after
the next start (the write-ahead log replays it), and only once (the store's key).
"""

from __future__ import annotations

import os
import random
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from tests.agent.conftest import pg_target_series
from tests.agent.procs import AgentProcs, term, wait_for

INTERVAL_MS = 250
SERIES = 8
KILLS = 3


def rows_of(store: Engine, ids: list[int]) -> list[Any]:
    with store.connect() as conn:
        return list(
            conn.execute(
                text(
                    "select series_id, scheduled_at, started_at, total_ns from samples "
                    "where series_id = any(:ids) order by series_id, scheduled_at"
                ),
                {"ids": ids},
            )
        )


def newest(store: Engine, ids: list[int]) -> datetime | None:
    with store.connect() as conn:
        got: datetime | None = conn.execute(
            text("select max(scheduled_at) from samples where series_id = any(:ids)"),
            {"ids": ids},
        ).scalar_one()
    return got


def test_sigkill_at_random_moments_loses_no_completed_sample(
    store: Engine, pg_cluster: PgCluster, pg_database: str, agents: AgentProcs, tmp_path: Path
) -> None:
    rng = random.Random()
    ids = pg_target_series(store, pg_cluster, pg_database, SERIES, interval_ms=INTERVAL_MS)
    url = pg_cluster.url(pg_database)
    data = tmp_path / "drill"
    env = {
        "CONNWATCH_AGENT_WAL": os.environ.get("CW_DRILL_WAL", "fsync"),
        "CONNWATCH_AGENT_WORKERS": "1",
    }
    kills: list[datetime] = []
    starts: list[datetime] = []
    for life in range(KILLS + 1):
        starts.append(datetime.now(UTC))
        proc = agents.start(url, "drill", data_dir=data, env=env)
        since = starts[-1]
        wait_for(lambda s=since: (newest(store, ids) or s) > s, 60, f"life {life} to probe")
        if life == KILLS:
            time.sleep(1.0)
            assert term(proc) == 0
            break
        time.sleep(rng.uniform(0.3, 2.5))  # a random moment under load
        kills.append(datetime.now(UTC))
        proc.kill()
        proc.wait(10)
        if os.environ.get("CW_DRILL_KEEP"):
            import shutil

            shutil.copytree(data / "wal", Path(os.environ["CW_DRILL_KEEP"]) / f"wal{life}")
    rows = rows_of(store, ids)
    # how long a run took at most, scheduled instant to completion (the loaded-machine
    # allowance: a run that was still in flight at the kill is rightly lost)
    slowest = max(
        (r.started_at - r.scheduled_at) + timedelta(microseconds=(r.total_ns or 0) / 1000)
        for r in rows
    )
    margin = timedelta(milliseconds=100) + slowest + timedelta(milliseconds=50)
    lost: list[str] = []
    for sid in ids:
        mine = {r.scheduled_at for r in rows if r.series_id == sid}
        for life, killed in enumerate(kills):
            in_life = sorted(t for t in mine if starts[life] <= t < killed)
            assert in_life, f"series {sid} has no sample in life {life}"
            t = in_life[0]
            while t <= killed - margin:  # every instant of the life up to the margin
                if t not in mine:
                    lost.append(f"series {sid}: {t:%H:%M:%S.%f} (kill at {killed:%H:%M:%S.%f})")
                t += timedelta(milliseconds=INTERVAL_MS)
    assert lost == [], f"lost samples (margin {margin.total_seconds():.3f} s): {lost}"
    # the log did the work: later lives replayed what the killed ones had not stored
    log_text = (data / "agent.log").read_text()
    replayed = [
        int(n) for n in re.findall(r"(\d+) samples measured before the last stop", log_text)
    ]
    assert len(replayed) >= 1 and sum(replayed) >= 1, log_text[-3000:]
    assert "Traceback" not in log_text
