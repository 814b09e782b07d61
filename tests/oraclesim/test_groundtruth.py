"""Ground truth: per connection, phase start/end on the server and injected latency."""

from __future__ import annotations

import time

from app.oraclesim.groundtruth import GroundTruth

from ._driver import connect, eventually


def test_records_are_bounded_and_ordered():
    gt = GroundTruth(keep=3)
    recs = [gt.new_connection() for _ in range(5)]
    p = recs[-1].begin("ping")
    p.end_ns = p.start_ns + 5
    snap = gt.snapshot()
    assert [r["conn_id"] for r in snap] == [3, 4, 5]
    assert snap[-1]["phases"] == [
        {
            "phase": "ping",
            "start_ns": p.start_ns,
            "end_ns": p.start_ns + 5,
            "injected_ns": 0,
            "outcome": "ok",
        }
    ]
    gt.clear()
    assert gt.snapshot() == []


def test_server_phases_nest_inside_what_the_client_measured(oraclesim):
    t0 = time.perf_counter_ns()
    conn = connect(oraclesim)
    t1 = time.perf_counter_ns()
    conn.ping()
    t2 = time.perf_counter_ns()
    sid = conn.session_id
    conn.close()
    rec = eventually(
        lambda: next(
            (r for r in oraclesim.ground_truth() if r["sid"] == sid and r["closed_ns"]), None
        )
    )
    phases = {p["phase"]: p for p in rec["phases"]}
    assert t0 <= rec["accepted_ns"] <= phases["accept"]["start_ns"]
    assert phases["accept"]["end_ns"] <= phases["negotiate"]["start_ns"]
    assert phases["negotiate"]["end_ns"] <= phases["logon"]["start_ns"]
    assert phases["logon"]["end_ns"] <= t1 <= phases["ping"]["start_ns"]
    assert phases["ping"]["end_ns"] <= t2
    assert rec["user"] == "scott" and rec["service"] == "FREEPDB1"
    assert rec["mode"] == "dedicated" and rec["closed_ns"] >= phases["logoff"]["end_ns"]
    assert all(p["injected_ns"] == 0 for p in rec["phases"])  # latency off in this fixture
