"""RAC: one service from two instances behind one listener, balanced, pinnable with
INSTANCE_NAME, GV$ views with INST_ID, and an instance that goes down and comes back."""

from __future__ import annotations

import oracledb
import pytest

from app.oraclesim import ConfigError, SimConfig
from app.oraclesim.config import InstanceConfig

from ._driver import cause_code, code, connect, eventually

WHO = "select sys_context('USERENV','INSTANCE'), sys_context('USERENV','INSTANCE_NAME') from dual"


def rac_config() -> SimConfig:
    cfg = SimConfig.default(no_latency=True)
    cfg.instances = (InstanceConfig("SALES1", 1), InstanceConfig("SALES2", 2))
    return cfg


@pytest.fixture
def rac(oraclesim_factory):
    return oraclesim_factory(rac_config())


def test_connections_are_balanced_between_the_two_instances(rac):
    seen = []
    for _ in range(6):
        with connect(rac) as conn:
            seen.append(conn.cursor().execute(WHO).fetchone())
            assert conn.instance_name in ("SALES1", "SALES2")
    assert sorted(set(seen)) == [("1", "SALES1"), ("2", "SALES2")]
    assert seen.count(("1", "SALES1")) == 3


def test_kept_sessions_spread_over_both_instances(rac):
    conns = [connect(rac, mode=m) for m in ("dedicated", "dedicated", "pooled", "pooled")]
    try:
        names = sorted(c.instance_name for c in conns)
        assert names == ["SALES1", "SALES1", "SALES2", "SALES2"]
        assert {r["INSTANCE_NAME"] for r in rac.view("gv$instance")} == {"SALES1", "SALES2"}
    finally:
        for c in conns:
            c.close()


def test_instance_name_in_the_descriptor_pins_the_instance(rac):
    dsn = (
        f"(DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=127.0.0.1)(PORT={rac.port}))"
        "(CONNECT_DATA=(SERVICE_NAME=FREEPDB1)(INSTANCE_NAME=SALES2)))"
    )
    for _ in range(3):
        with oracledb.connect(user="scott", password="tiger", dsn=dsn) as conn:
            assert conn.cursor().execute(WHO).fetchone() == ("2", "SALES2")


def test_gv_views_carry_inst_id_and_v_views_the_own_instance(rac):
    a = connect(rac)
    b = connect(rac)
    try:
        cur = a.cursor()
        rows = cur.execute(
            "select inst_id, name, value from gv$sysstat where name = 'logons cumulative'"
        ).fetchall()
        assert sorted((r[0], r[2]) for r in rows) == [(1, 1), (2, 1)]
        mine = cur.execute("select instance_number from v$instance").fetchone()[0]
        assert str(mine) == a.cursor().execute(WHO).fetchone()[0]
    finally:
        a.close()
        b.close()


def test_instance_down_ends_its_sessions_and_the_other_carries_on(rac):
    conns = [connect(rac) for _ in range(2)]
    on = {c.instance_name: c for c in conns}
    fault = rac.faults.add("instance_down", instance="SALES2")
    with pytest.raises(oracledb.DatabaseError) as ei:
        on["SALES2"].ping()
    assert code(ei.value) in ("DPY-4011", "DPY-1001")
    on["SALES1"].ping()  # the other instance's session is untouched
    for _ in range(3):  # new connections all go to the instance that runs
        with connect(rac) as conn:
            assert conn.instance_name == "SALES1"
    pinned = (
        f"(DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=127.0.0.1)(PORT={rac.port}))"
        "(CONNECT_DATA=(SERVICE_NAME=FREEPDB1)(INSTANCE_NAME=SALES2)))"
    )
    with pytest.raises(oracledb.OperationalError) as ei:
        oracledb.connect(user="scott", password="tiger", dsn=pinned)
    assert "ORA-12521" in str(ei.value.__cause__) or cause_code(ei.value) == "DPY-6000"
    assert [r["INSTANCE_NAME"] for r in rac.view("gv$instance")] == ["SALES1"]
    before = rac.view("v$instance", instance="SALES2")[0]["STARTUP_TIME"]
    rac.faults.remove(fault.id)
    # back up: a restarted instance, counters from zero
    eventually(lambda: len(rac.view("gv$instance")) == 2)
    assert rac.view("v$sysstat", instance="SALES2")[0]["VALUE"] == 0
    assert rac.view("v$instance", instance="SALES2")[0]["STARTUP_TIME"] >= before
    on["SALES1"].close()


def test_instances_config_is_checked(tmp_path):
    path = tmp_path / "sim.yaml"
    path.write_text("instances: [{name: a, number: 1}, {name: b, number: 1}]\n")
    with pytest.raises(ConfigError, match=r"instances\[1\]: instance names and numbers"):
        SimConfig.from_yaml(path)
    path.write_text("instances: [{name: a, number: 1}, {name: b, number: 2}]\n")
    assert [i.name for i in SimConfig.from_yaml(path).instances] == ["A", "B"]
