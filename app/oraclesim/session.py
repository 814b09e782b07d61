"""One client connection after ACCEPT: negotiation, logon and the call loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from . import messages as msg
from . import negotiation as neg
from .auth import Challenge, Verifier
from .codec import NeedMoreData, Reader, Writer
from .config import ServiceConfig
from .faults import Fault
from .groundtruth import ConnectionRecord, PhaseRecord
from .packets import (
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
from .queries import DmlResult, QueryResult, SqlError
from .queries import run as run_sql
from .views import SessionInfo, SharedServer

if TYPE_CHECKING:
    from .server import Simulator

FN_LOGOFF, FN_COMMIT, FN_ROLLBACK, FN_FETCH, FN_REEXEC, FN_REEXEC_FETCH = 9, 14, 15, 5, 4, 78
FN_EXECUTE, FN_PING, FN_AUTH1, FN_AUTH2, FN_RELEASE = 94, 147, 118, 115, 163
PHASE_OF = {
    FN_PING: "ping",
    FN_COMMIT: "commit",
    FN_ROLLBACK: "commit",
    FN_LOGOFF: "logoff",
    FN_EXECUTE: "query",
    FN_REEXEC: "query",
    FN_REEXEC_FETCH: "query",
    FN_FETCH: "query",
}
T = TypeVar("T")
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


@dataclass(slots=True)
class Cursor:
    sql: str
    result: QueryResult | None = None
    pos: int = 0


@dataclass(slots=True)
class Request:
    fn: int
    seq: int
    r: Reader
    oneway: bool = False
    closes: list[int] = field(default_factory=list)
    args: tuple[int, ...] = ()
    sql: str = ""


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
    ) -> None:
        self.sim, self.reader, self.writer = sim, reader, writer
        self.rec, self.req, self.svc, self.mode, self.sdu = rec, req, svc, mode, sdu
        self.user: str | None = None
        self.info: SessionInfo | None = None
        self.cursors: dict[int, Cursor] = {}
        self.next_cursor = 1
        self.txn = False
        self.cclass = ""
        self.purity = 0
        self.drcp_attached = False
        self._pending: asyncio.Task[Packet] | None = None
        self._killed = False
        self.pairs: dict[str, str] = {}
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
            self.sim.state.shared.disp_breaks += 1

    async def hang(self) -> None:
        """Never answer; read (and ignore) until the client goes away."""
        while True:
            await self.packet()

    @property
    def call_status(self) -> int:
        return msg.TXN_OPEN if self.txn else 0

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
        ms = self.sim.latency.sample_ms(profile, phase, self.sim.state.logons_in_progress)
        seconds = ms / 1000 + extra
        prec.injected_ns = int(seconds * 1e9)
        return await self.sleep(seconds)

    def end(self, prec: PhaseRecord, outcome: str = "ok") -> None:
        prec.end_ns = time.perf_counter_ns()
        if prec.outcome == "ok":
            prec.outcome = outcome

    # ----------------------------------------------------------------- main
    async def run(self) -> None:
        st = self.sim.state
        st.logons_in_progress += 1
        logon_t0 = time.perf_counter_ns()
        try:
            if not await self.logon():
                return
        finally:
            st.logons_in_progress -= 1
        st.cm_elapsed_us += (time.perf_counter_ns() - logon_t0) // 1000
        await self.call_loop()

    async def logon(self) -> bool:
        """Negotiation and both auth phases; False when the logon failed (answered)."""
        fast_ok = self.sim.config.fast_auth

        def first(r: Reader) -> tuple[bool, Request | None]:
            if fast_ok and r.data[:1] == b"\x22":
                neg.parse_fast_auth_prefix(r)
                return True, self.parse_auth(r)
            neg.skip_protocol_request(r)
            return False, None

        fast, req = await self.whole(first)
        if fast:
            prec = self.rec.begin("logon")
        else:
            prec = self.rec.begin("negotiate")
            extra, _ = await self.apply_faults("negotiate", prec)
            await self.inject("negotiate", prec, extra)
            self.send(neg.protocol_reply(self.sim.banner))
            await self.whole(neg.skip_data_types_request)
            self.end(prec)
            self.send(neg.DATA_TYPES_REPLY)
            prec = self.rec.begin("logon")
            req = await self.whole(self.parse_auth)
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
        req = await self.whole(self.parse_auth)
        if req.fn != FN_AUTH2:
            raise Closed
        kv = self.pairs
        await self.inject("logon", prec, extra)
        ok, combo = challenge.check(kv.get("AUTH_SESSKEY", ""), kv.get("AUTH_PASSWORD", ""))
        code = 0
        if not ok or ucfg is None:
            code = 1017
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
            self.send(msg.error(Writer(), code).getvalue())
            return False
        self.start_session()
        assert self.info is not None
        params = [
            ("AUTH_VERSION_NO", str(self.sim.version_no), 0),
            ("AUTH_SESSION_ID", str(self.info.sid), 0),
            ("AUTH_SERIAL_NUM", str(self.info.serial), 0),
            ("AUTH_SVR_RESPONSE", Challenge.server_response(combo), 0),
            ("AUTH_INSTANCENAME", self.sim.config.instance_name, 0),
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
        st = self.sim.state
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
        self.rec.sid, self.rec.serial = sid, self.info.serial
        self.sim.live[sid] = self

    async def attach_pooled(self) -> bool:
        ok = await self.sim.state.drcp.acquire(
            f"{(self.user or '').upper()}.{self.cclass}", self.purity
        )
        self.drcp_attached = ok
        if ok and self.info is not None:
            self.info.server = "POOLED"
        return ok

    def detach_pooled(self) -> None:
        if self.drcp_attached:
            self.drcp_attached = False
            self.sim.state.drcp.release(f"{(self.user or '').upper()}.{self.cclass}")
            if self.info is not None:
                self.info.server = "NONE"

    async def kill(self, code: int) -> None:
        """CONTROL packet: the client marks the connection dead; wait for it to go."""
        self._killed = True
        self.writer.write(control_error(code))
        with contextlib.suppress(Closed):
            await asyncio.wait_for(self.packet(), 30)
        raise Closed

    def kill_now(self, code: int) -> None:
        """Kill from outside (control API): CONTROL now, close at the client's next move."""
        self._killed = True
        self.writer.write(control_error(code))

    def close(self) -> None:
        self.detach_pooled()
        if self.info is not None:
            self.sim.state.sessions.pop(self.info.sid, None)
            self.sim.live.pop(self.info.sid, None)
        if self._pending is not None:
            self._pending.cancel()

    # ----------------------------------------------------------------- requests
    def parse_function(self, r: Reader) -> Request:
        """Skip piggybacks; return the function (03 fn seq) or one-way call (1A fn seq)."""
        closes: list[int] = []
        while True:
            mtype = r.u8()
            fn = r.u8()
            seq = r.u8()
            if mtype == 0x11:
                self.skip_piggyback(fn, r, closes)
                continue
            return Request(fn, seq, r, mtype == 0x1A, closes)

    @staticmethod
    def skip_piggyback(fn: int, r: Reader, closes: list[int]) -> None:
        if fn == 105:  # close cursors
            r.u8()
            closes.extend(r.uint() for _ in range(r.uint()))
        elif fn == 176:  # session state
            r.uint()
        elif fn == 152:  # set schema
            r.u8()
            r.bytes_two_lengths()
        elif fn == 135:  # end-to-end attributes
            r.u8(), r.u8(), r.uint()  # cidnam, cidser pointers, flags

            def field() -> bool:
                pointer, length = r.u8(), r.uint()
                return pointer == 1 and length > 0

            present = [field(), field(), field()]  # client identifier, module, action
            r.u8(), r.uint(), r.u8(), r.uint()  # cideci, cidcct, cidecs
            present.append(field())  # client info
            r.u8(), r.uint(), r.u8(), r.uint()  # cidkstk, cidktgt
            present.append(field())  # dbop
            for p in present:
                if p:
                    r.bytes_()
        else:
            raise NeedMoreData  # unknown piggyback: cannot find the function behind it

    async def whole(self, parse: Callable[[Reader], T]) -> T:
        """Parse one request, reading more packets while it is incomplete."""
        payload = (await self.packet()).payload
        while True:
            try:
                return parse(Reader(payload))
            except NeedMoreData:
                payload += (await self.packet()).payload

    def parse_auth(self, r: Reader) -> Request:
        """An auth function: user name in req.sql, key/value pairs in self.pairs."""
        req = self.parse_function(r)
        if req.fn not in (FN_AUTH1, FN_AUTH2):
            return req
        has_user = r.u8()
        user_len = r.uint()
        r.uint()  # auth mode
        r.u8()
        count = r.uint()
        r.u8()
        r.u8()
        req.sql = (r.bytes_() or b"").decode() if has_user and user_len else ""
        pairs: dict[str, str] = {}
        for _ in range(count):
            key = r.str_two_lengths()
            value = r.str_two_lengths()
            r.uint()
            if key:
                pairs[key.rstrip("\x00")] = value or ""
        self.pairs = pairs
        return req

    async def call_loop(self) -> None:
        st = self.sim.state
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
                    req = self.parse_function(Reader(payload))
                    self.parse_args(req)
                    break
                except NeedMoreData:  # a request larger than one packet
                    payload += (await self.packet()).payload
            for cid in req.closes:
                self.cursors.pop(cid, None)
            if req.oneway:
                if req.fn == FN_RELEASE:
                    self.detach_pooled()
                continue
            st.user_calls += 1
            if self.mode == "pooled" and not self.drcp_attached and not await self.attach_pooled():
                self.send(msg.error(Writer(), 12520).getvalue())
                continue
            srv: SharedServer | None = None
            t0 = time.perf_counter_ns()
            if self.mode == "shared":
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
        self.sim.state.user_calls += 1
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
            code = self.dispatch(req, w)
            self.end(prec, f"error:{code}" if code else "ok")
            self.send(w.getvalue())
            return req.fn == FN_LOGOFF
        finally:
            if req.fn == FN_LOGOFF:
                self.sim.state.cm_elapsed_us += (time.perf_counter_ns() - t0) // 1000

    def dispatch(self, req: Request, w: Writer) -> int:
        if req.fn in (FN_PING, FN_LOGOFF):
            msg.status(w, self.call_status, req.seq)
        elif req.fn in (FN_COMMIT, FN_ROLLBACK):
            self.end_txn(req.fn == FN_COMMIT)
            msg.status(w, 0, req.seq)
        elif req.fn == FN_EXECUTE:
            return self.execute(req, w)
        elif req.fn in (FN_REEXEC, FN_REEXEC_FETCH):
            cursor_id, num_iters, commit = req.args
            cur = self.cursors.get(cursor_id)
            if cur is None:
                return self.fail(w, SqlError(1001, "invalid cursor"), cursor_id)
            fetch = num_iters if req.fn == FN_REEXEC_FETCH else 0
            return self.run_cursor(cursor_id, cur, fetch, bool(commit), w, describe=False)
        elif req.fn == FN_FETCH:
            cursor_id, count = req.args
            cur = self.cursors.get(cursor_id)
            if cur is None or cur.result is None:
                return self.fail(w, SqlError(1001, "invalid cursor"), cursor_id)
            self.rows(cursor_id, cur, count, w)
        else:
            return self.fail(w, SqlError(3115, "unsupported network datatype or representation"))
        return 0

    def end_txn(self, commit: bool) -> None:
        if commit:
            self.sim.state.user_commits += 1
        else:
            self.sim.state.user_rollbacks += 1
        self.txn = False

    def fail(self, w: Writer, e: SqlError, cursor_id: int = 0) -> int:
        msg.error(w, e.code, e.text, cursor_id=cursor_id, call_status=self.call_status)
        return e.code

    @staticmethod
    def parse_args(req: Request) -> None:
        """Read a call's arguments (raises NeedMoreData while the request is incomplete)."""
        r = req.r
        if req.fn in (FN_REEXEC, FN_REEXEC_FETCH):
            cursor_id, num_iters, _, options_2 = r.uint(), r.uint(), r.uint(), r.uint()
            req.args = (cursor_id, num_iters, options_2 & 1)
        elif req.fn == FN_FETCH:
            req.args = (r.uint(), r.uint())
        elif req.fn == FN_EXECUTE:
            options, cursor_id = r.uint(), r.uint()
            r.u8()
            sql_len = r.uint()
            r.u8(), r.uint()  # al8i4 pointer and length
            r.u8(), r.u8(), r.uint()  # al8o4, al8o4l, prefetch buffer size
            num_iters = r.uint()
            r.uint()  # max long size
            r.u8(), r.uint()  # binds
            for _ in range(5):  # al8app, al8txn, al8txl, al8kv, al8kvl
                r.u8()
            r.u8(), r.uint(), r.uint()  # defines, registration id (lsb)
            r.u8(), r.u8(), r.u8(), r.uint(), r.u8(), r.uint()  # objlist .. al8dnaml
            r.uint()  # registration id (msb)
            r.u8(), r.uint(), r.u8()  # DML row counts
            r.u8(), r.uint(), r.u8(), r.uint(), r.u8()  # SQL signature, SQL id (12.2)
            r.u8(), r.uint()  # chunk ids (12.2 ext1)
            if options & 0x01 and sql_len:
                req.sql = (r.bytes_() or b"").decode("utf-8", "replace")
            req.args = (options, cursor_id, num_iters)

    def execute(self, req: Request, w: Writer) -> int:
        options, cursor_id, num_iters = req.args
        if req.sql:
            if cursor_id == 0:
                cursor_id = self.next_cursor
                self.next_cursor += 1
            self.cursors[cursor_id] = Cursor(req.sql)
        cur = self.cursors.get(cursor_id)
        if cur is None:
            return self.fail(w, SqlError(1001, "invalid cursor"))
        fetch = num_iters if options & 0x40 else 0
        return self.run_cursor(cursor_id, cur, fetch, bool(options & 0x100), w, describe=True)

    def userenv(self, name: str) -> str | None:
        info = self.info
        cfg = self.sim.config
        values = {
            "SID": str(info.sid) if info else None,
            "INSTANCE": "1",
            "INSTANCE_NAME": cfg.instance_name,
            "SERVER_TYPE": SERVER_TYPE[self.mode],
            "SERVICE_NAME": self.svc.name,
            "SERVER_HOST": cfg.server_host,
            "CON_NAME": self.svc.name,
            "DB_NAME": cfg.db_name,
            "SESSION_USER": (self.user or "").upper(),
            "CURRENT_USER": (self.user or "").upper(),
            "HOST": self.req.cid.get("host", ""),
            "MODULE": self.req.cid.get("program", ""),
        }
        return values.get(name)

    def run_cursor(
        self, cursor_id: int, cur: Cursor, fetch: int, commit: bool, w: Writer, describe: bool
    ) -> int:
        st = self.sim.state
        st.execute_count += 1
        try:
            res = run_sql(cur.sql, st, self.userenv, self.sim.config.scratch_tables)
        except SqlError as e:
            self.cursors.pop(cursor_id, None)
            return self.fail(w, e, 0)
        if isinstance(res, DmlResult):
            if res.kind in ("commit", "rollback"):
                self.end_txn(res.kind == "commit")
            elif res.rowcount:
                self.txn = True
            if commit and self.txn:
                self.end_txn(True)
            msg.error(
                w, 0, cursor_id=cursor_id, rowcount=res.rowcount, call_status=self.call_status
            )
            return 0
        cur.result, cur.pos = res, 0
        if describe:
            msg.describe(w, res.columns)
        if fetch:
            self.rows(cursor_id, cur, fetch, w)
        else:
            msg.error(w, 0, cursor_id=cursor_id, call_status=self.call_status)
        return 0

    def rows(self, cursor_id: int, cur: Cursor, count: int, w: Writer) -> None:
        res = cur.result
        assert res is not None
        batch = res.rows[cur.pos : cur.pos + max(count, 1)]
        if batch:
            msg.row_header(w)
        for row in batch:
            msg.row_data(w, res.columns, row)
        cur.pos += len(batch)
        if cur.pos >= len(res.rows):
            msg.error(
                w,
                msg.ORA_NO_DATA,
                cursor_id=cursor_id,
                rowcount=cur.pos,
                call_status=self.call_status,
            )
        else:
            msg.error(w, 0, cursor_id=cursor_id, rowcount=cur.pos, call_status=self.call_status)

    def snapshot(self) -> dict[str, Any]:
        return {
            "sid": self.info.sid if self.info else None,
            "user": self.user,
            "service": self.svc.name,
            "mode": self.mode,
        }
