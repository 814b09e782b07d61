"""Request parsing: function header, piggybacks, call arguments, incomplete requests."""

from __future__ import annotations

import pytest

from app.oraclesim.wire.codec import NeedMoreData, Reader, Writer
from app.oraclesim.wire.requests import FN_FETCH, FN_PING, FN_RELEASE, parse_auth, parse_call


def _end_to_end(module: bytes | None, action: bytes | None) -> Writer:
    w = Writer().u8(0x11).u8(135).u8(3).u8(0).u8(0).uint(0x18)
    w.u8(0).uint(0)  # client identifier not set
    for value in (module, action):
        w.u8(1 if value is not None else 0).uint(len(value or b""))
    w.u8(0).uint(0).u8(0).uint(0)
    w.u8(0).uint(0)  # client info
    w.u8(0).uint(0).u8(0).uint(0)
    w.u8(0).uint(0)  # dbop
    for value in (module, action):
        if value:
            w.bytes_(value)
    return w


def test_piggybacks_before_a_ping_are_skipped_and_closed_cursors_reported():
    w = Writer().u8(0x11).u8(105).u8(1).u8(1).uint(2).uint(7).uint(300)  # close cursors 7, 300
    w.u8(0x11).u8(176).u8(2).uint(0x41)  # session state
    w.raw(_end_to_end(b"connwatch", b"ping").getvalue())
    w.u8(0x03).u8(FN_PING).u8(4)
    req = parse_call(Reader(w.getvalue()))
    assert (req.fn, req.seq, req.closes, req.oneway) == (FN_PING, 4, [7, 300], False)


def test_end_to_end_with_an_empty_value_sent_as_set():
    w = _end_to_end(b"", b"x").u8(0x03).u8(FN_PING).u8(9)
    assert parse_call(Reader(w.getvalue())).seq == 9


def test_one_way_drcp_release_and_fetch_arguments():
    release = parse_call(Reader(Writer().u8(0x1A).u8(FN_RELEASE).u8(5).getvalue()))
    assert release.oneway and release.fn == FN_RELEASE
    fetch = parse_call(Reader(Writer().u8(3).u8(FN_FETCH).u8(6).uint(3).uint(100).getvalue()))
    assert fetch.args == (3, 100)


def test_unknown_piggyback_and_truncated_requests_ask_for_more():
    with pytest.raises(NeedMoreData):
        parse_call(Reader(bytes([0x11, 250, 1, 0, 0])))
    with pytest.raises(NeedMoreData):
        parse_call(Reader(Writer().u8(3).u8(FN_FETCH).u8(6).uint(3).getvalue()))


def test_auth_pairs_and_user():
    w = Writer().u8(3).u8(118).u8(1).u8(1).uint(5).uint(1).u8(1).uint(2).u8(1).u8(1)
    w.bytes_(b"scott")
    for key, value in (("AUTH_TERMINAL", "tty"), ("AUTH_PROGRAM_NM", "")):
        w.str_two_lengths(key).str_two_lengths(value).uint(0)
    req = parse_auth(Reader(w.getvalue()))
    assert req.sql == "scott"
    assert req.pairs == {"AUTH_TERMINAL": "tty", "AUTH_PROGRAM_NM": ""}
