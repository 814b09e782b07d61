"""The query catalogue (a tiny SQL subset over DUAL, V$ views and scratch tables)."""

from __future__ import annotations

import pytest

from app.oraclesim.database.queries import DmlResult, QueryResult, SqlError, run, split_top
from app.oraclesim.database.views import ServerState, SessionInfo


def _env(name: str) -> str | None:
    return {"SID": "42", "SERVER_TYPE": "SHARED", "SESSION_USER": "SCOTT"}.get(name)


@pytest.fixture
def state() -> ServerState:
    st = ServerState(2, 4, 1.0)
    st.sessions[42] = SessionInfo(42, 7, "scott", "SHARED", "FREEPDB1", "probe", "host1")
    st.sessions[43] = SessionInfo(43, 8, "scott", "DEDICATED", "FREEPDB1", "probe", "host1")
    return st


def q(sql: str, state: ServerState) -> QueryResult:
    res = run(sql, state, _env, ("CONNWATCH_PROBE",))
    assert isinstance(res, QueryResult)
    return res


def test_select_literals_and_sys_context(state):
    res = q("SELECT 1, 'a''b' AS txt, sys_context('userenv', 'sid') FROM dual;", state)
    assert [c.name for c in res.columns] == ["1", "TXT", "SYS_CONTEXT('USERENV','SID')"]
    assert [c.kind for c in res.columns] == ["number", "varchar", "varchar"]
    assert res.rows == [(1, "a'b", "42")]


def test_v_session_server_of_the_current_session(state):
    sql = "select server from v$session where sid = sys_context('USERENV','SID')"
    assert q(sql, state).rows == [("SHARED",)]


def test_where_and_order_by_and_count(state):
    assert q("select sid from v$session order by sid desc", state).rows == [(43,), (42,)]
    assert q("select count(*) from v$session where server = 'DEDICATED'", state).rows == [(1,)]
    assert q("select count(*) n from v$session where sid = 1", state).rows == [(0,)]


def test_dml_on_scratch_tables_and_transaction_statements(state):
    assert run(
        "insert into connwatch.connwatch_probe values (1)", state, _env, ("CONNWATCH_PROBE",)
    ) == DmlResult(1)
    assert run("commit", state, _env, ()) == DmlResult(0, "commit")
    assert run("rollback;", state, _env, ()) == DmlResult(0, "rollback")


@pytest.mark.parametrize(
    "sql,code",
    [
        ("select * from emp", 942),
        ("delete from emp", 942),
        ("drop table x", 942),
        ("select nosuch from v$session", 904),
        ("select sys_context('USERENV','NOPE') from dual", 2003),
    ],
)
def test_errors(state, sql, code):
    with pytest.raises(SqlError) as ei:
        run(sql, state, _env, ("CONNWATCH_PROBE",))
    assert ei.value.code == code
    assert ei.value.text.startswith(f"ORA-{code:05d}: ")


def test_split_top_respects_parentheses_and_quotes():
    assert split_top("a, f(b, c), 'x,y'") == ["a", "f(b, c)", "'x,y'"]
