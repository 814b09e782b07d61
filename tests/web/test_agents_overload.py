"""An overloaded agent is said plainly: on the Agents page (when, by how much, per worker),
beside the modes it probes on the overview, on the samples it took, and in /metrics."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import Sample, SampleStatus
from app.store.write.ingest import write_samples
from tests.web.data import Seeded

HTML = {"Accept": "text/html"}
SINCE = time.time() - 300


def overloaded_stats() -> dict[str, Any]:
    worker = {
        "active": True,
        "share": 0.52,
        "demand_per_s": 1000.0,
        "capacity_per_s": 520.0,
        "factor": 1.923,
        "busy": 0.91,
    }
    return {
        "series": 3,
        "runs": 1200,
        "skipped": 1100,
        "skipped_by": {"OVERLOAD": 1100},
        "lag_ms": {"p50": 1.0, "p95": 4.0, "p99": 9.5, "max": 20.0, "n": 1200},
        "overload": {
            "active": True,
            "share": 0.52,
            "demand_per_s": 2000.0,
            "capacity_per_s": 1040.0,
            "factor": 1.923,
            "busy": 0.91,
            "since": SINCE,
            "skipped": 1100,
            "workers_overloaded": 2,
        },
        "workers_configured": 2,
        "workers_alive": 2,
        "workers": [
            {"worker": 0, "pid": 101, "alive": True, "series": 2, "runs": 600, "skipped": 550,
             "lag_p99_ms": 9.5, "cpu_percent": 92.0, "overload": worker, "restarts": 0},
            {"worker": 1, "pid": 102, "alive": True, "series": 1, "runs": 600, "skipped": 550,
             "lag_p99_ms": 8.1, "cpu_percent": 90.5, "overload": worker, "restarts": 1},
        ],
    }  # fmt: skip


def register(engine: Engine, name: str, stats: dict[str, Any], series: list[int]) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(
                "insert into agents (name, site, version, hostname, pid, stats) "
                "values (:n, 'default', 'test', 'probe-host', 100, cast(:s as jsonb))"
            ),
            {"n": name, "s": json.dumps(stats)},
        )
        for sid in series:
            conn.execute(
                text(
                    "insert into agent_assignments (series_id, agent, site, worker) "
                    "values (:s, :n, 'default', 0)"
                ),
                {"s": sid, "n": name},
            )


def test_an_overloaded_agent_is_said_plainly(
    client: TestClient, seeded: Seeded, migrated_engine: Engine
) -> None:
    pooled = seeded.series[("sales", "pooled")]
    register(migrated_engine, "probe-1", overloaded_stats(), [pooled])
    register(migrated_engine, "probe-2", {"series": 1, "runs": 10}, [])

    page = client.get("/agents", headers=HTML).text
    row = page.split('data-overloaded="probe-1"')[1].split("</tr>")[0]
    assert "by <strong>1.9x</strong>" in row and "2,000 runs/s due" in row
    assert "about 1,040 runs/s possible" in row and "<strong>52 %</strong>" in row
    assert "not the database" in row and "OVERLOAD" in row
    assert 'data-overloaded="probe-2"' not in page  # the one that keeps up says nothing
    workers = page.split("2 worker processes")[1].split("</table>")[0]
    assert 'data-worker="0"' in workers and 'data-worker="1"' in workers
    assert ">91 %<" in workers and "<strong>52 %</strong>" in workers

    overview = client.get("/", headers=HTML).text
    rows = overview.split("<tr ")[1:]
    pooled_row = next(r for r in rows if ">sales<" in r and ">pooled<" in r)
    assert "data-overload" in pooled_row and "agent probe-1 overloaded (1.9x)" in pooled_row
    assert "not the database" in pooled_row
    dedicated_row = next(r for r in rows if ">sales<" in r and ">dedicated<" in r)
    assert "data-overload" not in dedicated_row

    metrics = client.get("/metrics").text
    assert 'connwatch_agent_overloaded{agent="probe-1",site="default"} 1' in metrics
    assert 'connwatch_agent_overload_factor{agent="probe-1",site="default"} 1.923' in metrics
    assert 'connwatch_agent_run_share_ratio{agent="probe-1",site="default"} 0.52' in metrics
    assert 'connwatch_agent_workers{agent="probe-1",site="default"} 2' in metrics
    assert (
        'connwatch_agent_worker_loop_busy_ratio{agent="probe-1",site="default",worker="1"} 0.91'
        in metrics
    )


def test_samples_taken_under_overload_are_marked(
    client: TestClient, seeded: Seeded, migrated_engine: Engine
) -> None:
    sid = seeded.series[("sales", "dedicated")]
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=7)
    with migrated_engine.begin() as conn:
        write_samples(
            conn,
            [
                Sample(sid, at, at, SampleStatus.OK, total_ns=5_000_000, logon_ns=4_000_000,
                       agent="probe-1", site="default", extra={"overload": 0.52}),
                Sample(sid, at + timedelta(milliseconds=1), at, SampleStatus.SKIPPED,
                       error_code="OVERLOAD", error_phase="schedule", agent="probe-1",
                       site="default", error_message="agent overloaded: ..."),
            ],
        )  # fmt: skip
    res = client.get("/api/v1/samples", params={"target": "sales", "mode": "dedicated",
                                                "range": "1h", "limit": 500})  # fmt: skip
    assert res.status_code == 200, res.text
    got = {s["scheduled_at"]: s for s in res.json()["samples"] if s["agent"] == "probe-1"}
    assert [s["agent_overload"] for s in got.values()].count(0.52) == 1
    page = client.get(
        "/samples", params={"target": "sales", "mode": "dedicated", "range": "1h"}, headers=HTML
    ).text
    assert "agent overloaded" in page and "OVERLOAD" in page
