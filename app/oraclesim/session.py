"""One client connection after ACCEPT: negotiation, logon and the call loop (transport,
faults, latency, breaks, DRCP attach/release, ground truth). What calls do: calls.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from app.oraclesim.config import ServiceConfig
from app.oraclesim.database.auth import Challenge, Verifier
from app.oraclesim.database.calls import Calls
from app.oraclesim.database.catalog import Catalog
from app.oraclesim.database.views import SessionInfo, SharedServer
from app.oraclesim.faults import Fault
from app.oraclesim.groundtruth import ConnectionRecord, PhaseRecord
from app.oraclesim.wire import messages as msg
from app.oraclesim.wire import negotiation as neg
from app.oraclesim.wire.codec import NeedMoreData, Reader, Writer
from app.oraclesim.wire.packets import (
    DATA,
    EOF_FLAG,
    MARKER,
    MARKER_BREAK,
    MARKER_RESET,
    ConnectRequest,
    Packet,
    control_error,
    data_packets,
    marker,
    read_packet,
)
from app.oraclesim.wire.requests import (
    FN_AUTH1,
    FN_AUTH2,
    FN_LOGOFF,
    FN_RELEASE,
    PHASE_OF,
    Request,
    parse_auth,
    parse_call,
)

if TYPE_CHECKING:
    from .instances import Instance
    from .server import Simulator

T = TypeVar("T")
KILL_GRACE_S = 0.5
SERVER_TYPE = {"dedicated": "DEDICATED", "shared": "SHARED", "pooled": "POOLED"}


class FastPathProtocol(asyncio.StreamReaderProtocol):
    """A StreamReaderProtocol whose data_received first offers the data to a fast path."""

    fast: Callable[[bytes], bool] | None = None

    def data_received(self, data: bytes) -> None:
        fast = self.fast
        if fast is None or not fast(data):
            super().data_received(data)


class Closed(Exception):
    """The connection ends (client EOF, drop fault, kill)."""


class Session:
    def __init__(
        self,
        sim: Simulator,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        rec: ConnectionRecord,
        req: ConnectRequest,
        svc: ServiceConfig,
        mode: str,
        sdu: int,
        inst: Instance,
        fail_logon: int = 0,
    ) -> None:
        self.sim, self.reader, self.writer = sim, reader, writer
        self.rec, self.req, self.svc, self.mode, self.sdu = rec, req, svc, mode, sdu
        self.inst, self.state = inst, inst.state  # the instance serving this connection
        self.fail_logon = fail_logon  # an ORA error the logon ends with (ORA-00020)
        self.user: str | None = None
        self.info: SessionInfo | None = None
        self.calls = Calls(self.state, self.userenv, sim.config.scratch_tables)
        inst.on_down.append(self.instance_gone)
        self.cclass = ""
        self.purity = 0
        self.drcp_attached = False
        self._pending: asyncio.Task[Packet] | None = None
        self._killed = False
        self.idle = False

    # ----------------------------------------------------------------- transport
    async def packet(self) -> Packet:
        task, self._pending = self._pending, None
        try:
            pkt = await task if task is not None else await read_packet(self.reader, True)
        except (asyncio.IncompleteReadError, ConnectionError):
            raise Closed from None
        if pkt.type == DATA and pkt.data_flags & EOF_FLAG:
            raise Closed
        return pkt

    def send(self, payload: bytes) -> None:
        self.writer.write(data_packets(payload, self.sdu))

    async def sleep(self, seconds: float) -> bool:
        """Wait, but answer a break from the client: True when the call was broken."""
        if seconds <= 0:
            return False
        if self._pending is None:
            self._pending = asyncio.ensure_future(read_packet(self.reader, True))
        done, _ = await asyncio.wait({self._pending}, timeout=seconds)
        if not done:
            return False
        pkt = await self.packet()
        if pkt.type != MARKER:
            raise Closed  # a new request while a call runs: not something a client does
        await self.break_exchange()
        return True

    async def break_exchange(self) -> None:
        """BREAK from us, RESET from the client, RESET + ORA-01013 from us."""
        self.writer.write(marker(MARKER_BREAK))
        while True:
            pkt = await self.packet()
            if pkt.type == MARKER and pkt.body[2:3] == bytes([MARKER_RESET]):
                break
        self.writer.write(marker(MARKER_RESET))
        self.send(msg.error(Writer(), 1013, call_status=self.call_status).getvalue())
        if self.mode == "shared":
            self.state.shared.disp_breaks += 1

    async def hang(self) -> None:
        """Never answer; read (and ignore) until the client goes away."""
        while True:
            await self.packet()

    @property
    def call_status(self) -> int:
        return self.calls.call_status

    # ----------------------------------------------------------------- phases
    async def apply_faults(self, phase: str, prec: PhaseRecord) -> tuple[float, Fault | None]:
        """Extra delay (s) from slow faults; a refuse/kill fault to answer with."""
        extra, answer = 0.0, None
        for f in self.sim.faults.take(phase, self.svc.name, self.mode, self.user):
            if f.kind == "drop":
                prec.outcome = "dropped"
                raise Closed
            if f.kind == "hang":
                prec.outcome = "hung"
                await self.hang()
            if f.kind == "slow":
                extra += f.delay_ms / 1000
            elif f.kind in ("refuse", "kill"):
                answer = f
        return extra, answer

    async def inject(self, phase: str, prec: PhaseRecord, extra: float = 0.0) -> bool:
        profile = self.svc.latency[self.mode]
        ms = self.sim.latency.sample_ms(profile, phase, self.state.logons_in_progress)
        seconds = ms / 1000 + extra
        prec.injected_ns = int(seconds * 1e9)
        return await self.sleep(seconds)

    def end(self, prec: PhaseRecord, outcome: str = "ok") -> None:
        prec.end_ns = time.perf_counter_ns()
        if prec.outcome == "ok":
            prec.outcome = outcome

    # ----------------------------------------------------------------- main
    async def run(self) -> None:
        st = self.state
        st.logons_in_progress += 1
        pooled = self.mode == "pooled"
        st.drcp.auth_busy += pooled  # pooled logons authenticate in the authentication pool
        logon_t0 = time.perf_counter_ns()
        before = len(self.rec.phases)  # the logon's first phase will be the next one
        try:
            if not await self.logon():
                return
        finally:
            st.logons_in_progress -= 1
            st.drcp.auth_busy -= pooled
        # from the moment the client's first packet is in (the first phase's start), not
        # from when this session began to wait for it: the client's own delay in sending
        # it (a busy host) is not the server's cost of the logon
        mine = self.rec.phases[before:]
        first = mine[0].start_ns if mine else logon_t0
        cm_us = (time.perf_counter_ns() - first) // 1000
        st.cm_elapsed_us += cm_us
        if self.info is not None:
            self.info.cm_us += cm_us
        await self.call_loop()

    def instance_gone(self) -> None:
        """The instance went down: the connection ends (the client reads end-of-file)."""
        self._killed = True
        self.writer.close()

    async def logon(self) -> bool:
        """Negotiation and both auth phases; False when the logon failed (answered)."""
        fast_ok = self.sim.config.fast_auth

        def first(r: Reader) -> tuple[bool, Request | None]:
            if fast_ok and r.data[:1] == b"\x22":
                neg.parse_fast_auth_prefix(r)
                return True, parse_auth(r)
            neg.skip_protocol_request(r)
            return False, None

        fast, req = await self.whole(first)
        if fast:
            prec = self.rec.begin("logon")
        else:
            prec = self.rec.begin("negotiate")
            extra, answer = await self.apply_faults("negotiate", prec)
            await self.inject("negotiate", prec, extra)
            if answer is not None:
                self.end(prec, "killed" if answer.kind == "kill" else f"error:{answer.code}")
                if answer.kind == "kill":
                    await self.kill(answer.code)
                self.send(msg.error(Writer(), answer.code, field_version=24).getvalue())
                return False
            self.send(neg.protocol_reply(self.sim.banner))
            await self.whole(neg.skip_data_types_request)
            self.end(prec)
            self.send(neg.DATA_TYPES_REPLY)
            prec = self.rec.begin("logon")
            req = await self.whole(parse_auth)
        assert req is not None
        if req.fn != FN_AUTH1:
            raise Closed
        user = req.sql
        self.user = self.rec.user = user
        extra, answer = await self.apply_faults("logon", prec)
        ucfg = self.sim.config.users.get(user.upper())
        verifier = (
            self.sim.verifier(user.upper())
            if ucfg
            else Verifier.create(os.urandom(8).hex(), self.sim.config.pbkdf2_vgen)
        )
        challenge = Challenge.start(verifier, self.sim.config.pbkdf2_sder)
        w = Writer()
        if fast:
            w.raw(neg.protocol_reply(self.sim.banner)).raw(neg.DATA_TYPES_REPLY)
        msg.parameters(w, challenge.phase_one_params())
        self.send(msg.status(w, 0, req.seq).getvalue())
        req = await self.whole(parse_auth)
        if req.fn != FN_AUTH2:
            raise Closed
        kv = req.pairs
        await self.inject("logon", prec, extra)
        ok, combo = challenge.check(kv.get("AUTH_SESSKEY", ""), kv.get("AUTH_PASSWORD", ""))
        code = 0
        if not ok or ucfg is None:
            code = 1017
        elif self.fail_logon:
            code = self.fail_logon
        elif answer is not None and answer.kind == "refuse":
            code = answer.code
        elif ucfg.locked:
            code = 28000
        if code == 0 and answer is not None and answer.kind == "kill":
            self.end(prec, "killed")
            await self.kill(answer.code)
        if code == 0 and self.mode == "pooled":
            self.cclass = kv.get("AUTH_KPPL_CONN_CLASS") or "SYS$DEFAULT"
            self.purity = int(kv.get("AUTH_KPPL_PURITY") or 0)
            self.rec.cclass, self.rec.purity = self.cclass, self.purity
            if not await self.attach_pooled():
                code = 12520
        if code:
            self.end(prec, f"error:{code}")
            text = None
            if code == 20:
                limit = self.state.processes_limit
                text = f"ORA-00020: maximum number of processes ({limit}) exceeded"
            self.send(msg.error(Writer(), code, text).getvalue())
            return False
        self.start_session()
        assert self.info is not None
        params = [
            ("AUTH_VERSION_NO", str(self.sim.version_no), 0),
            ("AUTH_SESSION_ID", str(self.info.sid), 0),
            ("AUTH_SERIAL_NUM", str(self.info.serial), 0),
            ("AUTH_SVR_RESPONSE", Challenge.server_response(combo), 0),
            ("AUTH_INSTANCENAME", self.inst.name, 0),
            ("AUTH_SC_SERVICE_NAME", self.svc.name, 0),
            ("AUTH_SC_DBUNIQUE_NAME", self.sim.config.db_name, 0),
            ("AUTH_SC_DB_DOMAIN", "", 0),
            ("AUTH_MAX_OPEN_CURSORS", "300", 0),
            ("AUTH_MAX_IDEN_LENGTH", "128", 0),
        ]
        self.end(prec)
        self.send(msg.status(msg.parameters(Writer(), params), 0, req.seq).getvalue())
        return True

    def start_session(self) -> None:
        st = self.state
        sid = st.new_sid()
        self.info = SessionInfo(
            sid,
            random.randint(1000, 60000),
            self.user or "",
            SERVER_TYPE[self.mode],
            self.svc.name,
            self.req.cid.get("program", ""),
            self.req.cid.get("host", ""),
        )
        st.sessions[sid] = self.info
        st.logons_cumulative += 1
        st.note()
        cfg = self.sim.config
        ucfg = cfg.users.get((self.user or "").upper())
        self.calls.catalog = Catalog(
            st,
            self.sim.instances.states,
            may_read=ucfg.may_read if ucfg is not None else None,
            container=self.svc.con_name(True) if cfg.cdb else None,
            per_pdb_drcp=cfg.per_pdb_drcp,
        )
        self.rec.sid, self.rec.serial = sid, self.info.serial
        self.sim.live[sid] = self

    async def attach_pooled(self) -> bool:
        ok = await self.state.drcp.acquire(
            f"{(self.user or '').upper()}.{self.cclass}", self.purity
        )
        self.drcp_attached = ok
        if ok and self.info is not None:
            self.info.server = "POOLED"
        return ok

    def detach_pooled(self) -> None:
        if self.drcp_attached:
            self.drcp_attached = False
            self.state.drcp.release(f"{(self.user or '').upper()}.{self.cclass}")
            if self.info is not None:
                self.info.server = "NONE"

    async def kill(self, code: int) -> None:
        """CONTROL packet as the answer: the client marks the connection dead. Wait briefly
        for it to go (a sync client reads the CONTROL first), then close."""
        self._killed = True
        self.writer.write(control_error(code))
        with contextlib.suppress(Closed, TimeoutError):
            await asyncio.wait_for(self.packet(), KILL_GRACE_S)
        raise Closed

    def kill_now(self, code: int) -> None:
        """Kill from outside (control API): CONTROL now, close at the client's next move."""
        self._killed = True
        self.writer.write(control_error(code))

    def close(self) -> None:
        self.detach_pooled()
        if self.instance_gone in self.inst.on_down:
            self.inst.on_down.remove(self.instance_gone)
        if self.info is not None:
            self.state.sessions.pop(self.info.sid, None)
            self.sim.live.pop(self.info.sid, None)
        if self._pending is not None:
            self._pending.cancel()

    async def whole(self, parse: Callable[[Reader], T]) -> T:
        """Parse one request, reading more packets while it is incomplete."""
        payload = (await self.packet()).payload
        if self.mode == "shared":
            await self.state.shared.relay()
        while True:
            try:
                return parse(Reader(payload))
            except NeedMoreData:
                payload += (await self.packet()).payload

    async def call_loop(self) -> None:
        st = self.state
        proto = self.writer.transport.get_protocol()
        if isinstance(proto, FastPathProtocol):
            proto.fast = self.fast_ping
        while True:
            self.idle = True
            pkt = await self.packet()
            self.idle = False
            if self._killed:
                raise Closed
            if pkt.type == MARKER:
                if pkt.body[2:3] == bytes([MARKER_RESET]):
                    self.writer.write(marker(MARKER_RESET))
                    self.send(msg.error(Writer(), 1013, call_status=self.call_status).getvalue())
                continue
            payload = pkt.payload
            while True:
                try:
                    req = parse_call(Reader(payload))
                    break
                except NeedMoreData:  # a request larger than one packet
                    payload += (await self.packet()).payload
            if req.oneway:
                if req.fn == FN_RELEASE:
                    self.detach_pooled()
                continue
            self.sim.instances.refresh()
            if self._killed:
                raise Closed
            st.user_calls += 1
            if self.mode == "pooled" and not self.drcp_attached and not await self.attach_pooled():
                self.send(msg.error(Writer(), 12520).getvalue())
                continue
            srv: SharedServer | None = None
            t0 = time.perf_counter_ns()
            if self.mode == "shared":
                await st.shared.relay()
                srv = await st.shared.acquire()
            try:
                if self.info is not None:
                    self.info.status = "ACTIVE"
                done = await self.call(req, payload)
            finally:
                if self.info is not None:
                    self.info.status = "INACTIVE"
                if srv is not None:
                    st.shared.release(srv, time.perf_counter_ns() - t0, len(payload))
            if done:
                return

    def fast_ping(self, data: bytes) -> bool:
        """Answer a plain ping inside data_received (no task switch) when nothing else can
        apply: idle session, nothing buffered, no faults, no latency, not shared, attached."""
        if not (
            len(data) == 13
            and data[10:12] == b"\x03\x93"
            and data[:4] == b"\x00\x00\x00\x0d"
            and self.idle
            and self._pending is None
            and not self._killed
            and not self.sim.latency.enabled
            and not self.sim.faults.any()
            and self.mode != "shared"
            and (self.mode != "pooled" or self.drcp_attached)
            and not getattr(self.reader, "_buffer", b"?")
        ):
            return False
        prec = self.rec.begin("ping")
        self.state.user_calls += 1
        reply = data_packets(msg.status(Writer(), self.call_status, data[12]).getvalue(), self.sdu)
        prec.end_ns = time.perf_counter_ns()
        self.writer.write(reply)
        return True

    async def call(self, req: Request, payload: bytes) -> bool:
        """Handle one call; True after logoff."""
        phase = PHASE_OF.get(req.fn, "query")
        prec = self.rec.begin(phase)
        t0 = prec.start_ns
        try:
            extra, answer = await self.apply_faults(phase, prec)
            if answer is not None and answer.kind == "kill":
                self.end(prec, "killed")
                await self.kill(answer.code)
            if await self.inject(phase, prec, extra):
                self.end(prec, "break")
                return False
            if answer is not None:
                self.end(prec, f"error:{answer.code}")
                self.send(msg.error(Writer(), answer.code, call_status=self.call_status).getvalue())
                return False
            w = Writer()
            code = self.calls.dispatch(req, w)
            self.end(prec, f"error:{code}" if code else "ok")
            self.send(w.getvalue())
            return req.fn == FN_LOGOFF
        finally:
            if req.fn == FN_LOGOFF:
                cm_us = (time.perf_counter_ns() - t0) // 1000
                self.state.cm_elapsed_us += cm_us
                if self.info is not None:
                    self.info.cm_us += cm_us

    def userenv(self, name: str) -> str | None:
        info = self.info
        cfg = self.sim.config
        values = {
            "SID": str(info.sid) if info else None,
            "INSTANCE": str(self.inst.number),
            "INSTANCE_NAME": self.inst.name,
            "SERVER_TYPE": SERVER_TYPE[self.mode],
            "SERVICE_NAME": self.svc.name,
            "SERVER_HOST": self.state.host_name,
            "CON_NAME": self.svc.con_name(cfg.cdb),
            "DB_NAME": cfg.db_name,
            "SESSION_USER": (self.user or "").upper(),
            "CURRENT_USER": (self.user or "").upper(),
            "HOST": self.req.cid.get("host", ""),
            "MODULE": self.req.cid.get("program", ""),
        }
        return values.get(name)

    def snapshot(self) -> dict[str, Any]:
        return {
            "sid": self.info.sid if self.info else None,
            "user": self.user,
            "service": self.svc.name,
            "mode": self.mode,
        }
