"""The views a monitoring account reads beyond the pool and shared-server ones in
:mod:`app.oraclesim.database.views`: V$INSTANCE, V$PARAMETER, V$RESOURCE_LIMIT,
V$SHARED_SERVER_MONITOR, V$CIRCUIT, V$AUTHPOOL_STATS (19.10 and later),
V$SESS_TIME_MODEL and DBA_CPOOL_INFO. Same shapes and units as Oracle's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from app.oraclesim.database.views import MIN_AUTH_SERVERS, ServerState

Row = dict[str, Any]
Columns = list[tuple[str, str]]
View = tuple[Columns, list[Row]]

AUTHPOOL_SINCE = (19, 10)  # MIN/MAX_AUTH_SERVERS and V$AUTHPOOL_STATS: 19c RU 19.10
PER_PDB_DRCP_SINCE = (21, 0)  # ENABLE_PER_PDB_DRCP
MAX_AUTH_SERVERS = 25


def _cols(row: Row) -> Columns:
    return [(k, "varchar" if isinstance(v, str) else "number") for k, v in row.items()]


def _limit(value: int) -> str:
    """LIMIT_VALUE / INITIAL_ALLOCATION: VARCHAR2(10), right-aligned like Oracle's."""
    return f"{value:>10}"


def _v_instance(st: ServerState) -> View:
    row: Row = {
        "INSTANCE_NUMBER": st.instance_number,
        "INSTANCE_NAME": st.instance_name,
        "HOST_NAME": st.host_name,
        "VERSION": f"{st.version[0]}.0.0.0.0",
        "STARTUP_TIME": datetime.fromtimestamp(st.started_wall, UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "STATUS": "OPEN",
        "DATABASE_STATUS": "ACTIVE",
        "INSTANCE_ROLE": "PRIMARY_INSTANCE",
    }
    return _cols(row), [row]


def parameters(st: ServerState, per_pdb_drcp: bool) -> dict[str, str]:
    """The initialization parameters the simulator has, as V$PARAMETER shows them."""
    params = {
        "processes": str(st.processes_limit),
        "sessions": str(st.sessions_limit),
        "shared_servers": str(len(st.shared.servers) - st.shared.started),
        "max_shared_servers": str(st.shared.max_servers),
        "dispatchers": "(PROTOCOL=TCP)(DISPATCHERS=1)",
        "instance_name": st.instance_name,
        "instance_number": str(st.instance_number),
    }
    if st.version >= AUTHPOOL_SINCE:
        params["min_auth_servers"] = str(MIN_AUTH_SERVERS)
        params["max_auth_servers"] = str(MAX_AUTH_SERVERS)
    if st.version >= PER_PDB_DRCP_SINCE:
        params["enable_per_pdb_drcp"] = "TRUE" if per_pdb_drcp else "FALSE"
    return params


def _v_parameter(st: ServerState, per_pdb_drcp: bool) -> View:
    rows = [
        {"NAME": name, "VALUE": value, "ISDEFAULT": "FALSE"}
        for name, value in parameters(st, per_pdb_drcp).items()
    ]
    return [("NAME", "varchar"), ("VALUE", "varchar"), ("ISDEFAULT", "varchar")], rows


def _v_resource_limit(st: ServerState) -> View:
    st.note()
    rows = [
        {
            "RESOURCE_NAME": "processes",
            "CURRENT_UTILIZATION": st.processes(),
            "MAX_UTILIZATION": st.max_processes,
            "INITIAL_ALLOCATION": _limit(st.processes_limit),
            "LIMIT_VALUE": _limit(st.processes_limit),
        },
        {
            "RESOURCE_NAME": "sessions",
            "CURRENT_UTILIZATION": st.sessions_current(),
            "MAX_UTILIZATION": st.max_sessions,
            "INITIAL_ALLOCATION": _limit(st.sessions_limit),
            "LIMIT_VALUE": _limit(st.sessions_limit),
        },
        {
            "RESOURCE_NAME": "max_shared_servers",
            "CURRENT_UTILIZATION": len(st.shared.servers),
            "MAX_UTILIZATION": len(st.shared.servers),
            "INITIAL_ALLOCATION": _limit(st.shared.max_servers),
            "LIMIT_VALUE": _limit(st.shared.max_servers),
        },
    ]
    return _cols(rows[0]), rows


def _v_shared_server_monitor(st: ServerState) -> View:
    st.note()
    sh = st.shared
    row: Row = {
        "MAXIMUM_CONNECTIONS": sh.max_circuits,
        "MAXIMUM_SESSIONS": st.max_shared_sessions,
        "SERVERS_STARTED": sh.started,
        "SERVERS_TERMINATED": 0,
        "SERVERS_HIGHWATER": len(sh.servers),
    }
    return _cols(row), [row]


def _v_circuit(st: ServerState) -> View:
    rows = [
        {
            "CIRCUIT": f"{s.sid:016X}",
            "DISPATCHER": "D000",
            "STATUS": "NORMAL",
            "QUEUE": "SERVER" if s.status == "ACTIVE" else "NONE",
            "SID": s.sid,
        }
        for s in st.sessions.values()
        if s.server == "SHARED"
    ]
    cols: Columns = [
        ("CIRCUIT", "varchar"),
        ("DISPATCHER", "varchar"),
        ("STATUS", "varchar"),
        ("QUEUE", "varchar"),
        ("SID", "number"),
    ]
    return cols, rows


def _v_authpool_stats(st: ServerState) -> View:
    p = st.drcp
    waiters = max(0, p.auth_busy - MAX_AUTH_SERVERS)
    srvs = min(p.auth_servers, MAX_AUTH_SERVERS)
    busy = min(p.auth_busy, MAX_AUTH_SERVERS)
    row: Row = {"NUM_SRVS": srvs, "NUM_BUSY": busy, "NUM_FREE": srvs - busy, "NUM_WAITERS": waiters}
    return _cols(row), [row]


def _v_sess_time_model(st: ServerState) -> View:
    rows = [
        {
            "SID": s.sid,
            "STAT_ID": 1,
            "STAT_NAME": "connection management call elapsed time",
            "VALUE": s.cm_us,
        }
        for s in st.sessions.values()
    ]
    cols: Columns = [
        ("SID", "number"),
        ("STAT_ID", "number"),
        ("STAT_NAME", "varchar"),
        ("VALUE", "number"),
    ]
    return cols, rows


def _dba_cpool_info(st: ServerState) -> View:
    row: Row = {
        "CONNECTION_POOL": "SYS_DEFAULT_CONNECTION_POOL",
        "STATUS": "ACTIVE",
        "MINSIZE": 4,
        "MAXSIZE": st.drcp.max_servers,
        "INCRSIZE": 2,
        "INACTIVITY_TIMEOUT": 300,
        "MAX_THINK_TIME": 120,
        "NUM_CBROK": 1,
        "MAXCONN_CBROK": 40000,
    }
    return _cols(row), [row]


# Views with the instance's own rows; V$PARAMETER needs the CDB setting, see catalog.py.
VIEWS: dict[str, Callable[[ServerState], View]] = {
    "V$INSTANCE": _v_instance,
    "V$RESOURCE_LIMIT": _v_resource_limit,
    "V$SHARED_SERVER_MONITOR": _v_shared_server_monitor,
    "V$CIRCUIT": _v_circuit,
    "V$AUTHPOOL_STATS": _v_authpool_stats,
    "V$SESS_TIME_MODEL": _v_sess_time_model,
    "DBA_CPOOL_INFO": _dba_cpool_info,
}
