"""TTC primitives as python-oracledb's thin driver reads and writes them.

Integers (ub2/ub4/ub8) are one length byte (0x80 = negative) then big-endian bytes;
byte strings are a 1-byte length (<= 252) or 0xFE followed by ub4-length chunks ending
with a zero ub4; 0x00 and 0xFF mean null.
"""

from __future__ import annotations

LONG_LENGTH = 0xFE
NULL_LENGTH = 0xFF
MAX_SHORT = 252
CHUNK = 32767


class NeedMoreData(Exception):
    """The message continues in a packet that has not arrived yet."""


class Reader:
    """Reads TTC primitives from one request's payload."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def raw(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise NeedMoreData
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def u8(self) -> int:
        if self.pos >= len(self.data):
            raise NeedMoreData
        v = self.data[self.pos]
        self.pos += 1
        return v

    def u16be(self) -> int:
        return int.from_bytes(self.raw(2), "big")

    def u16le(self) -> int:
        return int.from_bytes(self.raw(2), "little")

    def uint(self) -> int:
        """ub2 / ub4 / ub8 / sb*: length byte then big-endian value."""
        n = self.u8()
        neg = bool(n & 0x80)
        n &= 0x7F
        v = int.from_bytes(self.raw(n), "big") if n else 0
        return -v if neg else v

    def bytes_(self) -> bytes | None:
        n = self.u8()
        if n in (0, NULL_LENGTH):
            return None
        if n != LONG_LENGTH:
            return self.raw(n)
        parts = []
        while True:
            size = self.uint()
            if size == 0:
                break
            parts.append(self.raw(size))
        return b"".join(parts)

    def bytes_two_lengths(self) -> bytes | None:
        if self.uint() == 0:
            return None
        return self.bytes_()

    def str_two_lengths(self) -> str | None:
        b = self.bytes_two_lengths()
        return None if b is None else b.decode("utf-8", "replace")

    def null_terminated(self) -> bytes:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise NeedMoreData
        out = self.data[self.pos : end]
        self.pos = end + 1
        return out

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


class Writer:
    """Builds a TTC payload (message bytes, without the packet header)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def u8(self, v: int) -> Writer:
        self.buf.append(v & 0xFF)
        return self

    def u16be(self, v: int) -> Writer:
        self.buf += v.to_bytes(2, "big")
        return self

    def u16le(self, v: int) -> Writer:
        self.buf += v.to_bytes(2, "little")
        return self

    def u32be(self, v: int) -> Writer:
        self.buf += v.to_bytes(4, "big")
        return self

    def raw(self, b: bytes) -> Writer:
        self.buf += b
        return self

    def uint(self, v: int) -> Writer:
        """Universal integer (ub2/ub4/ub8, or signed with the 0x80 length bit)."""
        if v == 0:
            self.buf.append(0)
            return self
        neg = v < 0
        v = -v if neg else v
        n = 1 if v <= 0xFF else 2 if v <= 0xFFFF else 4 if v <= 0xFFFFFFFF else 8
        self.buf.append(n | (0x80 if neg else 0))
        self.buf += v.to_bytes(n, "big")
        return self

    def bytes_(self, b: bytes | None) -> Writer:
        if not b:
            self.buf.append(0)
            return self
        if len(b) <= MAX_SHORT:
            self.buf.append(len(b))
            self.buf += b
            return self
        self.buf.append(LONG_LENGTH)
        for i in range(0, len(b), CHUNK):
            part = b[i : i + CHUNK]
            self.uint(len(part))
            self.buf += part
        self.uint(0)
        return self

    def str_(self, s: str | None) -> Writer:
        return self.bytes_(None if s is None else s.encode())

    def bytes_two_lengths(self, b: bytes | None) -> Writer:
        if not b:
            return self.uint(0)
        self.uint(len(b))
        return self.bytes_(b)

    def str_two_lengths(self, s: str | None) -> Writer:
        return self.bytes_two_lengths(None if s is None else s.encode())

    def getvalue(self) -> bytes:
        return bytes(self.buf)


def encode_number(value: int) -> bytes:
    """An integer in Oracle NUMBER format (base 100 mantissa, excess-65 exponent)."""
    if value == 0:
        return b"\x80"
    neg = value < 0
    v = abs(value)
    digits: list[int] = []
    while v:
        digits.append(v % 100)
        v //= 100
    digits.reverse()
    exponent = len(digits) - 1
    while digits and digits[-1] == 0:
        digits.pop()
    if not neg:
        return bytes([0xC1 + exponent, *[d + 1 for d in digits]])
    out = [(~(0xC1 + exponent)) & 0xFF, *[101 - d for d in digits]]
    if len(digits) < 20:
        out.append(102)
    return bytes(out)
