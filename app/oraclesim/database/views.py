"""Server state behind the V$ views: sessions, DRCP pool, shared servers, dispatcher and
instance statistics, one :class:`ServerState` per instance. Values move with the load the
simulator sees and with the state faults (:mod:`app.oraclesim.database.pressure`).

Process accounting (V$RESOURCE_LIMIT 'processes'): :data:`BACKGROUND_PROCESSES`, one
dispatcher, one connection broker, the shared servers, the DRCP pool's open and
authentication servers, and one process per dedicated session. Sessions: one per
background process plus every user session.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from app.oraclesim.database.pressure import Pressure

Row = dict[str, Any]
BACKGROUND_PROCESSES = 24
DISPATCHER_COST_NS = 50_000  # modelled dispatcher work per relayed call
MIN_AUTH_SERVERS = 1


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
    cm_us: int = 0  # this session's connection management call elapsed time (us)


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
    """The connection broker's pooled servers: capped, queue when exhausted.

    ``open`` pooled servers exist, ``busy`` of them serve a session; an idle one is
    reused (a hit when it last served the same connection class and purity allows), a
    miss opens a new one while the pool is below ``max_servers`` and the instance can
    start a process. Otherwise the request waits (NUM_WAITS) for a release, at most
    ``wait_timeout_s``.
    """

    def __init__(self, max_servers: int, wait_timeout_s: float, pressure: Pressure) -> None:
        self.max_servers = max_servers
        self.wait_timeout_s = wait_timeout_s
        self.pressure = pressure
        self.can_grow: Any = lambda: True  # ServerState: a process is free
        self.busy = 0
        self.open = 0
        self.auth_busy = 0  # logons authenticating through the authentication pool
        self.historic_max = 0
        self.free: Counter[str] = Counter()  # idle servers by the cclass they last served
        self.waiters: deque[asyncio.Future[str]] = deque()
        self.stats = CclassStats()
        self.cc: dict[str, CclassStats] = {}

    @property
    def auth_servers(self) -> int:
        return max(MIN_AUTH_SERVERS, self.auth_busy)

    def _count(self, cc: CclassStats, attr: str, n: int = 1) -> None:
        for s in (self.stats, cc):
            setattr(s, attr, getattr(s, attr) + n)

    async def acquire(self, cclass: str, purity: int) -> bool:
        """Take a pooled server for cclass; False when the wait timed out."""
        cc = self.cc.setdefault(cclass, CclassStats())
        self._count(cc, "requests")
        waited_forced = self.pressure.pool_wait_s()
        if waited_forced:
            self._count(cc, "waits")
            await asyncio.sleep(waited_forced)
            self._count(cc, "wait_time_ms", int(waited_forced * 1000))
        idle = self.open - self.busy
        if idle <= 0 and not (self.open < self.max_servers and self.can_grow()):
            if not waited_forced:
                self._count(cc, "waits")
            fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self.waiters.append(fut)
            t0 = time.monotonic()
            try:
                previous = await asyncio.wait_for(fut, self.wait_timeout_s)
            except TimeoutError:
                self._count(cc, "timeouts")
                return False
            finally:
                if fut in self.waiters:
                    self.waiters.remove(fut)
                self._count(cc, "wait_time_ms", int((time.monotonic() - t0) * 1000))
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
        self._count(cc, "hits" if hit else "misses")
        if not hit:
            self._count(cc, "authentications")
        self.historic_max = max(self.historic_max, self.open)
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
    """Shared servers take calls from the common queue; the dispatcher relays them.

    Every call through the dispatcher costs it :data:`DISPATCHER_COST_NS` of busy time; a
    ``dispatchers_saturated`` fault makes it busy the whole time and delays every call in
    the dispatcher queue. Servers start at ``count`` and grow up to ``max_servers`` while
    calls find none idle (SERVERS_STARTED, SERVERS_HIGHWATER)."""

    def __init__(self, count: int, pressure: Pressure, max_servers: int | None = None) -> None:
        self.pressure = pressure
        self.can_grow: Any = lambda: True  # ServerState: a process is free
        self.max_servers = max(count, max_servers or count)
        self.started = 0
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
        self.disp_totalq = 0
        self.disp_wait_cs = 0
        self.max_circuits = 0
        self.created_ns = time.perf_counter_ns()

    def open_circuit(self) -> None:
        self.disp_accept += 1
        self.disp_owned += 1
        self.max_circuits = max(self.max_circuits, self.disp_owned)

    def busy_ns(self, now_ns: int | None = None) -> int:
        """The dispatcher's busy time: its relaying work plus every saturated stretch."""
        return self.disp_busy_ns + self.pressure.saturated_ns(self.created_ns, now_ns)

    async def relay(self) -> None:
        """One call through the dispatcher (waits in its queue while it is saturated)."""
        self.disp_busy_ns += DISPATCHER_COST_NS
        self.disp_totalq += 1
        delay = self.pressure.dispatcher_delay_s()
        if delay:
            t0 = time.perf_counter_ns()
            await asyncio.sleep(delay)
            self.disp_wait_cs += (time.perf_counter_ns() - t0) // 10_000_000

    async def acquire(self) -> SharedServer:
        self.totalq += 1
        if not self.idle and len(self.servers) < self.max_servers and self.can_grow():
            srv = SharedServer(f"S{len(self.servers):03d}")
            self.servers.append(srv)
            self.started += 1
            self.idle.append(srv)
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
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(srv)
                return
        srv.busy = False
        self.idle.append(srv)


class ServerState:
    """One instance's counters and pools (a simulator serves one or more instances)."""

    def __init__(
        self,
        shared_servers: int,
        drcp_max: int,
        drcp_wait_s: float,
        *,
        processes: int = 300,
        pressure: Pressure | None = None,
        max_shared_servers: int | None = None,
    ) -> None:
        self.pressure = pressure or Pressure(None, "")
        self.started_wall = time.time()
        # identity (set by app.oraclesim.instances for each instance it runs)
        self.instance_name, self.instance_number, self.host_name = "FREE", 1, "oraclesim"
        self.version: tuple[int, int] = (19, 24)
        self.sid_source: Any = None  # a shared counter: SIDs unique across instances
        self.sessions: dict[int, SessionInfo] = {}
        self.next_sid = 17
        self.logons_cumulative = 0
        self.user_commits = 0
        self.user_rollbacks = 0
        self.user_calls = 0
        self.execute_count = 0
        self.cm_elapsed_us = 0  # connection management call elapsed time
        self.logons_in_progress = 0
        self.processes_limit = processes
        self.sessions_limit = int(1.5 * processes + 22)
        self.max_processes = 0
        self.max_sessions = 0
        self.max_shared_sessions = 0
        self.drcp = DrcpPool(drcp_max, drcp_wait_s, self.pressure)
        self.shared = SharedServers(shared_servers, self.pressure, max_shared_servers)
        self.drcp.can_grow = self.shared.can_grow = self.process_free
        self.note()

    def new_sid(self) -> int:
        if self.sid_source is not None:
            return int(next(self.sid_source))
        sid = self.next_sid
        self.next_sid += 1
        return sid

    @property
    def dedicated_sessions(self) -> int:
        return sum(1 for s in self.sessions.values() if s.server == "DEDICATED")

    def real_processes(self) -> int:
        """Processes this instance really runs (see the module docstring)."""
        return (
            BACKGROUND_PROCESSES
            + 2  # the dispatcher D000 and the connection broker N000
            + len(self.shared.servers)
            + self.drcp.open
            + self.drcp.auth_servers
            + self.dedicated_sessions
        )

    def processes(self) -> int:
        """V$RESOURCE_LIMIT 'processes': with a processes_limit fault, other processes
        fill the instance up to its limit."""
        real = self.real_processes()
        return max(real, self.processes_limit) if self.pressure.processes_fault() else real

    def sessions_current(self) -> int:
        return BACKGROUND_PROCESSES + len(self.sessions)

    def process_free(self) -> bool:
        """Whether one more server process may start now."""
        return self.processes() < self.processes_limit

    def note(self) -> None:
        """Update the high-water marks (after anything that starts a process or session)."""
        self.max_processes = max(self.max_processes, self.processes())
        self.max_sessions = max(self.max_sessions, self.sessions_current())
        shared = sum(1 for s in self.sessions.values() if s.server == "SHARED")
        self.max_shared_sessions = max(self.max_shared_sessions, shared)

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
    full = st.pressure.pool_full()  # other clients hold every pooled server
    row: Row = {
        "POOL_NAME": "SYS_DEFAULT_CONNECTION_POOL",
        "NUM_OPEN_SERVERS": (p.max_servers if full else p.open) + p.auth_servers,
        "NUM_BUSY_SERVERS": p.max_servers if full else p.busy,
        "NUM_AUTH_SERVERS": p.auth_servers,
        **_cc_values(p.stats),
        "NUM_PURGED": 0,
        "HISTORIC_MAX": p.max_servers if full else p.historic_max,
    }
    return [("POOL_NAME", "varchar")] + [(n, "number") for n in list(row)[1:]], [row]


def _v_cpool_cc_stats(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    rows = [{"CCLASS_NAME": cclass, **_cc_values(c)} for cclass, c in st.drcp.cc.items()]
    return [("CCLASS_NAME", "varchar")] + [(n, "number") for n in _CC_COLUMNS], rows


def _v_dispatcher(st: ServerState) -> tuple[list[tuple[str, str]], list[Row]]:
    sh = st.shared
    now = time.perf_counter_ns()
    elapsed_cs = (now - sh.created_ns) // 10_000_000
    busy_cs = min(sh.busy_ns(now) // 10_000_000, elapsed_cs)
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
        {"TYPE": "DISPATCHER", "QUEUED": 0, "WAIT": sh.disp_wait_cs, "TOTALQ": sh.disp_totalq},
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
        ("logons current", st.sessions_current()),
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
