"""The HTTP/JSON fault control API."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import oracledb
import pytest

from app.oraclesim.tooling.control import ControlServer

from ._driver import cause_code, code, connect, eventually


@pytest.fixture
def api(oraclesim) -> Iterator[Any]:
    server = ControlServer(oraclesim.sim)
    oraclesim.call(server.start("127.0.0.1", 0))

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{server.port}{path}", data=data, method=method
        )
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    call.port = server.port  # type: ignore[attr-defined]
    yield call
    oraclesim.call(server.stop())


def test_add_list_remove_clear_faults(api, oraclesim):
    status, fault = api("POST", "/faults", {"kind": "refuse", "code": 12516, "mode": "shared"})
    assert status == 201 and fault["phase"] == "accept" and fault["code"] == 12516
    with pytest.raises(oracledb.OperationalError) as ei:
        connect(oraclesim, mode="shared")
    assert cause_code(ei.value) == "DPY-6000"
    status, faults = api("GET", "/faults")
    assert [f["fired"] for f in faults] == [1]
    assert api("DELETE", f"/faults/{fault['id']}") == (200, {"removed": fault["id"]})
    assert api("DELETE", f"/faults/{fault['id']}")[0] == 404
    api("POST", "/faults", {"kind": "slow", "phase": "ping", "delay_ms": 5, "count": 3})
    assert api("DELETE", "/faults") == (200, {"cleared": True})
    assert api("GET", "/faults") == (200, [])


@pytest.mark.parametrize(
    "body,message",
    [
        ({"kind": "melt"}, "kind: unknown fault kind"),
        ({"phase": "ping"}, "missing field 'kind'"),
        ({"kind": "drop", "phase": "ping", "colour": 1}, "unknown field 'colour'"),
        ({"kind": "slow", "phase": "ping", "delay_ms": "x"}, "delay_ms: wrong type"),
        ([1, 2], "body must be a JSON object"),
    ],
)
def test_bad_fault_requests_are_400_with_a_reason(api, body, message):
    status, payload = api("POST", "/faults", body)
    assert status == 400 and message in payload["error"]


def test_not_json_and_unknown_paths(api, oraclesim):
    port = int(api("GET", "/health")[1]["port"])
    assert port == oraclesim.port
    assert api("GET", "/nothing-here")[0] == 404
    assert api("GET", "/views/v$nothing")[0] == 404
    assert api("PUT", "/faults")[0] == 405
    assert api("POST", "/sessions/abc/kill", {})[0] == 400
    assert api("POST", "/sessions/99999/kill", {})[0] == 404


def test_malformed_http_is_400(api):
    with socket.create_connection(("127.0.0.1", api.port), timeout=5) as s:
        s.sendall(b"NONSENSE\r\n\r\n")
        reply = s.recv(4096)
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"malformed HTTP request" in reply


def test_listener_down_up_sessions_kill_views_ground_truth(api, oraclesim):
    assert api("POST", "/listener/down") == (200, {"listening": False})
    with pytest.raises(oracledb.OperationalError):
        connect(oraclesim)
    assert api("POST", "/listener/up") == (200, {"listening": True})
    conn = connect(oraclesim)
    sessions = api("GET", "/sessions")[1]
    assert {
        "sid": conn.session_id,
        "user": "scott",
        "service": "FREEPDB1",
        "mode": "dedicated",
    } in sessions
    assert api("POST", f"/sessions/{conn.session_id}/kill", {"code": 2396})[0] == 200
    with pytest.raises(oracledb.DatabaseError) as ei:
        conn.ping()
    assert code(ei.value) == "DPY-4033"
    conn.close()
    status, rows = api("GET", "/views/v$sysstat")
    assert status == 200 and rows[0]["NAME"] == "logons cumulative"
    last = oraclesim.ground_truth()[-1]["conn_id"]
    assert api("GET", f"/ground-truth?since={last - 1}")[1][0]["conn_id"] == last
    assert api("GET", "/ground-truth?since=x")[0] == 400


def test_listener_down_with_a_duration(api, oraclesim):
    assert api("POST", "/listener/down", {"duration_s": "x"})[0] == 400
    assert api("POST", "/listener/down", {"duration_s": 0.2}) == (200, {"listening": False})
    assert eventually(lambda: oraclesim.sim.listening, timeout=3)
