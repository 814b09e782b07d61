"""What a session's calls do: transactions, cursors, execute / re-execute / fetch."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.oraclesim.database.queries import DmlResult, QueryResult, SqlError, ViewSource
from app.oraclesim.database.queries import run as run_sql
from app.oraclesim.database.views import ServerState
from app.oraclesim.wire import messages as msg
from app.oraclesim.wire.codec import Writer
from app.oraclesim.wire.requests import (
    FN_COMMIT,
    FN_EXECUTE,
    FN_FETCH,
    FN_LOGOFF,
    FN_PING,
    FN_REEXEC,
    FN_REEXEC_FETCH,
    FN_ROLLBACK,
    Request,
)


@dataclass(slots=True)
class Cursor:
    sql: str
    result: QueryResult | None = None
    pos: int = 0


class Calls:
    def __init__(
        self, state: ServerState, userenv: Callable[[str], str | None], scratch: tuple[str, ...]
    ) -> None:
        self.state, self.userenv, self.scratch = state, userenv, scratch
        self.catalog: ViewSource = state  # the session's Catalog once it has logged on
        self.cursors: dict[int, Cursor] = {}
        self.next_cursor = 1
        self.txn = False

    @property
    def call_status(self) -> int:
        return msg.TXN_OPEN if self.txn else 0

    def dispatch(self, req: Request, w: Writer) -> int:
        """Write the answer to req; the ORA error number it carries (0: none)."""
        for cid in req.closes:
            self.cursors.pop(cid, None)
        if req.fn in (FN_PING, FN_LOGOFF):
            msg.status(w, self.call_status, req.seq)
        elif req.fn in (FN_COMMIT, FN_ROLLBACK):
            self.end_txn(req.fn == FN_COMMIT)
            msg.status(w, 0, req.seq)
        elif req.fn == FN_EXECUTE:
            return self.execute(req, w)
        elif req.fn in (FN_REEXEC, FN_REEXEC_FETCH):
            cursor_id, num_iters, commit = req.args
            cur = self.cursors.get(cursor_id)
            if cur is None:
                return self.fail(w, SqlError(1001, "invalid cursor"), cursor_id)
            fetch = num_iters if req.fn == FN_REEXEC_FETCH else 0
            return self.run_cursor(cursor_id, cur, fetch, bool(commit), w, describe=False)
        elif req.fn == FN_FETCH:
            cursor_id, count = req.args
            cur = self.cursors.get(cursor_id)
            if cur is None or cur.result is None:
                return self.fail(w, SqlError(1001, "invalid cursor"), cursor_id)
            self.rows(cursor_id, cur, count, w)
        else:
            return self.fail(w, SqlError(3115, "unsupported network datatype or representation"))
        return 0

    def end_txn(self, commit: bool) -> None:
        if commit:
            self.state.user_commits += 1
        else:
            self.state.user_rollbacks += 1
        self.txn = False

    def fail(self, w: Writer, e: SqlError, cursor_id: int = 0) -> int:
        msg.error(w, e.code, e.text, cursor_id=cursor_id, call_status=self.call_status)
        return e.code

    def execute(self, req: Request, w: Writer) -> int:
        options, cursor_id, num_iters = req.args
        if req.sql:
            if cursor_id == 0:
                cursor_id = self.next_cursor
                self.next_cursor += 1
            self.cursors[cursor_id] = Cursor(req.sql)
        cur = self.cursors.get(cursor_id)
        if cur is None:
            return self.fail(w, SqlError(1001, "invalid cursor"))
        fetch = num_iters if options & 0x40 else 0
        return self.run_cursor(cursor_id, cur, fetch, bool(options & 0x100), w, describe=True)

    def run_cursor(
        self, cursor_id: int, cur: Cursor, fetch: int, commit: bool, w: Writer, describe: bool
    ) -> int:
        self.state.execute_count += 1
        try:
            res = run_sql(cur.sql, self.catalog, self.userenv, self.scratch)
        except SqlError as e:
            self.cursors.pop(cursor_id, None)
            return self.fail(w, e, 0)
        if isinstance(res, DmlResult):
            if res.kind in ("commit", "rollback"):
                self.end_txn(res.kind == "commit")
            elif res.rowcount:
                self.txn = True
            if commit and self.txn:
                self.end_txn(True)
            msg.error(
                w, 0, cursor_id=cursor_id, rowcount=res.rowcount, call_status=self.call_status
            )
            return 0
        cur.result, cur.pos = res, 0
        if describe:
            msg.describe(w, res.columns)
        if fetch:
            self.rows(cursor_id, cur, fetch, w)
        else:
            msg.error(w, 0, cursor_id=cursor_id, call_status=self.call_status)
        return 0

    def rows(self, cursor_id: int, cur: Cursor, count: int, w: Writer) -> None:
        """Up to count rows, then ORA-01403 with the cursor id when none are left."""
        res = cur.result
        assert res is not None
        batch = res.rows[cur.pos : cur.pos + max(count, 1)]
        if batch:
            msg.row_header(w)
        for row in batch:
            msg.row_data(w, res.columns, row)
        cur.pos += len(batch)
        code = msg.ORA_NO_DATA if cur.pos >= len(res.rows) else 0
        msg.error(w, code, cursor_id=cursor_id, rowcount=cur.pos, call_status=self.call_status)
