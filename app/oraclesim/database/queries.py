"""The query catalogue: a tiny SQL subset over DUAL, the V$ views and scratch tables.

    select <items> from <dual | v$view> [where col = value | col in (v, ...) [and ...]]
        [order by col [desc]]
    insert into <scratch table> ... / delete from <scratch table> ...
    commit / rollback

Items: `*`, column names, integer or 'string' literals, sys_context('USERENV', 'X'),
count(*), each with an optional alias. Anything else: ORA-00942.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class SqlError(Exception):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(f"ORA-{code:05d}: {text}")
        self.code = code
        self.text = f"ORA-{code:05d}: {text}"


def no_table() -> SqlError:
    return SqlError(942, "table or view does not exist")


@dataclass(slots=True)
class Column:
    name: str
    kind: str  # "number" | "varchar"


@dataclass(slots=True)
class QueryResult:
    columns: list[Column]
    rows: list[tuple[Any, ...]]


@dataclass(slots=True)
class DmlResult:
    rowcount: int
    kind: str = "dml"  # dml | commit | rollback


UserEnv = Callable[[str], str | None]


class ViewSource(Protocol):
    """Where a query finds its views (a session's Catalog, or one instance's state)."""

    def view(self, name: str) -> tuple[list[tuple[str, str]], list[dict[str, Any]]] | None: ...


_SELECT = re.compile(
    r"^select\s+(?P<items>.+?)\s+from\s+(?P<src>[\w$#.]+)(?:\s+(?P<alias>[a-z_]\w*))?"
    r"(?:\s+where\s+(?P<where>.+?))?"
    r"(?:\s+order\s+by\s+(?P<order>[\w$#]+)(?:\s+(?P<dir>asc|desc))?)?$",
    re.I | re.S,
)
_SYS_CONTEXT = re.compile(r"^sys_context\s*\(\s*'userenv'\s*,\s*'(\w+)'\s*\)$", re.I)
_ALIAS = re.compile(r"^(?P<expr>.+?)(?:\s+as)?\s+(?P<alias>\"[^\"]+\"|[a-z_][\w$#]*)$", re.I | re.S)


def normalize(sql: str) -> str:
    return " ".join(sql.strip().rstrip(";").split())


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at sep outside parentheses and quotes."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, False
    for ch in text:
        if ch == "'":
            quote = not quote
        elif not quote and ch == "(":
            depth += 1
        elif not quote and ch == ")":
            depth -= 1
        if ch == sep and depth == 0 and not quote:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return out


def run(
    sql: str, state: ViewSource, userenv: UserEnv, scratch: tuple[str, ...]
) -> QueryResult | DmlResult:
    text = normalize(sql)
    low = text.lower()
    if low in ("commit", "commit work"):
        return DmlResult(0, "commit")
    if low in ("rollback", "rollback work"):
        return DmlResult(0, "rollback")
    m = re.match(r"^(insert\s+into|delete\s+from|update)\s+([\w$#.]+)", low)
    if m:
        table = m.group(2).split(".")[-1].upper()
        if table not in scratch:
            raise no_table()
        return DmlResult(1 if m.group(1).startswith("insert") else 0)
    m = _SELECT.match(text)
    if not m:
        raise no_table()
    return _select(m, state, userenv)


def _value(expr: str, userenv: UserEnv, row: dict[str, Any] | None) -> tuple[Any, str]:
    e = expr.strip()
    if re.fullmatch(r"-?\d+", e):
        return int(e), "number"
    if len(e) >= 2 and e[0] == e[-1] == "'":
        return e[1:-1].replace("''", "'"), "varchar"
    m = _SYS_CONTEXT.match(e)
    if m:
        value = userenv(m.group(1).upper())
        if value is None:
            raise SqlError(2003, "invalid USERENV parameter")
        return value, "varchar"
    if e.lower() == "user":
        return userenv("SESSION_USER"), "varchar"
    if row is not None:
        key = e.split(".")[-1].strip('"').upper()
        if key in row:
            v = row[key]
            return v, "varchar" if isinstance(v, str) else "number"
    raise SqlError(904, f'"{e.upper()}": invalid identifier')


def _select(m: re.Match[str], state: ViewSource, userenv: UserEnv) -> QueryResult:
    src = m.group("src").split(".")[-1].upper()
    if src == "DUAL":
        cols_def: list[tuple[str, str]] = [("DUMMY", "varchar")]
        rows: list[dict[str, Any]] = [{"DUMMY": "X"}]
    else:
        view = state.view(src)
        if view is None:
            raise no_table()
        cols_def, rows = view
    if m.group("where"):
        rows = [r for r in rows if _matches(m.group("where"), r, userenv)]
    if m.group("order"):
        key = m.group("order").upper()
        if rows and key not in rows[0]:
            raise SqlError(904, f'"{key}": invalid identifier')
        rows = sorted(rows, key=lambda r: r[key], reverse=(m.group("dir") or "").lower() == "desc")
    items = split_top(m.group("items"))
    if items == ["*"]:
        return QueryResult(
            [Column(n, k) for n, k in cols_def], [tuple(r[n] for n, _ in cols_def) for r in rows]
        )
    columns: list[Column] = []
    exprs: list[str | None] = []  # None: count(*)
    for item in items:
        expr, name = item, item.upper().replace(" ", "")
        is_count = re.fullmatch(r"(?i)count\s*\(\s*\*\s*\)", item.strip()) is not None
        am = _ALIAS.match(item)
        if am and not is_count:
            expr, name = am.group("expr"), am.group("alias").strip('"').upper()
            is_count = re.fullmatch(r"(?i)count\s*\(\s*\*\s*\)", expr.strip()) is not None
        if is_count:
            columns.append(Column(name, "number"))
            exprs.append(None)
            continue
        probe_row = rows[0] if rows else dict.fromkeys((n for n, _ in cols_def), "")
        _, kind = _value(expr, userenv, probe_row)
        if not rows and src != "DUAL":
            kind = dict(cols_def).get(expr.strip().upper(), kind)
        columns.append(Column(name, kind))
        exprs.append(expr)
    if None in exprs:  # an aggregate: one row
        first = rows[0] if rows else {}
        return QueryResult(
            columns,
            [tuple(len(rows) if e is None else _value(e, userenv, first)[0] for e in exprs)],
        )
    return QueryResult(
        columns, [tuple(_value(e, userenv, r)[0] for e in exprs if e is not None) for r in rows]
    )


_IN = re.compile(r"^(?P<left>.+?)\s+in\s*\((?P<items>.*)\)$", re.I | re.S)


def _matches(where: str, row: dict[str, Any], userenv: UserEnv) -> bool:
    for cond in re.split(r"\s+and\s+", where, flags=re.I):
        m = _IN.match(cond.strip())
        if m:
            lv, _ = _value(m.group("left"), userenv, row)
            options = [str(_value(x, userenv, row)[0]) for x in split_top(m.group("items"))]
            if str(lv) not in options:
                return False
            continue
        left, sep, right = cond.partition("=")
        if not sep:
            raise SqlError(920, "invalid relational operator")
        lv, _ = _value(left, userenv, row)
        rv, _ = _value(right, userenv, row)
        if str(lv) != str(rv):
            return False
    return True
