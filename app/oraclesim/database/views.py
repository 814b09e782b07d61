"""Server state behind the V$ views: sessions, DRCP pool, shared servers, dispatcher and
instance statistics. Values move with the load the simulator sees.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]


@dataclass(slots=True)
class SessionInfo:
    sid: int
    serial: int
    username: str
    server: str  # DEDICATED / SHARED / POOLED (NONE while a DRCP session is released)
    service: str
    program: str
    machine: str
    status: str = "INACTIVE"


@dataclass(slots=True)
class CclassStats:
    requests: int = 0
    hits: int = 0
    misses: int = 0
    waits: int = 0
    wait_time_ms: int = 0
    timeouts: int = 0
    authentications: int = 0


class DrcpPool:
    """The connection broker's pooled servers: capped, queue when exhausted."""

    def __init__(self, max_servers: int, wait_timeout_s: float) -> None:
        self.max_servers = max_servers
        self.wait_timeout_s = wait_timeout_s
        self.busy = 0
        self.open = 0
        self.historic_max = 0
        self.free: Counter[str] = Counter()  # idle servers by the cclass they last served
        self.waiters: deque[asyncio.Future[str]] = deque()
        self.stats = CclassStats()
        self.cc: dict[str, CclassStats] = {}

    async def acquire(self, cclass: str, purity: int) -> bool:
        """Take a pooled server for cclass; False when the wait timed out."""
        cc = self.cc.setdefault(cclass, CclassStats())
        for s in (self.stats, cc):
            s.requests += 1
        if self.busy >= self.max_servers:
            for s in (self.stats, cc):
                s.waits += 1
            fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self.waiters.append(fut)
            t0 = time.monotonic()
            try:
                previous = await asyncio.wait_for(fut, self.wait_timeout_s)
            except TimeoutError:
                for s in (self.stats, cc):
                    s.timeouts += 1
                return False
            finally:
                if fut in self.waiters:
                    self.waiters.remove(fut)
                waited = int((time.monotonic() - t0) * 1000)
                self.stats.wait_time_ms += waited
                cc.wait_time_ms += waited
            hit = purity != 1 and previous == cclass
        else:
            self.busy += 1
            hit = False
            if self.free[cclass] > 0:
                self.free[cclass] -= 1
                hit = purity != 1
            elif any(v > 0 for v in self.free.values()):  # reuse an idle server of another class
                other = next(k for k, v in self.free.items() if v > 0)
                self.free[other] -= 1
            else:
                self.open += 1
        for s in (self.stats, cc):
            if hit:
                s.hits += 1
            else:
                s.misses += 1
                s.authentications += 1
        self.historic_max = max(self.historic_max, self.busy)
        return True

    def release(self, cclass: str) -> None:
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(cclass)  # the server passes straight to the waiter
                return
        self.busy -= 1
        self.free[cclass] += 1


@dataclass(slots=True)
class SharedServer:
    name: str
    busy: bool = False
    requests: int = 0
    messages: int = 0
    bytes: int = 0
    breaks: int = 0
    busy_ns: int = 0
    created_ns: int = field(default_factory=time.perf_counter_ns)


class SharedServers:
    """Shared servers take calls from the common queue; the dispatcher counts traffic."""

    def __init__(self, count: int) -> None:
        self.servers = [SharedServer(f"S{i:03d}") for i in range(count)]
        self.idle: deque[SharedServer] = deque(self.servers)
        self.waiters: deque[asyncio.Future[SharedServer]] = deque()
        self.totalq = 0
        self.queue_wait_cs = 0
        self.disp_messages = 0
        self.disp_bytes = 0
        self.disp_breaks = 0
        self.disp_accept = 0
        self.disp_owned = 0
        self.disp_busy_ns = 0
        self.created_ns = time.perf_counter_ns()

    async def acquire(self) -> SharedServer:
        self.totalq += 1
        if self.idle:
            srv = self.idle.popleft()
        else:
            fut: asyncio.Future[SharedServer] = asyncio.get_running_loop().create_future()
            self.waiters.append(fut)
            t0 = time.perf_counter_ns()
            try:
                srv = await fut
            finally:
                self.queue_wait_cs += (time.perf_counter_ns() - t0) // 10_000_000
        srv.busy = True
        return srv

    def release(self, srv: SharedServer, busy_ns: int, nbytes: int) -> None:
        srv.requests += 1
        srv.messages += 2
        srv.bytes += nbytes
        srv.busy_ns += busy_ns
        self.disp_messages += 2
        self.disp_bytes += nbytes
        self.disp_busy_ns += busy_ns // 10
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(srv)
                return
        srv.busy = False
        self.idle.append(srv)


class ServerState:
    """Instance-wide counters; one simulator is one instance."""

    def __init__(self, shared_servers: int, drcp_max: int, drcp_wait_s: float) -> None:
        self.sessions: dict[int, SessionInfo] = {}
        self.next_sid = 17
        self.logons_cumulative = 0
        self.user_commits = 0
        self.user_rollbacks = 0
        self.user_calls = 0
        self.execute_count = 0
        self.cm_elapsed_us = 0  # connection management call elapsed time
        self.logons_in_progress = 0
        self.drcp = DrcpPool(drcp_max, drcp_wait_s)
        self.shared = SharedServers(shared_servers)

    def new_sid(self) -> int:
        sid = self.next_sid
        self.next_sid += 1
        return sid

    def view(self, name: str) -> tuple[list[tuple[str, str]], list[Row]] | None:
        """(columns as (name, 'number'|'varchar'), rows) of a V$ view, None if unknown."""
        builder = _VIEWS.get(name.upper().replace("GV$", "V$"))
        return None if builder is None else builder(self)


def _v_session(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    cols = [
        ("SID", "number"),
        ("SERIAL#", "number"),
        ("USERNAME", "varchar"),
        ("SERVER", "varchar"),
        ("SERVICE_NAME", "varchar"),
        ("STATUS", "varchar"),
        ("PROGRAM", "varchar"),
        ("MACHINE", "varchar"),
        ("TYPE", "varchar"),
    ]
    rows = [
        {
            "SID": s.sid,
            "SERIAL#": s.serial,
            "USERNAME": s.username.upper(),
            "SERVER": s.server,
            "SERVICE_NAME": s.service,
            "STATUS": s.status,
            "PROGRAM": s.program,
            "MACHINE": s.machine,
            "TYPE": "USER",
        }
        for s in st.sessions.values()
    ]
    return cols, rows


# The cclass counters as V$CPOOL_STATS / V$CPOOL_CC_STATS columns, in view order.
_CC_COLUMNS = {
    "NUM_REQUESTS": "requests",
    "NUM_HITS": "hits",
    "NUM_MISSES": "misses",
    "NUM_WAITS": "waits",
    "WAIT_TIME": "wait_time_ms",
    "CLIENT_REQ_TIMEOUTS": "timeouts",
    "NUM_AUTHENTICATIONS": "authentications",
}


def _cc_values(c: CclassStats) -> Row:
    return {col: getattr(c, attr) for col, attr in _CC_COLUMNS.items()}


def _v_cpool_stats(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    p = st.drcp
    row: Row = {
        "POOL_NAME": "SYS_DEFAULT_CONNECTION_POOL",
        "NUM_OPEN_SERVERS": p.open,
        "NUM_BUSY_SERVERS": p.busy,
        "NUM_AUTH_SERVERS": p.busy,
        **_cc_values(p.stats),
        "NUM_PURGED": 0,
        "HISTORIC_MAX": p.historic_max,
        "MAXSIZE": p.max_servers,
    }
    return [("POOL_NAME", "varchar")] + [(n, "number") for n in list(row)[1:]], [row]


def _v_cpool_cc_stats(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    rows = [{"CCLASS_NAME": cclass, **_cc_values(c)} for cclass, c in st.drcp.cc.items()]
    return [("CCLASS_NAME", "varchar")] + [(n, "number") for n in _CC_COLUMNS], rows


def _v_dispatcher(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    sh = st.shared
    elapsed_cs = (time.perf_counter_ns() - sh.created_ns) // 10_000_000
    busy_cs = sh.disp_busy_ns // 10_000_000
    row: Row = {
        "NAME": "D000",
        "NETWORK": "(ADDRESS=(PROTOCOL=tcp))",
        "STATUS": "WAIT",
        "ACCEPT": "YES",
        "MESSAGES": sh.disp_messages,
        "BYTES": sh.disp_bytes,
        "BREAKS": sh.disp_breaks,
        "OWNED": sh.disp_owned,
        "CREATED": sh.disp_accept,
        "IDLE": max(elapsed_cs - busy_cs, 0),
        "BUSY": busy_cs,
    }
    cols = [(k, "varchar" if isinstance(v, str) else "number") for k, v in row.items()]
    return cols, [row]


def _v_shared_server(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    now = time.perf_counter_ns()
    rows = []
    for s in st.shared.servers:
        busy_cs = s.busy_ns // 10_000_000
        rows.append(
            {
                "NAME": s.name,
                "STATUS": "EXEC" if s.busy else "WAIT(COMMON)",
                "MESSAGES": s.messages,
                "BYTES": s.bytes,
                "BREAKS": s.breaks,
                "REQUESTS": s.requests,
                "BUSY": busy_cs,
                "IDLE": max((now - s.created_ns) // 10_000_000 - busy_cs, 0),
            }
        )
    cols = [("NAME", "varchar"), ("STATUS", "varchar")] + [
        (n, "number") for n in ("MESSAGES", "BYTES", "BREAKS", "REQUESTS", "BUSY", "IDLE")
    ]
    return cols, rows


def _v_queue(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    sh = st.shared
    rows = [
        {
            "TYPE": "COMMON",
            "QUEUED": len(sh.waiters),
            "WAIT": sh.queue_wait_cs,
            "TOTALQ": sh.totalq,
        },
        {"TYPE": "DISPATCHER", "QUEUED": 0, "WAIT": 0, "TOTALQ": sh.disp_messages // 2},
    ]
    cols = [("TYPE", "varchar"), ("QUEUED", "number"), ("WAIT", "number"), ("TOTALQ", "number")]
    return cols, rows


def _v_sys_time_model(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    rows = [
        {
            "STAT_ID": 1,
            "STAT_NAME": "connection management call elapsed time",
            "VALUE": st.cm_elapsed_us,
        }
    ]
    return [("STAT_ID", "number"), ("STAT_NAME", "varchar"), ("VALUE", "number")], rows


def _v_sysstat(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    stats = [
        ("logons cumulative", st.logons_cumulative),
        ("logons current", len(st.sessions)),
        ("user commits", st.user_commits),
        ("user rollbacks", st.user_rollbacks),
        ("user calls", st.user_calls),
        ("execute count", st.execute_count),
    ]
    rows = [{"STATISTIC#": i, "NAME": n, "CLASS": 1, "VALUE": v} for i, (n, v) in enumerate(stats)]
    cols = [("STATISTIC#", "number"), ("NAME", "varchar"), ("CLASS", "number"), ("VALUE", "number")]
    return cols, rows


_VIEWS = {
    "V$SESSION": _v_session,
    "V$CPOOL_STATS": _v_cpool_stats,
    "V$CPOOL_CC_STATS": _v_cpool_cc_stats,
    "V$DISPATCHER": _v_dispatcher,
    "V$SHARED_SERVER": _v_shared_server,
    "V$QUEUE": _v_queue,
    "V$SYS_TIME_MODEL": _v_sys_time_model,
    "V$SYSSTAT": _v_sysstat,
}
