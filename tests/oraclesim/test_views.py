"""Server views and DRCP: values move with the load; pools (sync and asyncio, ping_interval
0 and > 0); connection class and purity; release; exhausted pooled servers."""

from __future__ import annotations

import asyncio
import threading
import time

import oracledb
import pytest

from app.oraclesim import SimConfig

from ._driver import code, connect, eventually, make_pool, make_pool_async, sysstat


def test_logons_cumulative_and_cm_time_move_with_logons(oraclesim):
    logons = sysstat(oraclesim, "logons cumulative")
    cm = oraclesim.view("v$sys_time_model")[0]["VALUE"]
    for _ in range(3):
        connect(oraclesim).close()
    assert sysstat(oraclesim, "logons cumulative") == logons + 3
    assert oraclesim.view("v$sys_time_model")[0]["VALUE"] > cm
    with connect(oraclesim) as conn:
        row = (
            conn.cursor()
            .execute(
                "select value from v$sys_time_model "
                "where stat_name = 'connection management call elapsed time'"
            )
            .fetchone()
        )
        assert row[0] >= oraclesim.view("v$sys_time_model")[0]["VALUE"] - 10**6


def test_standalone_pooled_connection_releases_its_server_on_close(oraclesim):
    before = oraclesim.view("v$cpool_stats")[0]
    conn = connect(oraclesim, mode="pooled", cclass="STANDALONE")
    during = oraclesim.view("v$cpool_stats")[0]
    conn.close()  # DRCP release + EOF, no logoff
    eventually(
        lambda: oraclesim.view("v$cpool_stats")[0]["NUM_BUSY_SERVERS"] == before["NUM_BUSY_SERVERS"]
    )
    after = oraclesim.view("v$cpool_stats")[0]
    assert during["NUM_BUSY_SERVERS"] == before["NUM_BUSY_SERVERS"] + 1
    assert after["NUM_BUSY_SERVERS"] == before["NUM_BUSY_SERVERS"]
    assert after["NUM_REQUESTS"] == before["NUM_REQUESTS"] + 1
    cc = {r["CCLASS_NAME"]: r for r in oraclesim.view("v$cpool_cc_stats")}
    assert cc["SCOTT.STANDALONE"]["NUM_MISSES"] >= 1
    phases = [p["phase"] for p in oraclesim.ground_truth()[-1]["phases"]]
    assert "logoff" not in phases


@pytest.mark.parametrize("ping_interval", [0, 60])
def test_pool_with_cclass_and_purity_self_gets_hits(oraclesim, ping_interval):
    cclass = f"HITS{ping_interval}"
    pool = make_pool(
        oraclesim,
        min=1,
        max=2,
        increment=1,
        cclass=cclass,
        purity=oracledb.PURITY_SELF,
        ping_interval=ping_interval,
    )
    try:
        for _ in range(4):
            with pool.acquire() as conn:
                assert conn.cursor().execute(
                    "select sys_context('USERENV','SERVER_TYPE') from dual"
                ).fetchone() == ("POOLED",)
    finally:
        pool.close()
    cc = {r["CCLASS_NAME"]: r for r in oraclesim.view("v$cpool_cc_stats")}[f"SCOTT.{cclass}"]
    assert cc["NUM_REQUESTS"] == 4
    assert cc["NUM_HITS"] == 3
    rec = oraclesim.ground_truth()[-1]
    assert rec["cclass"] == cclass and rec["purity"] == 2
    pings = sum(
        p["phase"] == "ping"
        for r in oraclesim.ground_truth()
        for p in r["phases"]
        if r["cclass"] == cclass
    )
    # the very first acquire may find the new connection before it was ever released
    assert pings in ((3, 4) if ping_interval == 0 else (0,))


@pytest.mark.parametrize("ping_interval", [0, 60])
def test_async_pool(oraclesim, ping_interval):
    async def run():
        pool = make_pool_async(
            oraclesim,
            min=1,
            max=2,
            cclass=f"ASYNC{ping_interval}",
            ping_interval=ping_interval,
        )
        try:
            for _ in range(3):
                async with pool.acquire() as conn:
                    cur = conn.cursor()
                    await cur.execute("select 1 from dual")
                    assert await cur.fetchone() == (1,)
        finally:
            await pool.close()

    asyncio.run(run())
    pings = sum(
        p["phase"] == "ping"
        for r in oraclesim.ground_truth()
        for p in r["phases"]
        if r["cclass"] == f"ASYNC{ping_interval}"
    )
    assert pings in ((2, 3) if ping_interval == 0 else (0,))


def test_dedicated_pool(oraclesim):
    pool = make_pool(oraclesim, mode="dedicated", min=1, max=2, ping_interval=0)
    try:
        with pool.acquire() as conn:
            conn.ping()
    finally:
        pool.close()


def _small_drcp(wait_s: float) -> SimConfig:
    cfg = SimConfig.default(no_latency=True)
    cfg.drcp_max_servers = 1
    cfg.drcp_wait_timeout_s = wait_s
    return cfg


def test_exhausted_pooled_servers_refuse_after_the_wait(oraclesim_factory):
    sim = oraclesim_factory(_small_drcp(0.2))
    with connect(sim, mode="pooled"):
        t0 = time.perf_counter()
        with pytest.raises(oracledb.DatabaseError) as ei:
            connect(sim, mode="pooled")
        assert time.perf_counter() - t0 >= 0.2
    assert code(ei.value) == "ORA-12520"
    stats = sim.view("v$cpool_stats")[0]
    assert stats["NUM_WAITS"] == 1 and stats["CLIENT_REQ_TIMEOUTS"] == 1


def test_exhausted_pooled_servers_queue_until_one_is_released(oraclesim_factory):
    sim = oraclesim_factory(_small_drcp(5))
    first = connect(sim, mode="pooled")
    threading.Timer(0.2, first.close).start()
    t0 = time.perf_counter()
    with connect(sim, mode="pooled") as second:
        second.ping()
    assert time.perf_counter() - t0 >= 0.15
    stats = sim.view("v$cpool_stats")[0]
    assert stats["NUM_WAITS"] == 1 and stats["WAIT_TIME"] >= 100
    assert stats["HISTORIC_MAX"] == 1


def test_shared_server_views_count_calls(oraclesim):
    before_q = oraclesim.view("v$queue")[0]["TOTALQ"]
    before = sum(s["REQUESTS"] for s in oraclesim.view("v$shared_server"))
    with connect(oraclesim, mode="shared") as conn:
        for _ in range(5):
            conn.ping()
        owned = oraclesim.view("v$dispatcher")[0]["OWNED"]
        assert owned >= 1
        rows = conn.cursor().execute("select name, status from v$shared_server").fetchall()
        assert ("S000", "EXEC") in rows or ("S000", "WAIT(COMMON)") in rows
    after = sum(s["REQUESTS"] for s in oraclesim.view("v$shared_server"))
    assert after - before == 8  # 5 pings, the execute, one fetch, the logoff
    assert oraclesim.view("v$queue")[0]["TOTALQ"] - before_q == 8


def test_views_are_queryable_with_count_and_where(oraclesim):
    with connect(oraclesim) as a, connect(oraclesim, mode="shared"):
        cur = a.cursor()
        n = cur.execute("select count(*) from v$session where server = 'SHARED'").fetchone()[0]
        assert n >= 1
        names = [r[0] for r in cur.execute("select stat_name from v$sys_time_model")]
        assert names == ["connection management call elapsed time"]
        for view in (
            "v$cpool_stats",
            "v$cpool_cc_stats",
            "v$dispatcher",
            "v$shared_server",
            "v$queue",
            "gv$session",
        ):
            cur.execute(f"select * from {view}")
            assert cur.description
