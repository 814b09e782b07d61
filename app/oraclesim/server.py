"""The simulator: an asyncio listener (plus a shared-server dispatcher port and, with a
``tls`` section, a tcps port) that answers CONNECT with ACCEPT, REFUSE, REDIRECT or RESEND
and hands accepted connections to a Session on one of its instances.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from app.oraclesim.config import MODES, SimConfig
from app.oraclesim.database.auth import Verifier
from app.oraclesim.database.catalog import Catalog
from app.oraclesim.database.views import ServerState
from app.oraclesim.faults import FaultSet
from app.oraclesim.groundtruth import ConnectionRecord, GroundTruth
from app.oraclesim.instances import Instance, Instances
from app.oraclesim.latency import LatencyModel
from app.oraclesim.session import Closed, FastPathProtocol, Session
from app.oraclesim.tls import server_context, start_server_tls
from app.oraclesim.wire.packets import (
    CONNECT,
    HEADER,
    MAX_CONNECT_DATA,
    ConnectRequest,
    Packet,
    accept,
    parse_connect,
    parse_descriptor,
    read_packet,
    redirect,
    refuse,
    resend,
)


class TlsPendingProtocol(FastPathProtocol):
    """A tcps connection: nothing is read until the TLS layer takes over (start_tls resumes
    reading), so the ClientHello never lands in the plain stream's buffer."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if isinstance(transport, asyncio.ReadTransport):
            transport.pause_reading()


class Simulator:
    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig.default()
        cfg = self.config
        self.faults = FaultSet()
        self.ground = GroundTruth()
        self.instances = Instances(cfg, self.faults)
        self.latency = LatencyModel(enabled=not cfg.no_latency)
        self.live: dict[int, Session] = {}
        self._verifiers: dict[str, Verifier] = {}
        self._server: asyncio.Server | None = None
        self._dispatcher: asyncio.Server | None = None
        self._tls: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.host = cfg.host
        self.port = cfg.port
        self.dispatcher_port = 0
        self.tls_port = 0
        major, minor = cfg.version_tuple
        self.version_no = (major << 24) | (minor << 16)
        self.banner = (
            f"Oracle Database {major}c Simulator Release {major}.0.0.0.0 - Production "
            f"Version {major}.{minor}.0.0.0"
        )

    # ------------------------------------------------------------------ lifecycle
    async def start(self, host: str | None = None, port: int | None = None) -> None:
        self.host = host or self.config.host
        want = self.config.port if port is None else port
        self._server = await self._listen_on(self._on_listener, self.host, want)
        self.port = self._server.sockets[0].getsockname()[1]
        if any(s.shared_redirect and "shared" in s.modes for s in self.config.services.values()):
            self._dispatcher = await self._listen_on(self._on_dispatcher, self.host, 0)
            self.dispatcher_port = self._dispatcher.sockets[0].getsockname()[1]
        tls = self.config.tls
        if tls is not None:
            self._tls_context = server_context(
                Path(tls.cert), Path(tls.key), tls.min_version, tls.max_version
            )
            self._tls = await self._listen_on(self._on_tls, self.host, tls.port, tls=True)
            self.tls_port = self._tls.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for srv in (self._server, self._dispatcher, self._tls):
            if srv is not None:
                srv.close()
        self._server = self._dispatcher = self._tls = None
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def listener_down(self, duration_s: float | None = None) -> None:
        """Stop accepting new connections (clients get 'connection refused'); established
        sessions go on. With duration_s the listener comes back by itself."""
        if duration_s is not None and duration_s > 0:
            loop = asyncio.get_running_loop()
            loop.call_later(duration_s, lambda: loop.create_task(self.listener_up()))
        if self._server is not None:
            self._server.close()  # stop accepting; sessions already accepted go on
            self._server = None

    async def listener_up(self) -> None:
        if self._server is None:
            self._server = await self._listen_on(self._on_listener, self.host, self.port)

    @staticmethod
    async def _listen_on(
        handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        host: str,
        port: int,
        tls: bool = False,
    ) -> asyncio.Server:
        loop = asyncio.get_running_loop()
        cls = TlsPendingProtocol if tls else FastPathProtocol

        def factory() -> FastPathProtocol:
            return cls(asyncio.StreamReader(limit=2**20), handler)

        return await loop.create_server(factory, host, port, reuse_address=True)

    @property
    def listening(self) -> bool:
        return self._server is not None

    # ------------------------------------------------------------------ inspection
    @property
    def state(self) -> ServerState:
        """The first instance's state (the only one unless ``instances`` names several)."""
        return self.instances.all[0].state

    def ground_truth(self) -> list[dict[str, Any]]:
        return self.ground.snapshot()

    def view(self, name: str, instance: str | None = None) -> list[dict[str, Any]]:
        """Rows of a view as a DBA sees them on ``instance`` (default: the first one)."""
        inst = self.instances.by_name(instance) if instance else self.instances.all[0]
        if inst is None:
            raise KeyError(instance)
        self.instances.refresh()
        cfg = self.config
        catalog = Catalog(
            inst.state,
            self.instances.states,
            container="CDB$ROOT" if cfg.cdb else None,
            per_pdb_drcp=cfg.per_pdb_drcp,
        )
        v = catalog.view(name)
        if v is None:
            raise KeyError(name)
        return v[1]

    def sessions(self) -> list[dict[str, Any]]:
        return [s.snapshot() for s in self.live.values()]

    def kill_session(self, sid: int, code: int = 2396) -> bool:
        """Send a CONTROL packet to a live session now (call on the simulator's loop)."""
        session = self.live.get(sid)
        if session is None:
            return False
        session.kill_now(code)
        return True

    def verifier(self, user: str) -> Verifier:
        v = self._verifiers.get(user)
        if v is None:
            ucfg = self.config.users[user]
            v = self._verifiers[user] = Verifier.create(ucfg.password, self.config.pbkdf2_vgen)
        return v

    # ------------------------------------------------------------------ connections
    async def _on_listener(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await self._serve(reader, writer, via_dispatcher=False)

    async def _on_dispatcher(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await self._serve(reader, writer, via_dispatcher=True)

    async def _on_tls(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._serve(reader, writer, via_dispatcher=False, tls=True)

    async def _handshake(self, writer: asyncio.StreamWriter, rec: ConnectionRecord) -> None:
        """The TLS handshake the client starts right after TCP connect (phase ``tls``)."""
        prec = rec.begin("tls")
        for f in self.faults.take("tls", None, None, None):
            if f.kind in ("drop", "kill", "refuse"):
                prec.outcome = "dropped"
                raise Closed
            if f.kind == "hang":
                prec.outcome = "hung"
                await asyncio.sleep(3600)
            if f.kind == "slow":
                prec.injected_ns += int(f.delay_ms * 1e6)
        if prec.injected_ns:
            await asyncio.sleep(prec.injected_ns / 1e9)
        try:
            await start_server_tls(writer, self._tls_context)
        except (ssl.SSLError, OSError) as exc:
            prec.outcome = f"error:{type(exc).__name__}"
            raise Closed from None
        prec.end_ns = time.perf_counter_ns()

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        via_dispatcher: bool,
        tls: bool = False,
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        rec = self.ground.new_connection()
        session: Session | None = None
        try:
            if tls:
                await self._handshake(writer, rec)
            session = await self._listen(reader, writer, rec, via_dispatcher)
            if session is not None:
                await session.run()
        except (Closed, asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # a cancelled handler ends quietly: stop() cancels what is still open
        finally:
            if session is not None:
                session.close()
                if session.mode == "shared":
                    session.state.shared.disp_owned -= 1
            rec.closed_ns = time.perf_counter_ns()
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _read_connect(self, reader: asyncio.StreamReader) -> ConnectRequest:
        head = await reader.readexactly(HEADER)
        if head[:2] == b"\x16\x03":  # a TLS ClientHello on a tcp listener: drop it
            raise Closed
        size = int.from_bytes(head[:2], "big")
        body = await reader.readexactly(size - HEADER) if size > HEADER else b""
        pkt = Packet(head[4], head[5], body)
        if pkt.type != CONNECT:
            raise Closed
        version, sdu, cd_len = parse_connect(pkt.body)
        if cd_len > MAX_CONNECT_DATA or len(pkt.body) < 66 + cd_len:
            text = (await read_packet(reader, False)).payload[:cd_len]
        else:
            text = pkt.body[66 : 66 + cd_len]
        return parse_descriptor(version, sdu, text.decode("utf-8", "replace"))

    async def _listen(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        rec: ConnectionRecord,
        via_dispatcher: bool,
    ) -> Session | None:
        prec = rec.begin("accept")
        req = await self._read_connect(reader)
        rec.service, rec.mode = (req.service or "").upper(), req.server
        svc = self.config.services.get(rec.service)
        mode = req.server if req.server in MODES else "dedicated"

        def refused(code: int) -> None:
            prec.end_ns = time.perf_counter_ns()
            writer.write(refuse(code))
            prec.outcome = f"error:{code}"

        if svc is None:
            refused(12514)
            return None
        if mode not in svc.modes:
            refused(12520)
            return None
        picked = self.instances.pick(req.instance_name)
        if isinstance(picked, int):
            refused(picked)
            return None
        inst: Instance = picked
        fail_logon = 0
        if mode == "dedicated" and not inst.state.process_free():
            # no process for a dedicated server: the listener, told by the instance, refuses;
            # without a fault the process starts and cannot attach (ORA-00020)
            fault = inst.pressure.processes_fault()
            code = fault.code if fault is not None else 20
            if code != 20:
                refused(code)
                return None
            fail_logon = 20
        extra = 0.0
        for f in self.faults.take("accept", svc.name, mode, None):
            if f.kind in ("drop", "kill"):
                prec.outcome = "dropped"
                raise Closed
            if f.kind == "hang":
                prec.outcome = "hung"
                while await reader.read(65536):
                    pass
                raise Closed
            if f.kind == "refuse":
                refused(f.code)
                return None
            if f.kind == "slow":
                extra += f.delay_ms / 1000
            if f.kind == "resend":
                writer.write(resend())
                req = await self._read_connect(reader)
        profile = svc.latency[mode]
        ms = self.latency.sample_ms(profile, "accept", inst.state.logons_in_progress + 1)
        prec.injected_ns = int((ms / 1000 + extra) * 1e9)
        if prec.injected_ns:
            await asyncio.sleep(prec.injected_ns / 1e9)
        if mode == "shared" and svc.shared_redirect and not via_dispatcher:
            prec.end_ns = time.perf_counter_ns()
            writer.write(redirect(self.host, self.dispatcher_port, req.descriptor))
            prec.outcome = "redirect"
            await writer.drain()
            return None
        sdu = max(min(req.sdu or 8192, self.config.sdu), 512)
        prec.end_ns = time.perf_counter_ns()
        writer.write(accept(sdu, self.config.fast_auth))
        if mode == "shared":
            inst.state.shared.open_circuit()
        return Session(self, reader, writer, rec, req, svc, mode, sdu, inst, fail_logon)
