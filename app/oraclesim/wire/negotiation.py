"""Protocol and data-types negotiation, and the 23ai fast-auth envelope."""

from __future__ import annotations

from app.oraclesim.wire.codec import NeedMoreData, Reader, Writer

CHARSET_AL32UTF8 = 873
NCHARSET_AL16UTF16 = 2000
FIELD_VERSION = 13  # 19.1 ext 1: keeps version-dependent extra fields off


def compile_caps() -> bytes:
    caps = bytearray(55)
    caps[7] = FIELD_VERSION
    return bytes(caps)


def runtime_caps() -> bytes:
    caps = bytearray(13)
    caps[6] = 0x04  # 32K strings; session-state ops left off
    return bytes(caps)


def protocol_reply(banner: str) -> bytes:
    fdo = bytes(9) + NCHARSET_AL16UTF16.to_bytes(2, "big")  # ix = 6, ncharset at ix+3
    w = Writer().u8(1).u8(6).u8(0).raw(banner.encode() + b"\x00")
    w.u16le(CHARSET_AL32UTF8).u8(0).u16le(0)
    w.u16be(len(fdo)).raw(fdo)
    w.bytes_(compile_caps()).bytes_(runtime_caps())
    return w.getvalue()


DATA_TYPES_REPLY = b"\x02\x00\x00"


def skip_protocol_request(r: Reader) -> None:
    """`01 06 00 "python-oracledb" 00`."""
    r.u8()
    r.u8()
    r.u8()
    r.null_terminated()


def skip_data_types_request(r: Reader) -> int:
    """Reads a data-types request; returns the client's TTC field version."""
    r.u8()  # message type 2
    r.u16le()
    r.u16le()
    r.u8()
    ccaps = r.bytes_() or b""
    r.bytes_()
    data, pos = r.data, r.pos  # entries of 4 x u16 until a zero data type
    while True:
        if pos + 2 > len(data):
            raise NeedMoreData
        if data[pos] == 0 and data[pos + 1] == 0:
            break
        pos += 8
    r.pos = pos + 2
    return ccaps[7] if len(ccaps) > 7 else FIELD_VERSION


def parse_fast_auth_prefix(r: Reader) -> int:
    """Fast auth: `22 01 f1 f2` + protocol + charsets + field version + data types.

    Leaves the reader at the auth phase-one function message; returns the field version.
    """
    r.raw(4)
    skip_protocol_request(r)
    r.u16be()
    r.u8()
    r.u16be()
    version = r.u8()
    skip_data_types_request(r)
    return min(version, FIELD_VERSION)
