"""State faults and the views that tell the truth about them: DRCP pool exhausted,
dispatchers saturated, processes limit reached; and the monitoring views' numbers against
what the test did (logons, connection management time, resource limits, grants, CDB)."""

from __future__ import annotations

import time

import oracledb
import pytest

from app.oraclesim import FaultError, SimConfig
from app.oraclesim.config import UserConfig

from ._driver import cause_code, code, connect, eventually, sysstat


def _row(sim, view, **match):
    return next(r for r in sim.view(view) if all(r[k] == v for k, v in match.items()))


def test_pool_exhausted_makes_pooled_logons_wait_and_counts_the_waits(oraclesim_factory):
    sim = oraclesim_factory(SimConfig.default(no_latency=True))
    before = sim.view("v$cpool_stats")[0]
    sim.faults.add("pool_exhausted", delay_ms=150, duration_s=30)
    full = sim.view("v$cpool_stats")[0]
    assert full["NUM_BUSY_SERVERS"] == 40 == full["HISTORIC_MAX"]  # other clients hold it
    for _ in range(3):
        t0 = time.perf_counter()
        with connect(sim, mode="pooled") as conn:
            conn.ping()
        assert time.perf_counter() - t0 >= 0.15
    t0 = time.perf_counter()
    connect(sim, mode="dedicated").close()  # dedicated logons do not wait
    assert time.perf_counter() - t0 < 0.15
    after = sim.view("v$cpool_stats")[0]
    assert after["NUM_REQUESTS"] - before["NUM_REQUESTS"] == 3
    assert after["NUM_WAITS"] - before["NUM_WAITS"] == 3
    sim.faults.clear()
    assert sim.view("v$cpool_stats")[0]["NUM_BUSY_SERVERS"] == 0


def test_dispatchers_saturated_shows_as_busy_time_and_queue_waits(oraclesim_factory):
    sim = oraclesim_factory(SimConfig.default(no_latency=True))
    d0, q0 = sim.view("v$dispatcher")[0], _row(sim, "v$queue", TYPE="DISPATCHER")
    sim.faults.add("dispatchers_saturated", delay_ms=30)
    t0 = time.perf_counter()
    with connect(sim, mode="shared") as conn:
        for _ in range(3):
            conn.ping()
    elapsed = time.perf_counter() - t0
    time.sleep(0.3)
    sim.faults.clear()
    d1, q1 = sim.view("v$dispatcher")[0], _row(sim, "v$queue", TYPE="DISPATCHER")
    busy = d1["BUSY"] - d0["BUSY"]
    idle = d1["IDLE"] - d0["IDLE"]
    assert busy >= 0.9 * (busy + idle)  # saturated: busy nearly all of the window
    assert elapsed >= 0.03 * 7  # negotiation, auth x2, 3 pings, logoff: each waited
    items = q1["TOTALQ"] - q0["TOTALQ"]
    assert items >= 7
    assert (q1["WAIT"] - q0["WAIT"]) / items >= 2  # hundredths of a second per item
    time.sleep(0.2)  # after the fault: idle again
    d2 = sim.view("v$dispatcher")[0]
    assert d2["BUSY"] - d1["BUSY"] <= 1


@pytest.mark.parametrize("fault_code,expected", [(12516, "TNS-12516"), (20, "ORA-00020")])
def test_processes_limit_stops_dedicated_logons_only(oraclesim_factory, fault_code, expected):
    sim = oraclesim_factory(SimConfig.default(no_latency=True))
    pooled = connect(sim, mode="pooled")
    pooled.close()  # one idle pooled server stays open
    sim.faults.add("processes_limit", code=fault_code)
    limits = {r["RESOURCE_NAME"]: r for r in sim.view("v$resource_limit")}
    assert limits["processes"]["CURRENT_UTILIZATION"] == int(limits["processes"]["LIMIT_VALUE"])
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(sim, mode="dedicated")
    if expected.startswith("TNS"):
        assert cause_code(ei.value) == "DPY-6000" and "ORA-12516" in str(ei.value.__cause__)
    else:
        assert code(ei.value) == "ORA-00020" and "(300)" in str(ei.value)
    with connect(sim, mode="shared") as conn:  # shared servers exist already
        conn.ping()
    with connect(sim, mode="pooled") as conn:  # an idle pooled server is reused
        conn.ping()


def test_a_real_processes_limit_is_reached_by_dedicated_sessions(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.processes = 35  # 24 background + D000 + N000 + 4 shared + 1 auth = 31
    sim = oraclesim_factory(cfg)
    conns = [connect(sim) for _ in range(4)]
    try:
        with pytest.raises(oracledb.DatabaseError) as ei:
            connect(sim)
        assert code(ei.value) == "ORA-00020"
        limit = _row(sim, "v$resource_limit", RESOURCE_NAME="processes")
        assert (limit["CURRENT_UTILIZATION"], limit["MAX_UTILIZATION"]) == (35, 35)
        assert limit["LIMIT_VALUE"].strip() == "35"
    finally:
        for c in conns:
            c.close()


def test_logon_counters_add_up_to_what_the_test_did(oraclesim_factory):
    sim = oraclesim_factory(SimConfig.default(no_latency=True))
    logons, cm = sysstat(sim, "logons cumulative"), sim.view("v$sys_time_model")[0]["VALUE"]
    current = sysstat(sim, "logons current")
    conns = [connect(sim, mode=m) for m in ("dedicated", "shared", "pooled")]
    assert sysstat(sim, "logons current") == current + 3
    cur = conns[0].cursor()
    cur.execute(
        "select value from v$sess_time_model where sid = sys_context('USERENV','SID')"
        " and stat_name = 'connection management call elapsed time'"
    )
    mine = cur.fetchone()[0]
    for c in conns:
        c.close()
    eventually(lambda: sysstat(sim, "logons current") == current)
    assert sysstat(sim, "logons cumulative") == logons + 3
    spent = sim.view("v$sys_time_model")[0]["VALUE"] - cm
    assert 0 < mine < spent
    truth = sum(
        p["end_ns"] - p["start_ns"]
        for r in sim.ground_truth()
        for p in r["phases"]
        if p["phase"] in ("negotiate", "logon", "logoff")
    )
    assert spent >= truth // 1000 * 0.9  # the server's own logon and logoff work


def test_shared_server_monitor_circuits_and_growth(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.shared_servers, cfg.max_shared_servers = 1, 3
    sim = oraclesim_factory(cfg)
    conns = [connect(sim, mode="shared") for _ in range(2)]
    try:
        assert len(sim.view("v$circuit")) == 2
        mon = sim.view("v$shared_server_monitor")[0]
        assert mon["MAXIMUM_CONNECTIONS"] == 2 and mon["MAXIMUM_SESSIONS"] == 2
        assert mon["SERVERS_HIGHWATER"] == 1
        params = {r["NAME"]: r["VALUE"] for r in sim.view("v$parameter")}
        assert (params["shared_servers"], params["max_shared_servers"]) == ("1", "3")
    finally:
        for c in conns:
            c.close()


def test_grants_decide_which_views_a_user_sees(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.users["MON"] = UserConfig("mon", "pw", grants=frozenset({"V$SYSSTAT"}))
    sim = oraclesim_factory(cfg)
    with connect(sim, user="mon", password="pw") as conn:
        cur = conn.cursor()
        assert cur.execute("select count(*) from v$sysstat").fetchone()[0] > 0
        for view in ("v$cpool_stats", "gv$sysstat", "v$nosuchview"):
            with pytest.raises(oracledb.DatabaseError) as ei:
                cur.execute(f"select * from {view}")
            assert code(ei.value) == "ORA-00942"
        assert cur.execute("select 1 from dual").fetchone() == (1,)


@pytest.mark.parametrize(
    "version,per_pdb,service,rows",
    [
        ("19.24", False, "FREEPDB1", 0),  # a PDB sees no pool
        ("19.24", False, "FREE", 1),  # CDB$ROOT does
        ("23.26", True, "FREEPDB1", 1),  # ENABLE_PER_PDB_DRCP: the PDB has its pool
        ("19.24", True, "FREEPDB1", 0),  # the parameter does not exist before 21c
    ],
)
def test_pool_views_in_a_cdb(oraclesim_factory, version, per_pdb, service, rows):
    cfg = SimConfig.from_dict(
        {
            "version": version,
            "cdb": True,
            "per_pdb_drcp": per_pdb,
            "no_latency": True,
            "services": [{"name": "FREEPDB1"}, {"name": "FREE", "container": "CDB$ROOT"}],
        }
    )
    sim = oraclesim_factory(cfg)
    with connect(sim, service=service) as conn:
        cur = conn.cursor()
        assert len(cur.execute("select * from v$cpool_stats").fetchall()) == rows
        con = cur.execute("select sys_context('USERENV','CON_NAME') from dual").fetchone()[0]
        assert con == ("CDB$ROOT" if service == "FREE" else "FREEPDB1")


def test_authpool_view_exists_from_19_10(oraclesim_factory):
    old = oraclesim_factory(SimConfig.from_dict({"version": "19.3", "no_latency": True}))
    with connect(old) as conn, pytest.raises(oracledb.DatabaseError) as ei:
        conn.cursor().execute("select * from v$authpool_stats")
    assert code(ei.value) == "ORA-00942"
    new = oraclesim_factory(SimConfig.default(no_latency=True))
    with connect(new) as conn:
        row = conn.cursor().execute("select num_srvs, num_busy from v$authpool_stats").fetchone()
    assert row == (1, 0)


def test_state_faults_are_checked():
    from app.oraclesim.faults import FaultSet

    fs = FaultSet()
    with pytest.raises(FaultError, match="phase: a pool_exhausted fault has no phase"):
        fs.add("pool_exhausted", "logon")
    with pytest.raises(FaultError, match="code: processes_limit answers"):
        fs.add("processes_limit", code=1017)
    f = fs.add("dispatchers_saturated", instance="sales2", duration_s=5)
    assert (f.instance, f.delay_ms) == ("SALES2", 20.0)
    assert fs.state("dispatchers_saturated", "SALES1") is None
    assert fs.state("dispatchers_saturated", "sales2") is f
