"""The fault control API: small HTTP/JSON server on its own port (loopback by default).

GET    /health                      listener state and ports
GET    /faults                      active faults
POST   /faults                      add one: {"kind", "phase", "service", "mode", "user",
                                    "code", "delay_ms", "count", "duration_s", "instance"}
DELETE /faults                      clear all;  DELETE /faults/<id>: remove one
POST   /listener/down | /listener/up
GET    /sessions                    live sessions
POST   /sessions/<sid>/kill         {"code": 2396} (optional)
GET    /ground-truth[?since=<conn_id>]
GET    /views/<name>[?instance=X]   e.g. /views/v$cpool_stats, /views/gv$sysstat
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from app.oraclesim.faults import FaultError
from app.oraclesim.server import Simulator

REASONS = {
    200: "OK",
    201: "Created",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
}
FAULT_FIELDS = {
    "kind",
    "phase",
    "service",
    "mode",
    "user",
    "code",
    "delay_ms",
    "count",
    "duration_s",
    "instance",
}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ControlServer:
    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = await asyncio.start_server(self._handle, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        status, payload = 200, None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip()
                for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)
            }
            length = int(headers.get("content-length", "0") or 0)
            if length > 65536:
                raise HttpError(413, "body too large")
            body = await reader.readexactly(length) if length else b""
            status, payload = await self.route(method.upper(), target, body)
        except HttpError as e:
            status, payload = e.status, {"error": str(e)}
        except (ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            status, payload = 400, {"error": "malformed HTTP request"}
        data = json.dumps(payload).encode()
        writer.write(
            f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    async def route(self, method: str, target: str, body: bytes) -> tuple[int, Any]:
        url = urlsplit(target)
        parts = [p for p in url.path.split("/") if p]
        sim = self.sim
        if parts == ["health"] and method == "GET":
            return 200, {
                "listening": sim.listening,
                "port": sim.port,
                "dispatcher_port": sim.dispatcher_port,
                "tls_port": sim.tls_port,
                "instances": [
                    {"name": i.name, "number": i.number, "up": not i.down}
                    for i in sim.instances.all
                ],
            }
        if parts == ["faults"]:
            if method == "GET":
                return 200, [f.as_dict() for f in sim.faults.active()]
            if method == "POST":
                spec = self.json_body(body)
                unknown = sorted(set(spec) - FAULT_FIELDS)
                if unknown:
                    raise HttpError(400, f"unknown field {unknown[0]!r}")
                if "kind" not in spec:
                    raise HttpError(400, "missing field 'kind'")
                try:
                    fault = sim.faults.add(**spec)
                except (FaultError, TypeError) as e:
                    raise HttpError(400, str(e)) from None
                return 201, fault.as_dict()
            if method == "DELETE":
                sim.faults.clear()
                return 200, {"cleared": True}
        if len(parts) == 2 and parts[0] == "faults" and method == "DELETE":
            if not parts[1].isdigit() or not sim.faults.remove(int(parts[1])):
                raise HttpError(404, f"no fault {parts[1]}")
            return 200, {"removed": int(parts[1])}
        if parts in (["listener", "down"], ["listener", "up"]) and method == "POST":
            duration = (self.json_body(body) if body else {}).get("duration_s")
            if duration is not None and (
                isinstance(duration, bool) or not isinstance(duration, int | float)
            ):
                raise HttpError(400, "duration_s must be a number")
            await (sim.listener_down(duration) if parts[1] == "down" else sim.listener_up())
            return 200, {"listening": sim.listening}
        if parts == ["sessions"] and method == "GET":
            return 200, sim.sessions()
        if len(parts) == 3 and parts[0] == "sessions" and parts[2] == "kill" and method == "POST":
            spec = self.json_body(body) if body else {}
            code = spec.get("code", 2396)
            if not parts[1].isdigit() or not isinstance(code, int):
                raise HttpError(400, "sid and code must be integers")
            if not sim.kill_session(int(parts[1]), code):
                raise HttpError(404, f"no session {parts[1]}")
            return 200, {"killed": int(parts[1])}
        if parts == ["ground-truth"] and method == "GET":
            since = parse_qs(url.query).get("since", ["0"])[0]
            if not since.isdigit():
                raise HttpError(400, "since must be an integer")
            return 200, [r for r in sim.ground_truth() if r["conn_id"] > int(since)]
        if len(parts) == 2 and parts[0] == "views" and method == "GET":
            instance = parse_qs(url.query).get("instance", [None])[0]
            try:
                return 200, sim.view(parts[1], instance)
            except KeyError:
                raise HttpError(404, f"no view {parts[1]}") from None
        raise HttpError(404 if method in ("GET", "POST", "DELETE") else 405, "no such endpoint")

    @staticmethod
    def json_body(body: bytes) -> dict[str, Any]:
        try:
            spec = json.loads(body or b"{}")
        except json.JSONDecodeError as e:
            raise HttpError(400, f"body is not JSON: {e.msg}") from None
        if not isinstance(spec, dict):
            raise HttpError(400, "body must be a JSON object")
        return spec
