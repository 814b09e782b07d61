"""TTC server messages: STATUS, ERROR, PARAMETER, DESCRIBE, ROW HEADER, ROW DATA."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.oraclesim.database.queries import Column
from app.oraclesim.wire.codec import Writer, encode_number

MSG_ERROR, MSG_ROW_HEADER, MSG_ROW_DATA, MSG_PARAMETER, MSG_STATUS = 4, 6, 7, 8, 9
MSG_DESCRIBE = 16
TXN_OPEN = 0x2
ORA_NO_DATA = 1403

ORA_TEXT = {
    1013: "user requested cancel of current operation",
    1017: "invalid credential or not authorized; logon denied",
    1034: "ORACLE not available",
    12520: "TNS:listener could not find available handler for requested type of server",
    28000: "The account is locked.",
    3113: "end-of-file on communication channel",
    1403: "no data found",
    942: "table or view does not exist",
    1012: "not logged on",
    12516: "TNS:listener could not find available handler with matching protocol stack",
    12519: "TNS:no appropriate service handler found",
    20: "maximum number of processes (%s) exceeded",
    12521: "TNS:listener does not currently know of instance requested in connect descriptor",
}


def ora_text(code: int) -> str:
    return f"ORA-{code:05d}: {ORA_TEXT.get(code, 'simulated error')}"


def status(w: Writer, call_status: int = 0, seq: int = 0) -> Writer:
    return w.u8(MSG_STATUS).uint(call_status).uint(seq)


def error(
    w: Writer,
    code: int = 0,
    text: str | None = None,
    *,
    cursor_id: int = 0,
    rowcount: int = 0,
    call_status: int = 0,
    field_version: int = 13,
) -> Writer:
    """ERROR; field_version is the client's TTC field version (before negotiation: 24)."""
    w.u8(MSG_ERROR).uint(call_status).uint(0).uint(0).uint(0).uint(0).uint(0)
    w.uint(cursor_id).uint(0)  # cursor id, error position
    w.raw(bytes(6))  # sql type, fatal, flags, user cursor options, UPI parameter, flags
    w.uint(0).uint(0).u8(0).uint(0).uint(0)  # rowid
    w.uint(0).u8(0).u8(0).uint(0).uint(0).uint(0)  # OS error, stmt#, call#, pad, iters, oerrdd
    w.uint(0).uint(0).uint(0)  # batch errors, offsets, messages
    w.uint(code).uint(rowcount)
    if field_version >= 14:  # 20.1 and later: SQL type, server checksum
        w.uint(0).uint(0)
    if code:
        w.str_(text or ora_text(code))
    return w


def parameters(w: Writer, pairs: Sequence[tuple[str, str, int]]) -> Writer:
    w.u8(MSG_PARAMETER).uint(len(pairs))
    for key, value, flags in pairs:
        w.str_two_lengths(key).str_two_lengths(value).uint(flags)
    return w


def describe(w: Writer, columns: Sequence[Column]) -> Writer:
    w.u8(MSG_DESCRIBE).bytes_(None)
    w.uint(4000 * len(columns)).uint(len(columns))
    if columns:
        w.u8(1)
    for pos, col in enumerate(columns, 1):
        is_num = col.kind == "number"
        w.u8(2 if is_num else 1).u8(0)  # ora type, flags
        w.u8(0).u8(0x81 if is_num else 0)  # precision 0, scale -127
        w.uint(22 if is_num else 4000).uint(0).uint(0)  # buffer size, max elems, cont flags
        w.uint(0)  # oid
        w.uint(0).uint(0 if is_num else 873).u8(0 if is_num else 1)  # version, charset, form
        w.uint(22 if is_num else 4000).uint(0)  # max size, oaccolid
        w.u8(1).u8(0)  # nulls allowed, v7 name length
        w.str_two_lengths(col.name).uint(0).uint(0)  # name, schema, type name
        w.uint(pos).uint(0)  # position, uds flags
    w.uint(0).uint(0).uint(0).uint(0).uint(0).uint(0)  # date, dcb flags..., query key
    return w


def row_header(w: Writer) -> Writer:
    return w.u8(MSG_ROW_HEADER).u8(0).uint(0).uint(0).uint(0).uint(0).uint(0).uint(0)


def row_data(w: Writer, columns: Sequence[Column], row: Sequence[Any]) -> Writer:
    w.u8(MSG_ROW_DATA)
    for col, value in zip(columns, row, strict=True):
        if value is None:
            w.u8(0)
        elif col.kind == "number":
            w.bytes_(encode_number(int(value)))
        else:
            w.str_(str(value))
    return w
