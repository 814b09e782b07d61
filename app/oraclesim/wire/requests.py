"""Client requests: the function header, piggybacks before it, and each call's arguments.

Every parser raises NeedMoreData while the request continues in a packet not yet read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.oraclesim.wire.codec import NeedMoreData, Reader

FN_LOGOFF, FN_COMMIT, FN_ROLLBACK, FN_FETCH, FN_REEXEC, FN_REEXEC_FETCH = 9, 14, 15, 5, 4, 78
FN_EXECUTE, FN_PING, FN_AUTH1, FN_AUTH2, FN_RELEASE = 94, 147, 118, 115, 163
PHASE_OF = {
    FN_PING: "ping",
    FN_COMMIT: "commit",
    FN_ROLLBACK: "commit",
    FN_LOGOFF: "logoff",
    FN_EXECUTE: "query",
    FN_REEXEC: "query",
    FN_REEXEC_FETCH: "query",
    FN_FETCH: "query",
}
MSG_FUNCTION, MSG_PIGGYBACK, MSG_ONEWAY = 0x03, 0x11, 0x1A


@dataclass(slots=True)
class Request:
    fn: int
    seq: int
    r: Reader
    oneway: bool = False
    closes: list[int] = field(default_factory=list)  # cursors the client closed
    args: tuple[int, ...] = ()
    sql: str = ""  # SQL text (execute) or user name (auth)
    pairs: dict[str, str] = field(default_factory=dict)  # auth key/value pairs


def parse_function(r: Reader) -> Request:
    """Skip piggybacks; return the function (03 fn seq) or one-way call (1A fn seq)."""
    closes: list[int] = []
    while True:
        mtype, fn, seq = r.u8(), r.u8(), r.u8()
        if mtype == MSG_PIGGYBACK:
            skip_piggyback(fn, r, closes)
            continue
        return Request(fn, seq, r, mtype == MSG_ONEWAY, closes)


def skip_piggyback(fn: int, r: Reader, closes: list[int]) -> None:
    if fn == 105:  # close cursors
        r.u8()
        closes.extend(r.uint() for _ in range(r.uint()))
    elif fn == 176:  # session state
        r.uint()
    elif fn == 152:  # set schema
        r.u8()
        r.bytes_two_lengths()
    elif fn == 135:  # end-to-end attributes
        r.u8(), r.u8(), r.uint()  # cidnam, cidser pointers, flags

        def present() -> bool:
            pointer, length = r.u8(), r.uint()
            return pointer == 1 and length > 0

        strings = [present(), present(), present()]  # client identifier, module, action
        r.u8(), r.uint(), r.u8(), r.uint()  # cideci, cidcct, cidecs
        strings.append(present())  # client info
        r.u8(), r.uint(), r.u8(), r.uint()  # cidkstk, cidktgt
        strings.append(present())  # dbop
        for p in strings:
            if p:
                r.bytes_()
    else:
        raise NeedMoreData  # unknown piggyback: the function behind it cannot be found


def parse_auth(r: Reader) -> Request:
    """An auth function (phase one or two): user name in .sql, key/value pairs in .pairs."""
    req = parse_function(r)
    if req.fn not in (FN_AUTH1, FN_AUTH2):
        return req
    has_user, user_len = r.u8(), r.uint()
    r.uint()  # auth mode
    r.u8()
    count = r.uint()
    r.u8(), r.u8()
    req.sql = (r.bytes_() or b"").decode() if has_user and user_len else ""
    for _ in range(count):
        key, value = r.str_two_lengths(), r.str_two_lengths()
        r.uint()  # flags
        if key:
            req.pairs[key.rstrip("\x00")] = value or ""
    return req


def parse_call(r: Reader) -> Request:
    """A call with its arguments in .args (and the SQL text of an execute in .sql)."""
    req = parse_function(r)
    if req.fn in (FN_REEXEC, FN_REEXEC_FETCH):
        cursor_id, num_iters, _, options_2 = r.uint(), r.uint(), r.uint(), r.uint()
        req.args = (cursor_id, num_iters, options_2 & 1)
    elif req.fn == FN_FETCH:
        req.args = (r.uint(), r.uint())
    elif req.fn == FN_EXECUTE:
        options, cursor_id = r.uint(), r.uint()
        r.u8()
        sql_len = r.uint()
        r.u8(), r.uint()  # al8i4 pointer and length
        r.u8(), r.u8(), r.uint()  # al8o4, al8o4l, prefetch buffer size
        num_iters = r.uint()
        r.uint()  # max long size
        r.u8(), r.uint()  # binds
        for _ in range(5):  # al8app, al8txn, al8txl, al8kv, al8kvl
            r.u8()
        r.u8(), r.uint(), r.uint()  # defines, registration id (lsb)
        r.u8(), r.u8(), r.u8(), r.uint(), r.u8(), r.uint()  # objlist .. al8dnaml
        r.uint()  # registration id (msb)
        r.u8(), r.uint(), r.u8()  # DML row counts
        r.u8(), r.uint(), r.u8(), r.uint(), r.u8()  # SQL signature, SQL id (12.2)
        r.u8(), r.uint()  # chunk ids (12.2 ext1)
        if options & 0x01 and sql_len:
            req.sql = (r.bytes_() or b"").decode("utf-8", "replace")
        req.args = (options, cursor_id, num_iters)
    return req
