"""Calls on the server side: transaction flag, cursors, fetch batches."""

from __future__ import annotations

from app.oraclesim.database.calls import Calls
from app.oraclesim.database.views import ServerState
from app.oraclesim.wire.codec import Reader, Writer
from app.oraclesim.wire.requests import FN_COMMIT, FN_EXECUTE, FN_FETCH, Request


def _calls() -> Calls:
    return Calls(ServerState(1, 1, 1.0), lambda name: None, ("CONNWATCH_PROBE",))


def _execute(calls: Calls, sql: str, fetch: int = 2) -> bytes:
    w = Writer()
    req = Request(FN_EXECUTE, 1, Reader(b""), args=(0x01 | 0x20 | 0x40, 0, fetch), sql=sql)
    assert calls.dispatch(req, w) == 0
    return w.getvalue()


def test_insert_opens_a_transaction_commit_closes_it():
    calls = _calls()
    _execute(calls, "insert into connwatch_probe values (1)")
    assert calls.txn and calls.call_status == 0x2
    calls.dispatch(Request(FN_COMMIT, 2, Reader(b"")), Writer())
    assert not calls.txn and calls.state.user_commits == 1


def test_rows_come_in_batches_and_end_with_ora_01403():
    calls = _calls()
    out = _execute(calls, "select * from v$sysstat", fetch=2)
    assert out.count(b"\x07") >= 2  # row data messages
    cursor_id = next(iter(calls.cursors))
    cur = calls.cursors[cursor_id]
    assert cur.pos == 2
    for expected in (4, 6):
        calls.dispatch(Request(FN_FETCH, 3, Reader(b""), args=(cursor_id, 2)), Writer())
        assert cur.pos == expected
    w = Writer()
    calls.dispatch(Request(FN_FETCH, 4, Reader(b""), args=(cursor_id, 2)), w)
    assert b"ORA-01403: no data found" in w.getvalue()


def test_closed_cursors_are_forgotten_and_unknown_cursors_fail():
    calls = _calls()
    _execute(calls, "select 1 from dual")
    cursor_id = next(iter(calls.cursors))
    req = Request(FN_FETCH, 5, Reader(b""), closes=[cursor_id], args=(cursor_id, 1))
    assert calls.dispatch(req, Writer()) == 1001


def test_unknown_sql_forgets_the_cursor():
    calls = _calls()
    w = Writer()
    req = Request(FN_EXECUTE, 1, Reader(b""), args=(0x21, 0, 0), sql="select * from nope")
    assert calls.dispatch(req, w) == 942
    assert calls.cursors == {}
    assert b"ORA-00942" in w.getvalue()
