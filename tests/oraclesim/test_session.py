"""Call contract: ping, commit, rollback, logoff, execute / re-execute / fetch, the query
catalogue, call_timeout breaks, session kill."""

from __future__ import annotations

import asyncio
import time

import oracledb
import pytest

from ._driver import code, connect, connect_async, sysstat


def test_ping_commit_rollback_logoff_are_calls_on_the_server(oraclesim):
    with connect(oraclesim) as conn:
        conn.ping()
        conn.commit()
        conn.rollback()
        sid = conn.session_id
    rec = next(r for r in oraclesim.ground_truth() if r["sid"] == sid)
    assert [p["phase"] for p in rec["phases"]] == [
        "accept",
        "negotiate",
        "logon",
        "ping",
        "commit",
        "commit",
        "logoff",
    ]
    assert all(p["outcome"] == "ok" and p["end_ns"] >= p["start_ns"] for p in rec["phases"])


def test_userenv_context(oraclesim):
    names = [
        "SID",
        "INSTANCE",
        "INSTANCE_NAME",
        "SERVER_TYPE",
        "SERVICE_NAME",
        "SERVER_HOST",
        "CON_NAME",
    ]
    sql = "select " + ", ".join(f"sys_context('USERENV', '{n}')" for n in names) + " from dual"
    with connect(oraclesim, mode="pooled") as conn:
        row = conn.cursor().execute(sql).fetchone()
        sid = conn.session_id
    assert row == (str(sid), "1", "FREE", "POOLED", "FREEPDB1", "oraclesim", "FREEPDB1")


def test_select_1_from_dual_execute_reexecute(oraclesim):
    with connect(oraclesim) as conn:
        cur = conn.cursor()
        for _ in range(3):  # first a full execute, then re-executes of the cached cursor
            assert cur.execute("select 1 from dual").fetchall() == [(1,)]
        assert cur.description[0][0] == "1"
        assert cur.description[0][1] is oracledb.DB_TYPE_NUMBER


def test_fetch_calls_bring_the_remaining_rows(oraclesim):
    with connect(oraclesim) as conn:
        cur = conn.cursor()
        cur.prefetchrows = 1
        cur.arraysize = 2
        rows = cur.execute("select name, value from v$sysstat").fetchall()
        assert [r[0] for r in rows][:2] == ["logons cumulative", "logons current"]
        assert len(rows) == 6
        sid = conn.session_id
    rec = next(r for r in oraclesim.ground_truth() if r["sid"] == sid)
    queries = [p for p in rec["phases"] if p["phase"] == "query"]
    assert len(queries) == 4  # execute with 1 row, then fetches of 2, 2 and the last 1


def test_insert_and_commit_on_the_scratch_table(oraclesim):
    commits = sysstat(oraclesim, "user commits")
    with connect(oraclesim) as conn:
        cur = conn.cursor()
        cur.execute("insert into connwatch_probe (id, ts) values (1, systimestamp)")
        assert cur.rowcount == 1
        conn.commit()
    assert sysstat(oraclesim, "user commits") == commits + 1


def test_open_transaction_is_rolled_back_on_close(oraclesim):
    rollbacks = sysstat(oraclesim, "user rollbacks")
    conn = connect(oraclesim)
    conn.cursor().execute("insert into connwatch_probe values (1)")
    conn.close()  # the client sends a rollback because the server said a txn is open
    assert sysstat(oraclesim, "user rollbacks") == rollbacks + 1


def test_autocommit_insert_commits_on_the_server(oraclesim):
    commits = sysstat(oraclesim, "user commits")
    with connect(oraclesim) as conn:
        conn.autocommit = True
        conn.cursor().execute("insert into connwatch_probe values (2)")
    assert sysstat(oraclesim, "user commits") == commits + 1


@pytest.mark.parametrize(
    "sql", ["select * from no_such_table", "insert into t values (1)", "update emp set sal = 0"]
)
def test_unknown_sql_is_ora_00942(oraclesim, sql):
    with connect(oraclesim) as conn:
        with pytest.raises(oracledb.DatabaseError) as ei:
            conn.cursor().execute(sql)
        assert code(ei.value) == "ORA-00942"
        conn.ping()  # still usable


def test_unknown_column_is_ora_00904(oraclesim):
    with connect(oraclesim) as conn, pytest.raises(oracledb.DatabaseError) as ei:
        conn.cursor().execute("select nosuch from v$session")
    assert code(ei.value) == "ORA-00904"


def test_call_timeout_breaks_the_call_and_the_connection_stays_usable(oraclesim):
    with connect(oraclesim) as conn:
        oraclesim.faults.add("slow", "query", delay_ms=3000, count=1)
        conn.call_timeout = 200
        t0 = time.perf_counter()
        with pytest.raises(oracledb.DatabaseError) as ei:
            conn.cursor().execute("select 1 from dual")
        assert time.perf_counter() - t0 < 2
        assert code(ei.value) == "DPY-4024"
        assert conn.cursor().execute("select 1 from dual").fetchone() == (1,)
        sid = conn.session_id
    rec = next(r for r in oraclesim.ground_truth() if r["sid"] == sid)
    assert [p["outcome"] for p in rec["phases"] if p["phase"] == "query"] == ["break", "ok"]


def test_call_timeout_async(oraclesim):
    async def run():
        conn = await connect_async(oraclesim, mode="shared")
        try:
            oraclesim.faults.add("slow", "ping", delay_ms=3000, count=1)
            conn.call_timeout = 200
            with pytest.raises(oracledb.DatabaseError) as ei:
                await conn.ping()
            assert code(ei.value) == "DPY-4024"
            await conn.ping()
        finally:
            await conn.close()

    asyncio.run(run())
    assert oraclesim.view("v$dispatcher")[0]["BREAKS"] >= 1


def test_kill_session_through_the_api(oraclesim):
    with connect(oraclesim) as conn:
        assert oraclesim.kill_session(conn.session_id)
        with pytest.raises(oracledb.DatabaseError) as ei:
            conn.ping()
        assert code(ei.value) == "DPY-4033"
        assert not conn.is_healthy()
    assert oraclesim.kill_session(99999) is False


def test_kill_session_async(oraclesim):
    async def run():
        conn = await connect_async(oraclesim)
        assert oraclesim.kill_session(conn.session_id)
        await asyncio.sleep(0.1)  # the asyncio client reads the CONTROL packet while idle
        with pytest.raises(oracledb.DatabaseError) as ei:
            await conn.ping()
        await conn.close()
        return code(ei.value)

    assert asyncio.run(run()) == "DPY-4033"


def test_v_session_lists_live_sessions(oraclesim):
    with connect(oraclesim, mode="shared") as a, connect(oraclesim) as b:
        rows = (
            b.cursor()
            .execute("select sid, server, username from v$session order by sid")
            .fetchall()
        )
        assert (a.session_id, "SHARED", "SCOTT") in rows
        assert (b.session_id, "DEDICATED", "SCOTT") in rows


def test_numbers_decode_in_the_driver(oraclesim):
    values = [0, 1, -1, 99, 100, -123, 10**15, -(10**12) - 7]
    sql = "select " + ", ".join(str(v) for v in values) + " from dual"
    with connect(oraclesim) as conn:
        assert conn.cursor().execute(sql).fetchone() == tuple(values)


def test_insert_with_binds_large_and_small(oraclesim):
    with connect(oraclesim) as conn:
        cur = conn.cursor()
        for i in range(3):  # a full execute, then re-executes with new bind values
            cur.execute("insert into connwatch_probe (id, ts) values (:1, systimestamp)", [i])
            assert cur.rowcount == 1
        cur.execute("insert into connwatch_probe (id, note) values (:id, :n)", id=5, n="x" * 5000)
        assert cur.rowcount == 1
        conn.commit()


def test_end_to_end_attributes_ride_along_with_calls(oraclesim):
    with connect(oraclesim) as conn:
        conn.module, conn.action, conn.client_identifier = "connwatch", "ping", "probe-1"
        conn.client_info, conn.dbop = "info", "op"
        conn.ping()
        conn.module = "connwatch2"
        assert conn.cursor().execute("select 1 from dual").fetchone() == (1,)
