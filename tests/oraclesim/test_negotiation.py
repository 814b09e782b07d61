"""Protocol negotiation answer and the fast-auth envelope."""

from __future__ import annotations

from app.oraclesim.wire import negotiation as neg
from app.oraclesim.wire.codec import Reader, Writer


def test_protocol_reply_layout():
    r = Reader(neg.protocol_reply("Banner"))
    assert (r.u8(), r.u8(), r.u8()) == (1, 6, 0)
    assert r.null_terminated() == b"Banner"
    assert r.u16le() == 873 and r.u8() == 0 and r.u16le() == 0
    fdo = r.raw(r.u16be())
    ix = 6 + fdo[5] + fdo[6]
    assert (fdo[ix + 3] << 8) + fdo[ix + 4] == 2000
    ccaps, rcaps = r.bytes_(), r.bytes_()
    assert ccaps is not None and len(ccaps) == 55 and ccaps[7] == neg.FIELD_VERSION
    assert rcaps is not None and rcaps[6] == 0x04 and r.at_end()


def test_fast_auth_prefix_leaves_the_reader_at_the_auth_message():
    w = Writer().u8(0x22).u8(1).u8(0).u8(0)
    w.u8(1).u8(6).u8(0).raw(b"python-oracledb\x00")
    w.u16be(0).u8(0).u16be(0).u8(13)
    w.u8(2).u16le(873).u16le(873).u8(3).bytes_(bytes(55)).bytes_(bytes(13))
    w.u16be(1).u16be(1).u16be(1).u16be(0).u16be(0)  # one data type, then the terminator
    w.u8(3).u8(118)
    r = Reader(w.getvalue())
    assert neg.parse_fast_auth_prefix(r) == 13
    assert r.u8() == 3 and r.u8() == 118
