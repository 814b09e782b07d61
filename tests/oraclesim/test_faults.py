"""Faults: definition rules, scoping, count and time window, and what the unmodified
driver raises for each (sync, asyncio, pooled)."""

from __future__ import annotations

import asyncio
import time

import oracledb
import pytest

from app.oraclesim.faults import FaultError, FaultSet

from ._driver import cause_code, code, connect, connect_async, make_pool, make_pool_async


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"kind": "explode"}, "kind: unknown fault kind"),
        ({"kind": "drop", "phase": "lunch"}, "phase: unknown phase"),
        ({"kind": "drop"}, "phase: unknown phase ''"),
        ({"kind": "slow", "phase": "ping"}, "delay_ms: a slow fault needs delay_ms > 0"),
        ({"kind": "drop", "phase": "ping", "mode": "turbo"}, "mode: unknown mode"),
        ({"kind": "drop", "phase": "ping", "count": 0}, "count: must be at least 1"),
        ({"kind": "drop", "phase": "ping", "duration_s": -1}, "duration_s: must be > 0"),
        ({"kind": "refuse", "code": "12514"}, "code: wrong type str"),
    ],
)
def test_bad_fault_definitions_say_what_is_wrong(kwargs, message):
    with pytest.raises(FaultError, match=message):
        FaultSet().add(**kwargs)


def test_defaults_scope_count_and_window():
    faults = FaultSet()
    refuse = faults.add("refuse", service="freepdb1", mode="pooled", count=2)
    assert (refuse.phase, refuse.code, refuse.service) == ("accept", 12520, "FREEPDB1")
    assert faults.take("accept", "FREEPDB1", "dedicated", None) == []
    assert faults.take("accept", "OTHER", "pooled", None) == []
    assert faults.take("accept", "FREEPDB1", "pooled", None) == [refuse]
    assert faults.take("accept", "FREEPDB1", "pooled", None) == [refuse]
    assert faults.take("accept", "FREEPDB1", "pooled", None) == []  # count used up
    assert faults.add("kill", "ping").code == 2396
    assert faults.add("refuse", "logon").code == 1017
    window = faults.add("drop", "ping", user="SCOTT", duration_s=0.05)
    assert faults.take("ping", "X", "shared", "scott")[-1] is window
    time.sleep(0.06)
    assert window not in faults.active()
    assert faults.remove(refuse.id) is False  # already expired
    faults.clear()
    assert faults.active() == []


def test_refuse_at_accept_with_a_given_code(oraclesim):
    oraclesim.faults.add("refuse", code=12516, count=1)
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim)
    assert code(ei.value) == "DPY-6005"
    assert cause_code(ei.value) == "DPY-6000"
    assert "ORA-12516" in str(ei.value.__cause__)
    with connect(oraclesim) as conn:  # count was 1
        conn.ping()


def test_refuse_scoped_to_a_mode_leaves_the_others_alone(oraclesim):
    oraclesim.faults.add("refuse", mode="pooled", code=12519)
    with connect(oraclesim, mode="shared") as conn:
        conn.ping()
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim, mode="pooled")
    assert "ORA-12519" in str(ei.value.__cause__)


def test_refuse_at_logon_scoped_to_a_user(oraclesim):
    oraclesim.faults.add("refuse", "logon", user="scott", code=1034)
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim)
    assert code(ei.value) == "ORA-01034"


def test_refuse_at_a_call_phase_answers_with_the_ora_error(oraclesim):
    with connect(oraclesim) as conn:
        oraclesim.faults.add("refuse", "query", code=1013, count=1)
        with pytest.raises(oracledb.OperationalError) as ei:
            conn.cursor().execute("select 1 from dual")
        assert code(ei.value) == "ORA-01013"
        conn.ping()


def test_drop_at_accept(oraclesim):
    oraclesim.faults.add("drop", "accept")
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim)
    assert code(ei.value) == "DPY-6005"
    assert cause_code(ei.value) == "DPY-4011"


@pytest.mark.parametrize("phase", ["negotiate", "logon"])
def test_drop_during_logon(oraclesim, phase):
    oraclesim.faults.add("drop", phase)
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(oraclesim)
    assert type(ei.value) is oracledb.DatabaseError
    assert code(ei.value) == "DPY-4011"


@pytest.mark.parametrize(
    "phase,call",
    [
        ("ping", lambda c: c.ping()),
        ("commit", lambda c: c.commit()),
        ("query", lambda c: c.cursor().execute("select 1 from dual")),
    ],
)
def test_drop_at_a_call(oraclesim, phase, call):
    conn = connect(oraclesim)
    oraclesim.faults.add("drop", phase)
    with pytest.raises(oracledb.DatabaseError) as ei:
        call(conn)
    assert type(ei.value) is oracledb.DatabaseError
    assert code(ei.value) == "DPY-4011"
    assert not conn.is_healthy()
    conn.close()


def test_drop_at_logoff_is_not_seen_by_close(oraclesim):
    conn = connect(oraclesim)
    sid = conn.session_id
    oraclesim.faults.add("drop", "logoff")
    conn.close()  # python-oracledb ignores errors while closing
    rec = next(r for r in oraclesim.ground_truth() if r["sid"] == sid)
    assert rec["phases"][-1]["outcome"] == "dropped"


def test_drop_async(oraclesim):
    async def run():
        conn = await connect_async(oraclesim)
        oraclesim.faults.add("drop", "ping")
        with pytest.raises(oracledb.DatabaseError) as ei:
            await conn.ping()
        await conn.close()
        return code(ei.value)

    assert asyncio.run(run()) == "DPY-4011"


@pytest.mark.parametrize("phase", ["accept", "negotiate", "logon"])
def test_hang_during_connect_never_answers(oraclesim, phase):
    oraclesim.faults.add("hang", phase)

    async def run():
        await asyncio.wait_for(connect_async(oraclesim), 0.3)

    with pytest.raises(TimeoutError):
        asyncio.run(run())
    outcomes = [p["outcome"] for p in oraclesim.ground_truth()[-1]["phases"]]
    assert outcomes[-1] == "hung"


def test_hang_at_a_call_ends_in_dpy_4011_after_call_timeout(oraclesim):
    with connect(oraclesim) as conn:
        oraclesim.faults.add("hang", "ping")
        conn.call_timeout = 150
        t0 = time.perf_counter()
        with pytest.raises(oracledb.DatabaseError) as ei:
            conn.ping()  # the break is ignored too: a second timeout closes the connection
        assert code(ei.value) == "DPY-4011"
        assert 0.25 < time.perf_counter() - t0 < 2


def test_slow_phase_is_what_the_client_measures(oraclesim):
    with connect(oraclesim) as conn:
        oraclesim.faults.add("slow", "ping", delay_ms=120, count=1)
        t0 = time.perf_counter_ns()
        conn.ping()
        elapsed = time.perf_counter_ns() - t0
        sid = conn.session_id
    rec = next(r for r in oraclesim.ground_truth() if r["sid"] == sid)
    ping = next(p for p in rec["phases"] if p["phase"] == "ping")
    assert ping["injected_ns"] == 120_000_000
    assert ping["end_ns"] - ping["start_ns"] >= 120_000_000
    assert elapsed >= ping["end_ns"] - ping["start_ns"]


def test_slow_ping_inside_pool_acquire_with_ping_interval_zero(oraclesim):
    oraclesim.faults.add("slow", "ping", mode="pooled", delay_ms=100)
    pool = make_pool(oraclesim, min=1, max=1, ping_interval=0)
    try:
        with pool.acquire():  # a new connection: not pinged
            pass
        t0 = time.perf_counter()
        with pool.acquire():  # a pooled one: the ping runs inside acquire(), in the foreground
            pass
        assert time.perf_counter() - t0 >= 0.1
    finally:
        pool.close(force=True)


@pytest.mark.parametrize("phase", ["ping", "query", "logon"])
def test_kill_answers_with_a_control_packet(oraclesim, phase):
    if phase == "logon":
        oraclesim.faults.add("kill", "logon")
        with pytest.raises(oracledb.DatabaseError) as ei:
            connect(oraclesim)
        assert code(ei.value) == "DPY-4033"
        return
    conn = connect(oraclesim)
    oraclesim.faults.add("kill", phase)
    with pytest.raises(oracledb.DatabaseError) as ei:
        conn.ping() if phase == "ping" else conn.cursor().execute("select 1 from dual")
    assert code(ei.value) == "DPY-4033"
    conn.close()


def test_time_window_fault_stops_by_itself(oraclesim):
    oraclesim.faults.add("refuse", code=12520, duration_s=0.2)
    with pytest.raises(oracledb.OperationalError):
        connect(oraclesim)
    time.sleep(0.25)
    with connect(oraclesim) as conn:
        conn.ping()


def test_refuse_faults_async(oraclesim):
    async def run():
        oraclesim.faults.add("refuse", code=12516, count=1)
        with pytest.raises(oracledb.OperationalError) as ei:
            await connect_async(oraclesim)
        assert code(ei.value) == "DPY-6005" and cause_code(ei.value) == "DPY-6000"
        oraclesim.faults.add("refuse", "logon", code=28000, count=1)
        with pytest.raises(oracledb.DatabaseError) as ei:
            await connect_async(oraclesim, mode="pooled")
        assert code(ei.value) == "ORA-28000"
        conn = await connect_async(oraclesim, mode="pooled")
        oraclesim.faults.add("refuse", "query", code=942, count=1)
        with pytest.raises(oracledb.DatabaseError) as ei:
            await conn.cursor().execute("select 1 from dual")
        assert code(ei.value) == "ORA-00942"
        oraclesim.faults.add("slow", "commit", delay_ms=80, count=1)
        t0 = time.perf_counter()
        await conn.commit()
        assert time.perf_counter() - t0 >= 0.08
        await conn.close()

    asyncio.run(run())


def test_pool_acquire_replaces_a_connection_whose_ping_drops(oraclesim):
    pool = make_pool(oraclesim, min=1, max=1, ping_interval=0)
    try:
        with pool.acquire() as conn:
            first = conn.session_id
        oraclesim.faults.add("drop", "ping", mode="pooled", count=1)
        with pool.acquire() as conn:  # the driver drops the dead one and logs on again
            assert conn.session_id != first
            conn.ping()
    finally:
        pool.close(force=True)
    outcomes = [
        p["outcome"] for r in oraclesim.ground_truth() for p in r["phases"] if p["phase"] == "ping"
    ]
    assert "dropped" in outcomes


def test_pool_acquire_replaces_a_dropped_connection_async(oraclesim):
    async def run():
        pool = make_pool_async(oraclesim, min=1, max=1, ping_interval=0)
        try:
            async with pool.acquire() as conn:
                first = conn.session_id
            oraclesim.faults.add("drop", "ping", mode="pooled", count=1)
            async with pool.acquire() as conn:
                assert conn.session_id != first
                await conn.ping()
        finally:
            await pool.close(force=True)

    asyncio.run(run())


@pytest.mark.parametrize(
    "fault,expected",
    [
        ({"kind": "refuse", "phase": "query", "code": 942}, ("DatabaseError", "ORA-00942")),
        ({"kind": "kill", "phase": "query"}, ("DatabaseError", "DPY-4033")),  # async: DPY-4011
        ({"kind": "drop", "phase": "query"}, ("DatabaseError", "DPY-4011")),
        ({"kind": "slow", "phase": "query", "delay_ms": 3000}, ("DatabaseError", "DPY-4024")),
    ],
)
@pytest.mark.parametrize("flavor", ["sync-pool", "async-pool"])
def test_faults_on_pooled_connections(oraclesim, fault, expected, flavor):
    oraclesim.faults.clear()

    def check(exc: BaseException) -> None:
        want = expected
        if flavor == "async-pool" and fault["kind"] == "kill":
            # the asyncio driver only notices a CONTROL packet between calls; with a call in
            # flight it sees the connection close that follows
            want = ("DatabaseError", "DPY-4011")
        assert (type(exc).__name__, code(exc)) == want

    if flavor == "sync-pool":
        pool = make_pool(oraclesim, min=1, max=1, ping_interval=60)
        try:
            with pool.acquire() as conn:
                conn.call_timeout = 200
                oraclesim.faults.add(count=1, **fault)
                with pytest.raises(oracledb.Error) as ei:
                    conn.cursor().execute("select 1 from dual")
                check(ei.value)
        finally:
            pool.close(force=True)
        return

    async def run() -> None:
        pool = make_pool_async(oraclesim, min=1, max=1, ping_interval=60)
        try:
            async with pool.acquire() as conn:
                conn.call_timeout = 200
                oraclesim.faults.add(count=1, **fault)
                with pytest.raises(oracledb.Error) as ei:
                    await conn.cursor().execute("select 1 from dual")
                check(ei.value)
        finally:
            await pool.close(force=True)

    asyncio.run(run())


@pytest.mark.parametrize("kind,expected", [("refuse", "ORA-01034"), ("kill", "DPY-4033")])
def test_refuse_and_kill_during_negotiation(oraclesim, kind, expected):
    oraclesim.faults.add(kind, "negotiate", code=1034 if kind == "refuse" else None)
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(oraclesim)
    assert code(ei.value) == expected
