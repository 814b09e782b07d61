"""Listener contract: CONNECT answered by ACCEPT, REFUSE, REDIRECT or RESEND; modes;
packets split across reads; requests and responses larger than the SDU."""

from __future__ import annotations

import asyncio
import socket
import time

import oracledb
import pytest

from app.oraclesim import SimConfig

from ._driver import cause_code, code, connect, connect_async

SERVER_TYPE_SQL = (
    "select sys_context('USERENV','SERVER_TYPE'), server from v$session "
    "where sid = sys_context('USERENV','SID')"
)


@pytest.mark.parametrize("mode", ["dedicated", "shared", "pooled"])
def test_each_mode_reports_its_server_type_sync(oraclesim, mode):
    with connect(oraclesim, mode=mode) as conn:
        assert conn.cursor().execute(SERVER_TYPE_SQL).fetchall() == [(mode.upper(), mode.upper())]
        assert conn.service_name == "FREEPDB1"
        assert conn.instance_name == "FREE"
        assert conn.version == "19.24.0.0.0"


@pytest.mark.parametrize("mode", ["dedicated", "shared", "pooled"])
def test_each_mode_reports_its_server_type_async(oraclesim, mode):
    async def run():
        conn = await connect_async(oraclesim, mode=mode)
        try:
            cur = conn.cursor()
            await cur.execute(SERVER_TYPE_SQL)
            return await cur.fetchall()
        finally:
            await conn.close()

    assert asyncio.run(run()) == [(mode.upper(), mode.upper())]


def test_unknown_service_is_refused_with_12514(oraclesim):
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim, service="NOSUCH")
    assert code(ei.value) == "DPY-6005"
    assert cause_code(ei.value) == "DPY-6001"  # "similar to ORA-12514"


@pytest.mark.parametrize("mode", ["shared", "pooled"])
def test_mode_the_service_does_not_offer_is_refused_with_12520(oraclesim, mode):
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim, service="DEDONLY", mode=mode)
    assert code(ei.value) == "DPY-6005"
    assert cause_code(ei.value) == "DPY-6000"
    assert "ORA-12520" in str(ei.value.__cause__)


def test_dedicated_only_service_accepts_dedicated(oraclesim):
    with connect(oraclesim, service="DEDONLY") as conn:
        conn.ping()


def test_unknown_service_refusal_async(oraclesim):
    with pytest.raises(oracledb.OperationalError) as ei:
        asyncio.run(connect_async(oraclesim, service="NOSUCH"))
    assert cause_code(ei.value) == "DPY-6001"


def test_shared_goes_through_a_redirect_to_the_dispatcher(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.services["FREEPDB1"].shared_redirect = True
    sim = oraclesim_factory(cfg)
    assert sim.dispatcher_port not in (0, sim.port)
    with connect(sim, mode="shared") as conn:
        assert conn.cursor().execute(SERVER_TYPE_SQL).fetchone() == ("SHARED", "SHARED")
    first, second = sim.ground_truth()[:2]
    assert first["phases"][0]["outcome"] == "redirect"
    assert [p["phase"] for p in second["phases"]][:3] == ["accept", "negotiate", "logon"]
    assert sim.view("v$dispatcher")[0]["CREATED"] == 1


def test_resend_makes_the_client_send_connect_again(oraclesim):
    fault = oraclesim.faults.add("resend", count=1)
    with connect(oraclesim) as conn:
        conn.ping()
    assert fault.fired == 1


def test_descriptor_longer_than_230_bytes_arrives_in_a_data_packet(oraclesim):
    with connect(oraclesim, program="p" * 300, machine="m" * 100) as conn:
        sid = conn.session_id
        rows = conn.cursor().execute(f"select program from v$session where sid = {sid}").fetchall()
    assert rows == [("p" * 300,)]


def test_requests_and_responses_larger_than_the_sdu(oraclesim_factory):
    cfg = SimConfig.default(no_latency=True)
    cfg.sdu = 1024
    sim = oraclesim_factory(cfg)
    text = "x" * 3000
    with connect(sim) as conn:
        assert conn.cursor().execute(f"select '{text}' from dual").fetchone() == (text,)


def test_connect_packet_split_across_tcp_reads(oraclesim):
    desc = (
        f"(DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=127.0.0.1)(PORT={oraclesim.port}))"
        "(CONNECT_DATA=(SERVICE_NAME=FREEPDB1)(SERVER=dedicated)))"
    ).encode()
    body = bytearray(66)
    body[0:2] = (319).to_bytes(2, "big")
    body[2:4] = (300).to_bytes(2, "big")
    body[6:8] = (8192).to_bytes(2, "big")
    body[16:18] = len(desc).to_bytes(2, "big")
    body[18:20] = (74).to_bytes(2, "big")
    body[50:54] = (8192).to_bytes(4, "big")
    size = 8 + len(body) + len(desc)
    packet = size.to_bytes(2, "big") + b"\x00\x00\x01\x00\x00\x00" + bytes(body) + desc
    with socket.create_connection(("127.0.0.1", oraclesim.port), timeout=5) as s:
        for i in range(0, len(packet), 7):
            s.sendall(packet[i : i + 7])
            time.sleep(0.001)
        head = s.recv(8)
    assert head[4] == 2  # ACCEPT


def test_listener_down_refuses_tcp_and_up_serves_again(oraclesim):
    oraclesim.listener_down()
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim)
    assert code(ei.value) == "DPY-6005"
    assert isinstance(ei.value.__cause__, ConnectionRefusedError)
    oraclesim.listener_up()
    with connect(oraclesim) as conn:
        conn.ping()


def test_listener_down_for_a_while_comes_back_by_itself(oraclesim):
    oraclesim.listener_down(duration_s=0.2)
    with pytest.raises(oracledb.OperationalError):
        connect(oraclesim)
    time.sleep(0.35)
    with connect(oraclesim) as conn:
        conn.ping()
