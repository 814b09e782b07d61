"""serverstats against the simulator: the numbers it reads add up to what the test did to
the simulator (logons, pooled requests and waits, dispatcher busy time, processes), views
not granted are recorded and the rest is read, RAC instances come out one by one, and an
instance restart is a reset, not a negative rate."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import oracledb
import pytest

from app.oraclesim import SimConfig
from app.oraclesim.config import InstanceConfig, UserConfig
from app.probes.base import ProbeConfigError
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import OracleEndpoint, PostgresEndpoint, ProbeSpec
from app.samples import Sample, SampleStatus
from tests.fixtures.oraclesim import OracleSimHandle


def _endpoint(sim: OracleSimHandle, user: str = "scott", password: str = "tiger", dsn: str = ""):
    return OracleEndpoint(dsn or sim.dsn("FREEPDB1", "dedicated"), user, password)


def _connect(sim: OracleSimHandle, mode: str, **kw: Any) -> oracledb.Connection:
    return oracledb.connect(user="scott", password="tiger", dsn=sim.dsn("FREEPDB1", mode), **kw)


class Runner:
    """One serverstats probe kept across runs, on its own event loop thread-free."""

    def __init__(self, ep: OracleEndpoint, **params: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.probe = create_probe(ProbeSpec("serverstats", ep, deadline_s=10, params=params))

    def run(self) -> Sample:
        return self.loop.run_until_complete(run_once(self.probe))

    def close(self) -> None:
        self.loop.run_until_complete(self.probe.close())
        self.loop.close()


@pytest.fixture
def fresh_sim(oraclesim_factory):
    return oraclesim_factory(SimConfig.default(no_latency=True))


def _inst(sample: Sample, inst_id: int = 1) -> dict[str, Any]:
    assert sample.ok, sample.error_message
    return next(i for i in sample.extra["serverstats"]["instances"] if i["inst_id"] == inst_id)


def _count(metrics: dict[str, Any], rate: str, interval: float) -> float:
    return metrics[rate] * interval


def test_first_run_has_gauges_then_rates_add_up_to_what_was_done(fresh_sim):
    sim = fresh_sim
    r = Runner(_endpoint(sim))
    try:
        first = r.run()
        one = _inst(first)
        assert first.logon_ns and first.query_ns and first.round_trips
        assert one["interval_s"] is None and "logons_per_s" not in one["metrics"]
        assert one["metrics"]["processes_limit"] == 300
        assert first.extra["serverstats"]["unavailable"] == {}
        assert first.extra["serverstats"]["source"] == "GV$"

        kept = [_connect(sim, "dedicated") for _ in range(3)]
        for _ in range(5):
            _connect(sim, "dedicated").close()
        sim.faults.add("pool_exhausted", delay_ms=50, count=2)
        for _ in range(4):
            with _connect(sim, "pooled", cclass="SALES") as c:
                c.ping()
        sim.faults.add("dispatchers_saturated", delay_ms=20)
        with _connect(sim, "shared") as c:
            for _ in range(5):
                c.ping()
        time.sleep(0.3)
        sim.faults.clear()

        second = r.run()
        two = _inst(second)
        m, dt = two["metrics"], two["interval_s"]
        assert second.logon_ns is None  # the session was kept
        assert dt > 0.3 and two["reset"] is False
        assert _count(m, "logons_per_s", dt) == pytest.approx(3 + 5 + 4 + 1, rel=0.01)
        assert _count(m, "pool_requests_per_s", dt) == pytest.approx(4, rel=0.01)
        assert _count(m, "pool_waits_per_s", dt) == pytest.approx(2, rel=0.01)
        assert m["pool_wait_pct"] == pytest.approx(50)
        assert _count(m, "pool_misses_per_s", dt) + _count(m, "pool_hits_per_s", dt) == (
            pytest.approx(4, rel=0.01)
        )
        assert two["classes"] == {} or "SCOTT.SALES" not in two["classes"]  # new class
        assert m["dispatcher_busy_pct"] > 20  # saturated for a good part of the interval
        assert m["dispatcher_wait_ms"] >= 15
        assert m["processes"] == one["metrics"]["processes"] + 3 + 1  # 3 kept, 1 pooled
        assert m["logons_current"] == one["metrics"]["logons_current"] + 3
        truth_ms = sum(
            (p["end_ns"] - p["start_ns"]) / 1e6
            for rec in sim.ground_truth()
            for p in rec["phases"]
            if p["phase"] in ("negotiate", "logon", "logoff") and rec["user"] == "scott"
        )
        assert m["cm_ms_per_logon"] * 13 >= truth_ms * 0.8
        for c in kept:
            c.close()

        third = r.run()
        m3 = _inst(third)["metrics"]
        assert _count(m3, "logons_per_s", _inst(third)["interval_s"]) == 0
        assert m3["cm_ms_per_logon"] is None  # no logons in that interval
        assert "SCOTT.SALES" in _inst(third)["classes"]
    finally:
        r.close()


def test_views_not_granted_are_recorded_and_the_rest_is_read(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.users["MON"] = UserConfig(
        "mon", "pw", grants=frozenset({"V$SYSSTAT", "V$SYS_TIME_MODEL", "V$INSTANCE"})
    )
    cfg.users["NOBODY"] = UserConfig("nobody", "pw", grants=frozenset())
    sim = oraclesim_factory(cfg)
    r = Runner(_endpoint(sim, "mon", "pw"))
    try:
        samples = [r.run(), r.run()]
    finally:
        r.close()
    for s in samples:
        ss = s.extra["serverstats"]
        assert ss["source"] == "V$"  # no GV$ grant: the own instance only
        assert ss["unavailable"]["V$CPOOL_STATS"] == "ORA-00942"
        assert ss["unavailable"]["V$RESOURCE_LIMIT"] == "ORA-00942"
        assert "V$SYSSTAT" not in ss["unavailable"]
    assert "logons_per_s" in _inst(samples[1])["metrics"]
    assert "processes" not in _inst(samples[1])["metrics"]
    r = Runner(_endpoint(sim, "nobody", "pw"))
    try:
        failed = r.run()
    finally:
        r.close()
    assert failed.status is SampleStatus.ERROR
    assert failed.error_code == "ORA-00942"
    assert "grant" in (failed.error_message or "")


def test_rac_instances_one_by_one_and_a_restart_is_a_reset(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.instances = (InstanceConfig("SALES1", 1), InstanceConfig("SALES2", 2))
    sim = oraclesim_factory(cfg)
    pinned = (
        f"(DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=127.0.0.1)(PORT={sim.port}))"
        "(CONNECT_DATA=(SERVICE_NAME=FREEPDB1)(INSTANCE_NAME=SALES1)))"
    )
    r = Runner(_endpoint(sim, dsn=pinned))
    local = Runner(_endpoint(sim, dsn=pinned), gv="off")
    try:
        first = r.run()
        assert [i["instance"] for i in first.extra["serverstats"]["instances"]] == [
            "SALES1",
            "SALES2",
        ]
        assert first.instance == "SALES1"
        assert [i["inst_id"] for i in local.run().extra["serverstats"]["instances"]] == [1]
        for _ in range(4):
            _connect(sim, "dedicated").close()
        second = r.run()
        per = {i["instance"]: i for i in second.extra["serverstats"]["instances"]}
        # since the first read: the V$-only probe's logon and 4 more, balanced
        total = sum(_count(i["metrics"], "logons_per_s", i["interval_s"]) for i in per.values())
        assert total == pytest.approx(5, rel=0.01)
        assert _count(per["SALES2"]["metrics"], "logons_per_s", per["SALES2"]["interval_s"]) >= 1
        fault = sim.faults.add("instance_down", instance="SALES2")
        down = r.run()
        assert [i["instance"] for i in down.extra["serverstats"]["instances"]] == ["SALES1"]
        sim.faults.remove(fault.id)
        _connect(sim, "dedicated").close()
        after = r.run()
        per = {i["instance"]: i for i in after.extra["serverstats"]["instances"]}
        assert per["SALES2"]["reset"] is True and "logons_per_s" not in per["SALES2"]["metrics"]
        assert per["SALES1"]["reset"] is False
        again = r.run()
        per = {i["instance"]: i for i in again.extra["serverstats"]["instances"]}
        assert per["SALES2"]["reset"] is False and per["SALES2"]["metrics"]["logons_per_s"] >= 0
    finally:
        r.close()
        local.close()


def test_a_pdb_without_its_own_pool_sees_no_pool_rows(oraclesim_factory):
    sim = oraclesim_factory(SimConfig.from_dict({"cdb": True, "no_latency": True}))
    r = Runner(_endpoint(sim))
    try:
        sample = r.run()
    finally:
        r.close()
    unavailable = sample.extra["serverstats"]["unavailable"]
    assert unavailable["V$CPOOL_STATS"] == "NO-ROWS"
    assert unavailable["DBA_CPOOL_INFO"] == "NO-ROWS"
    assert "pool_open" not in _inst(sample)["metrics"]
    assert "logons_current" in _inst(sample)["metrics"]


def test_a_lost_session_is_an_error_sample_then_a_new_logon(fresh_sim):
    r = Runner(_endpoint(fresh_sim))
    try:
        first = r.run()
        fresh_sim.kill_session(first.sid)
        broken = r.run()
        again = r.run()
    finally:
        r.close()
    assert broken.status is SampleStatus.ERROR and broken.error_code.startswith("DPY-")
    assert again.ok and again.logon_ns is not None and again.extra["reconnected"] is True
    assert _inst(again)["interval_s"] is not None  # the counters survive the reconnect


def test_serverstats_is_for_oracle_only():
    with pytest.raises(ProbeConfigError, match="Oracle mode only"):
        create_probe(ProbeSpec("serverstats", PostgresEndpoint("h", 5432, "db", "u")))
    with pytest.raises(ProbeConfigError, match="gv"):
        create_probe(ProbeSpec("serverstats", OracleEndpoint("x", "u", "p"), params={"gv": "x"}))
