"""serverstats: what the Oracle server saw, read from its V$ views on one kept session.

Every run (default every 60 s) reads, on one kept connection of a monitoring account
(the target's account, or the ``user`` / ``password_ref`` given in the series' params):
the instances (GV$INSTANCE), V$SYSSTAT logons, V$SYS_TIME_MODEL connection management
time, V$RESOURCE_LIMIT processes and sessions, the DRCP pool (V$CPOOL_STATS,
DBA_CPOOL_INFO, V$CPOOL_CC_STATS, V$AUTHPOOL_STATS), the dispatchers (V$DISPATCHER), the
shared-server queues (V$QUEUE), V$SHARED_SERVER_MONITOR and V$PARAMETER. GV$ forms give
one row per instance (RAC); where the account may only read the V$ form, the instance it
is connected to is reported (``source`` says which).

Timings: ``logon_ns`` (with the breakdown) when the run (re)logs on; ``query_ns`` the
whole read of all views (every round trip, one after the other).

Counters are turned into rates over the interval since the previous run's read of the
same instance (``interval_s``, measured with ``perf_counter_ns`` between the middles of
the two reads). A counter that went down, or a changed STARTUP_TIME, means the instance
restarted: that interval gets no rates (``reset: true``), gauges are still reported. The
first run of a series has gauges only. Every derived number (see docs/probes.md):

============================  ===========================================================
``logons_per_s``              delta 'logons cumulative' / interval
``logons_current``            'logons current' (includes background sessions)
``cm_ms_per_logon``           delta 'connection management call elapsed time' (logon and
                              logoff calls) / delta logons, in ms; None without logons
``cm_s_per_s``                delta connection management time (s) / interval: sessions
                              busy logging on or off, on average
``processes`` ``_max``        V$RESOURCE_LIMIT 'processes' current / max utilisation /
``_limit`` ``_pct``           limit, current as % of the limit; same for ``sessions``
``pool_open`` ``_busy``       V$CPOOL_STATS NUM_OPEN_SERVERS, NUM_BUSY_SERVERS,
``_auth`` ``_historic_max``   NUM_AUTH_SERVERS, HISTORIC_MAX; ``pool_max`` DBA_CPOOL_INFO
                              MAXSIZE; ``pool_busy_pct`` busy / max
``pool_<c>_per_s``            delta NUM_REQUESTS, NUM_HITS, NUM_MISSES, NUM_WAITS,
                              CLIENT_REQ_TIMEOUTS, NUM_PURGED / interval
``pool_hit_pct``              delta hits / delta requests x 100; ``pool_wait_pct`` waits
``authpool_servers`` ...      V$AUTHPOOL_STATS NUM_SRVS, NUM_BUSY, NUM_WAITERS
``dispatcher_busy_pct``       sum of delta BUSY / sum of delta (BUSY + IDLE) over the
                              instance's dispatchers x 100; ``_max_pct`` the busiest one
``circuits``                  sum of V$DISPATCHER OWNED (virtual circuits now)
``common_wait_ms``            delta WAIT (1/100 s) x 10 / delta TOTALQ of the COMMON queue:
                              average wait per call for a shared server, ms
``dispatcher_wait_ms``        the same for the dispatcher queues
``common_queued``             calls waiting in the common queue now
``shared_servers_highwater``  V$SHARED_SERVER_MONITOR SERVERS_HIGHWATER against
``shared_servers_max``        V$PARAMETER max_shared_servers
``circuits_highwater``        MAXIMUM_CONNECTIONS
============================  ===========================================================

A view that does not exist, is not granted (ORA-00942) or returns no rows (a PDB of a
CDB without ENABLE_PER_PDB_DRCP sees no pool) is recorded once per run in
``unavailable`` (view -> code: ``ORA-00942``, ``NO-ROWS``) and the rest is still read.
Only when nothing at all could be read is the run an error (the first ORA code).

The result is in ``extra["serverstats"]``: ``{"source", "instances": [{"inst_id",
"instance", "startup", "interval_s", "reset", "metrics", "classes"}], "unavailable"}``;
the store moves it into its own table (one row per run and instance).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import oracledb

from app.drivers.oracle import OracleSession
from app.probes.base import ProbeConfigError, ProbeContext, checked_params
from app.probes.errors import ClassifiedError, ClassifiedException
from app.probes.logon import KeptLogon
from app.probes.spec import OracleEndpoint, ProbeSpec
from app.samples import ErrorClass

Rows = list[dict[str, Any]]

# view -> (columns, WHERE clause); the GV$ form adds INST_ID.
VIEWS: dict[str, tuple[str, str]] = {
    "V$INSTANCE": ("instance_number, instance_name, startup_time", ""),
    "V$SYSSTAT": ("name, value", "name in ('logons cumulative', 'logons current')"),
    "V$SYS_TIME_MODEL": (
        "stat_name, value",
        "stat_name = 'connection management call elapsed time'",
    ),
    "V$RESOURCE_LIMIT": (
        "resource_name, current_utilization, max_utilization, limit_value",
        "resource_name in ('processes', 'sessions')",
    ),
    "V$CPOOL_STATS": (
        "num_open_servers, num_busy_servers, num_auth_servers, num_requests, num_hits,"
        " num_misses, num_waits, client_req_timeouts, num_purged, historic_max",
        "",
    ),
    "DBA_CPOOL_INFO": ("connection_pool, maxsize", ""),
    "V$CPOOL_CC_STATS": ("cclass_name, num_requests, num_hits, num_misses, num_waits", ""),
    "V$AUTHPOOL_STATS": ("num_srvs, num_busy, num_waiters", ""),
    "V$DISPATCHER": ("name, busy, idle, owned", ""),
    "V$QUEUE": ("type, queued, wait, totalq", ""),
    "V$SHARED_SERVER_MONITOR": ("maximum_connections, servers_highwater", ""),
    "V$PARAMETER": ("name, value", "name in ('max_shared_servers')"),
}
NO_GV = frozenset({"DBA_CPOOL_INFO"})  # one row for the database: no GV$ form
# Views that may well be empty (no class used yet, no shared server configured); the
# others' rows are never empty where the view is visible (a PDB sees no DRCP pool).
EMPTY_OK = frozenset({"V$CPOOL_CC_STATS", "V$DISPATCHER", "V$QUEUE", "V$PARAMETER"})
POOL_COUNTERS = {
    "requests": "NUM_REQUESTS",
    "hits": "NUM_HITS",
    "misses": "NUM_MISSES",
    "waits": "NUM_WAITS",
    "timeouts": "CLIENT_REQ_TIMEOUTS",
    "purged": "NUM_PURGED",
}


@dataclass(slots=True)
class Snapshot:
    """One instance's raw values at one read."""

    at_ns: int
    startup: str | None
    counters: dict[str, float] = field(default_factory=dict)
    classes: dict[str, dict[str, float]] = field(default_factory=dict)
    dispatchers: dict[str, tuple[float, float]] = field(default_factory=dict)  # busy, idle


def _num(value: Any) -> float | None:
    try:
        return float(str(value).strip()) if value is not None else None
    except ValueError:
        return None  # 'UNLIMITED'


def _pct(part: float | None, whole: float | None) -> float | None:
    return None if part is None or not whole else round(100.0 * part / whole, 3)


class ServerStats(KeptLogon):
    name = "serverstats"

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        if not isinstance(spec.endpoint, OracleEndpoint):
            raise ProbeConfigError("serverstats reads Oracle's V$ views: an Oracle mode only")
        p = checked_params(self.name, spec.params)
        self.gv: str = p["gv"]
        self.with_classes: bool = p["classes"]
        self._form: dict[str, str] = {}  # view -> the form that worked ("GV$..." or "V$...")
        self._prev: dict[int, Snapshot] = {}  # by INST_ID; kept across reconnects

    # -- reading ------------------------------------------------------------------
    def _forms(self, view: str) -> list[str]:
        if view in NO_GV or self.gv == "off":
            return [view]
        glob = "G" + view
        if self.gv == "on":
            return [glob]
        known = self._form.get(view)
        return [known] if known else [glob, view]

    async def _read(
        self, s: OracleSession, view: str, own: int, unavailable: dict[str, str]
    ) -> Rows | None:
        cols, where = VIEWS[view]
        last = "ORA-00942"
        for form in self._forms(view):
            glob = form.startswith("GV$")
            sql = f"select {'inst_id, ' if glob else ''}{cols} from {form.lower()}"
            if where:
                sql += f" where {where}"
            try:
                names, rows = await s.rows(sql)
            except oracledb.DatabaseError as exc:
                err = exc.args[0] if exc.args else None
                code = getattr(err, "full_code", "") or ""
                if not code.startswith("ORA-"):
                    raise  # the connection, not the view
                last = code
                continue
            self._form[view] = form
            out = [dict(zip(names, r, strict=False)) for r in rows]
            if not glob:
                for r in out:
                    r["INST_ID"] = own
            if not out and view not in EMPTY_OK:
                unavailable[view] = "NO-ROWS"
                return None
            return out
        self._form.pop(view, None)
        unavailable[view] = last
        return None

    async def _collect(
        self, s: OracleSession, own: int, own_name: str | None
    ) -> tuple[dict[str, Rows], dict[str, str], str]:
        unavailable: dict[str, str] = {}
        data: dict[str, Rows] = {}
        for view in VIEWS:
            if view == "V$CPOOL_CC_STATS" and not self.with_classes:
                continue
            rows = await self._read(s, view, own, unavailable)
            if rows is not None:
                data[view] = rows
        source = "GV$" if any(f.startswith("GV$") for f in self._form.values()) else "V$"
        if "V$INSTANCE" not in data:
            data["V$INSTANCE"] = [{"INST_ID": own, "INSTANCE_NAME": own_name, "STARTUP_TIME": None}]
        return data, unavailable, source

    async def run(self, ctx: ProbeContext) -> None:
        r = ctx.result
        if self._logon is None:
            s = await self._log_on(ctx)
        else:
            s = self._logon.session
            self._repeat_identity(ctx)
        if not isinstance(s, OracleSession):
            raise ProbeConfigError("serverstats needs an Oracle session")
        own = int(r.extra.get("instance_number") or 1)
        t0 = time.perf_counter_ns()
        with ctx.timed("query", "query_ns"):
            data, unavailable, source = await self._collect(s, own, r.instance)
        at = (t0 + time.perf_counter_ns()) // 2
        if len(data) <= 1 and "V$INSTANCE" in unavailable:
            code = next(iter(unavailable.values()), "ORA-00942")
            raise ClassifiedException(
                ClassifiedError(
                    ErrorClass.ORA,
                    code,
                    f"{code}: no V$ view readable ({', '.join(sorted(unavailable))}):"
                    " grant the monitoring account SELECT on them (docs/probes.md)",
                )
            )
        r.extra["serverstats"] = {
            "source": source,
            "instances": self._instances(data, at),
            "unavailable": unavailable,
        }

    # -- numbers ------------------------------------------------------------------
    def _instances(self, data: dict[str, Rows], at: int) -> list[dict[str, Any]]:
        out = []
        for inst in data["V$INSTANCE"]:
            iid = int(inst.get("INST_ID") or inst.get("INSTANCE_NUMBER") or 1)
            startup = inst.get("STARTUP_TIME")
            snap = _snapshot(data, iid, at, None if startup is None else str(startup))
            prev = self._prev.get(iid)
            self._prev[iid] = snap
            metrics, classes, reset, interval = _derive(data, iid, snap, prev)
            out.append(
                {
                    "inst_id": iid,
                    "instance": inst.get("INSTANCE_NAME"),
                    "startup": snap.startup,
                    "interval_s": interval,
                    "reset": reset,
                    "metrics": metrics,
                    "classes": classes,
                }
            )
        return out


def _mine(data: dict[str, Rows], view: str, iid: int) -> Rows:
    return [r for r in data.get(view, ()) if int(r.get("INST_ID") or 0) == iid]


def _snapshot(data: dict[str, Rows], iid: int, at: int, startup: str | None) -> Snapshot:
    snap = Snapshot(at, startup)
    c = snap.counters
    for r in _mine(data, "V$SYSSTAT", iid):
        if r.get("NAME") == "logons cumulative":
            c["logons"] = float(r["VALUE"])
    for r in _mine(data, "V$SYS_TIME_MODEL", iid):
        c["cm_us"] = float(r["VALUE"])
    for r in _mine(data, "V$CPOOL_STATS", iid)[:1]:
        for key, col in POOL_COUNTERS.items():
            if (v := _num(r.get(col))) is not None:
                c[f"pool_{key}"] = v
    for r in _mine(data, "V$QUEUE", iid):
        kind = "common" if str(r.get("TYPE")).upper() == "COMMON" else "dispatcher"
        c[f"{kind}_wait"] = c.get(f"{kind}_wait", 0.0) + float(r["WAIT"])
        c[f"{kind}_totalq"] = c.get(f"{kind}_totalq", 0.0) + float(r["TOTALQ"])
    for r in _mine(data, "V$DISPATCHER", iid):
        snap.dispatchers[str(r["NAME"])] = (float(r["BUSY"]), float(r["IDLE"]))
    for r in _mine(data, "V$CPOOL_CC_STATS", iid):
        snap.classes[str(r["CCLASS_NAME"])] = {
            key: float(r[f"NUM_{key.upper()}"]) for key in ("requests", "hits", "misses", "waits")
        }
    return snap


def _went_down(prev: Snapshot, snap: Snapshot) -> bool:
    if prev.startup and snap.startup and prev.startup != snap.startup:
        return True
    if any(v < prev.counters.get(k, v) for k, v in snap.counters.items()):
        return True
    return any(
        busy < prev.dispatchers[name][0]
        for name, (busy, _) in snap.dispatchers.items()
        if name in prev.dispatchers
    )


def _gauges(data: dict[str, Rows], iid: int) -> dict[str, float | None]:
    m: dict[str, float | None] = {}
    for r in _mine(data, "V$SYSSTAT", iid):
        if r.get("NAME") == "logons current":
            m["logons_current"] = _num(r["VALUE"])
    for r in _mine(data, "V$RESOURCE_LIMIT", iid):
        name = str(r["RESOURCE_NAME"]).strip().lower()
        cur, limit = _num(r["CURRENT_UTILIZATION"]), _num(r["LIMIT_VALUE"])
        m[name] = cur
        m[f"{name}_max"] = _num(r["MAX_UTILIZATION"])
        m[f"{name}_limit"] = limit
        m[f"{name}_pct"] = _pct(cur, limit)
    for r in _mine(data, "V$CPOOL_STATS", iid)[:1]:
        m["pool_open"] = _num(r["NUM_OPEN_SERVERS"])
        m["pool_busy"] = _num(r["NUM_BUSY_SERVERS"])
        m["pool_auth"] = _num(r["NUM_AUTH_SERVERS"])
        m["pool_historic_max"] = _num(r["HISTORIC_MAX"])
        info = data.get("DBA_CPOOL_INFO") or []
        if info:
            m["pool_max"] = _num(info[0]["MAXSIZE"])
            m["pool_busy_pct"] = _pct(m["pool_busy"], m["pool_max"])
    for r in _mine(data, "V$AUTHPOOL_STATS", iid)[:1]:
        m["authpool_servers"] = _num(r["NUM_SRVS"])
        m["authpool_busy"] = _num(r["NUM_BUSY"])
        m["authpool_waiters"] = _num(r["NUM_WAITERS"])
    disp = _mine(data, "V$DISPATCHER", iid)
    if disp:
        m["dispatchers"] = float(len(disp))
        m["circuits"] = sum(_num(r["OWNED"]) or 0.0 for r in disp)
    for r in _mine(data, "V$QUEUE", iid):
        if str(r.get("TYPE")).upper() == "COMMON":
            m["common_queued"] = _num(r["QUEUED"])
    for r in _mine(data, "V$SHARED_SERVER_MONITOR", iid)[:1]:
        m["shared_servers_highwater"] = _num(r["SERVERS_HIGHWATER"])
        m["circuits_highwater"] = _num(r["MAXIMUM_CONNECTIONS"])
    for r in _mine(data, "V$PARAMETER", iid):
        if r.get("NAME") == "max_shared_servers":
            m["shared_servers_max"] = _num(r["VALUE"])
    return m


def _derive(
    data: dict[str, Rows], iid: int, snap: Snapshot, prev: Snapshot | None
) -> tuple[dict[str, float | None], dict[str, dict[str, float]], bool, float | None]:
    """(metrics, per-class rates, reset, interval_s) of one instance."""
    m = _gauges(data, iid)
    if prev is None:
        return m, {}, False, None
    if _went_down(prev, snap):
        return m, {}, True, None
    dt = (snap.at_ns - prev.at_ns) / 1e9
    if dt <= 0:
        return m, {}, False, None
    cur, old = snap.counters, prev.counters

    def delta(key: str) -> float | None:
        return cur[key] - old[key] if key in cur and key in old else None

    logons, cm = delta("logons"), delta("cm_us")
    if logons is not None:
        m["logons_per_s"] = round(logons / dt, 6)
    if cm is not None:
        m["cm_s_per_s"] = round(cm / 1e6 / dt, 6)
        m["cm_ms_per_logon"] = round(cm / 1000 / logons, 4) if logons else None
    for key in POOL_COUNTERS:
        d = delta(f"pool_{key}")
        if d is not None:
            m[f"pool_{key}_per_s"] = round(d / dt, 6)
    m["pool_hit_pct"] = _pct(delta("pool_hits"), delta("pool_requests"))
    m["pool_wait_pct"] = _pct(delta("pool_waits"), delta("pool_requests"))
    for kind in ("common", "dispatcher"):
        wait, items = delta(f"{kind}_wait"), delta(f"{kind}_totalq")
        if wait is not None and items is not None:
            m[f"{kind}_wait_ms"] = round(wait * 10 / items, 3) if items else None
    busy_all = total_all = 0.0
    busiest: float | None = None
    for name, (busy, idle) in snap.dispatchers.items():
        if name not in prev.dispatchers:
            continue
        b = busy - prev.dispatchers[name][0]
        t = b + idle - prev.dispatchers[name][1]
        busy_all, total_all = busy_all + b, total_all + t
        share = _pct(b, t)
        if share is not None and (busiest is None or share > busiest):
            busiest = share
    if total_all:
        m["dispatcher_busy_pct"] = _pct(busy_all, total_all)
        m["dispatcher_busy_max_pct"] = busiest
    classes = {
        name: {
            f"{k}_per_s": round((v - prev.classes[name].get(k, 0.0)) / dt, 6)
            for k, v in vals.items()
        }
        for name, vals in snap.classes.items()
        if name in prev.classes
    }
    return m, classes, False, round(dt, 6)
