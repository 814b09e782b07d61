"""Packet framing, listener answers and descriptor parsing."""

from __future__ import annotations

from app.oraclesim.wire.packets import (
    ACCEPT,
    DATA,
    FLAG_FAST_AUTH,
    REDIRECT,
    REFUSE,
    accept,
    data_packets,
    parse_descriptor,
    redirect,
    refuse,
)


def test_accept_is_what_the_client_reads():
    pkt = accept(8192, fast_auth=True)
    assert int.from_bytes(pkt[:2], "big") == len(pkt) == 45 and pkt[4] == ACCEPT
    assert int.from_bytes(pkt[8:10], "big") == 318  # version
    assert int.from_bytes(pkt[10:12], "big") & 0x0400 == 0  # no out-of-band breaks
    assert int.from_bytes(pkt[32:36], "big") == 8192
    assert int.from_bytes(pkt[41:45], "big") == FLAG_FAST_AUTH


def test_refuse_carries_the_error_code():
    pkt = refuse(12514)
    assert pkt[4] == REFUSE and b"(ERR=12514)" in pkt
    assert int.from_bytes(pkt[10:12], "big") == len(pkt) - 12


def test_redirect_data_follows_in_a_data_packet():
    pkt = redirect("127.0.0.1", 4000, "(DESCRIPTION=(X=1))")
    size = int.from_bytes(pkt[:2], "big")
    assert pkt[4] == REDIRECT and pkt[size + 4] == DATA
    assert b"(PORT=4000))\x00(DESCRIPTION=(X=1))" in pkt[size:]


def test_responses_larger_than_the_sdu_are_split():
    payload = bytes(5000)
    out = data_packets(payload, sdu=1024)
    sizes, pos = [], 0
    while pos < len(out):
        size = int.from_bytes(out[pos : pos + 4], "big")
        assert out[pos + 4] == DATA and size <= 1024
        sizes.append(size)
        pos += size
    assert sum(s - 10 for s in sizes) == 5000


def test_descriptor_fields():
    req = parse_descriptor(
        319,
        8192,
        "(DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=h)(PORT=1))(CONNECT_DATA=(SERVICE_NAME=svc)"
        "(SERVER=POOLED)(CID=(PROGRAM=probe)(HOST=box)(USER=me))(CONNECTION_ID=abc)))",
    )
    assert (req.service, req.server, req.connection_id) == ("svc", "pooled", "abc")
    assert req.cid == {"program": "probe", "host": "box", "user": "me"}
    assert parse_descriptor(319, 0, "(DESCRIPTION=(CONNECT_DATA=(SID=X)))").server == "dedicated"
