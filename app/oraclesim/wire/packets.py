"""Oracle Net packet framing: header, CONNECT parsing and the listener's answers.

Before ACCEPT both sides use a 2-byte length (+2 zero checksum bytes); after an ACCEPT
with version >= 315 the length is 4 bytes.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

CONNECT, ACCEPT, REFUSE, REDIRECT, DATA, RESEND, MARKER, CONTROL = 1, 2, 4, 5, 6, 11, 12, 14
HEADER = 8
EOF_FLAG = 0x0040
MARKER_BREAK, MARKER_RESET, MARKER_INTERRUPT = 1, 2, 3
ACCEPT_VERSION = 318
FLAG_FAST_AUTH = 0x10000000
MAX_CONNECT_DATA = 230


@dataclass(slots=True)
class Packet:
    type: int
    flags: int
    body: bytes  # everything after the 8-byte header

    @property
    def data_flags(self) -> int:
        return int.from_bytes(self.body[:2], "big") if self.type == DATA else 0

    @property
    def payload(self) -> bytes:
        """A DATA packet's TTC bytes (after the 2 data-flag bytes)."""
        return self.body[2:] if self.type == DATA else self.body


async def read_packet(reader: asyncio.StreamReader, large: bool) -> Packet:
    """One packet; raises asyncio.IncompleteReadError when the peer closes."""
    head = await reader.readexactly(HEADER)
    size = int.from_bytes(head[:4], "big") if large else int.from_bytes(head[:2], "big")
    body = await reader.readexactly(size - HEADER) if size > HEADER else b""
    return Packet(head[4], head[5], body)


def frame(ptype: int, body: bytes, large: bool, flags: int = 0) -> bytes:
    size = HEADER + len(body)
    length = size.to_bytes(4, "big") if large else size.to_bytes(2, "big") + b"\x00\x00"
    return length + bytes([ptype, flags, 0, 0]) + body


def data_packets(payload: bytes, sdu: int, data_flags: int = 0) -> bytes:
    """A response as DATA packets no larger than the SDU (4-byte lengths)."""
    room = max(sdu - HEADER - 2, 64)
    flags = data_flags.to_bytes(2, "big")
    if len(payload) <= room:
        return frame(DATA, flags + payload, True)
    return b"".join(
        frame(DATA, flags + payload[i : i + room], True) for i in range(0, len(payload), room)
    )


def accept(sdu: int, fast_auth: bool) -> bytes:
    body = bytearray(37)
    body[0:2] = ACCEPT_VERSION.to_bytes(2, "big")
    body[2:4] = (0x0001).to_bytes(2, "big")  # service options: no out-of-band breaks
    body[4:6] = min(sdu, 0xFFFF).to_bytes(2, "big")
    body[6:8] = min(sdu, 0xFFFF).to_bytes(2, "big")
    body[8:10] = b"\x01\x00"  # byte order
    body[14] = 0x04  # NSI flags: network encryption disabled
    body[24:28] = sdu.to_bytes(4, "big")
    body[33:37] = (FLAG_FAST_AUTH if fast_auth else 0).to_bytes(4, "big")
    return frame(ACCEPT, bytes(body), False)


def refuse(code: int, text: str = "") -> bytes:
    desc = f"(DESCRIPTION=(TMP=)(VSNNUM=0)(ERR={code})(ERROR_STACK=(ERROR=(CODE={code})"
    desc += f"(EMFI=4)(ARGS='{text}'))))"
    raw = desc.encode()
    return frame(REFUSE, bytes([34, 0]) + len(raw).to_bytes(2, "big") + raw, False)


def redirect(host: str, port: int, descriptor: str) -> bytes:
    data = f"(ADDRESS=(PROTOCOL=tcp)(HOST={host})(PORT={port}))\x00{descriptor}".encode()
    return frame(REDIRECT, len(data).to_bytes(2, "big"), False) + frame(
        DATA, b"\x00\x00" + data, False
    )


def resend() -> bytes:
    return frame(RESEND, b"", False)


def marker(kind: int) -> bytes:
    return frame(MARKER, bytes([1, 0, kind]), True)


def control_error(code: int) -> bytes:
    """CONTROL packet, in-band notification: the client marks the connection dead."""
    return frame(CONTROL, (8).to_bytes(2, "big") + bytes(4) + code.to_bytes(4, "big"), True)


@dataclass(slots=True)
class ConnectRequest:
    version: int
    sdu: int
    descriptor: str
    service: str | None = None
    server: str = "dedicated"
    cid: dict[str, str] = field(default_factory=dict)
    connection_id: str = ""
    instance_name: str | None = None  # CONNECT_DATA's INSTANCE_NAME: pins one instance


def parse_connect(body: bytes) -> tuple[int, int, int]:
    """(version, sdu, connect-data length) from a CONNECT body."""
    version = int.from_bytes(body[0:2], "big")
    sdu16 = int.from_bytes(body[6:8], "big")
    cd_len = int.from_bytes(body[16:18], "big")
    sdu = int.from_bytes(body[50:54], "big") if len(body) >= 54 else sdu16
    return version, sdu or sdu16, cd_len


_KV = re.compile(r"\(\s*([A-Za-z_]+)\s*=\s*([^()]*?)\s*\)")


def parse_descriptor(version: int, sdu: int, text: str) -> ConnectRequest:
    req = ConnectRequest(version=version, sdu=sdu, descriptor=text)
    values = {k.upper(): v for k, v in _KV.findall(text)}
    req.service = values.get("SERVICE_NAME") or values.get("SID")
    req.server = (values.get("SERVER") or "dedicated").lower()
    req.connection_id = values.get("CONNECTION_ID", "")
    req.instance_name = values.get("INSTANCE_NAME") or None
    for key in ("PROGRAM", "HOST", "USER"):
        m = re.search(r"\(CID=.*?\(" + key + r"=([^()]*)\)", text, re.I)
        if m:
            req.cid[key.lower()] = m.group(1)
    return req
