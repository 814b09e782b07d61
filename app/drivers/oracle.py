"""How connwatch connects to Oracle: python-oracledb, thin mode by default.

Thin mode (no Oracle Client) uses the asyncio API (``oracledb.connect_async``,
``oracledb.create_pool_async``); every connect is cancellable, so the runner's
deadline can cut a logon that hangs. Thick mode is opt-in: set
``OracleEndpoint.thick_lib_dir`` to an Oracle Client library directory. Thick mode
has no asyncio API, so its calls run in a worker thread (``asyncio.to_thread``);
the deadline still ends the probe run on time, but a hung thick call keeps its
thread until the client library gives up (set a connect timeout). Thick mode is
also the only way to use ``ipc`` (and bequeath). It cannot be tested here (no
Oracle Client on these machines) and has no round-trip breakdown
(``round_trip_callback`` is thin only).

Per mode (see :class:`app.probes.spec.OracleEndpoint`): ``server_type``
(dedicated / shared / pooled), DRCP ``cclass`` and ``purity``, implicit pooling
``pool_boundary``, ``tcp``/``tcps`` with ``wallet_location``, ``sdu``, the TCP
connect timeout, ``instance_name`` (RAC: one instance), and an Easy Connect string or
a tnsnames.ora alias resolved in ``config_dir``.

tcps (thin): python-oracledb starts TLS right after the TCP connect with the
``ssl_context`` it is given. connwatch gives it one made per connect, as the driver
would make it (the system's CAs, or only ``ssl_ca_file``; the driver adds the
wallet's ``ewallet.pem`` and the TLS version), that also notes when each handshake
starts (:class:`TimedSSLContext`), so the logon breakdown has the TLS handshake as a
phase of its own. The driver then checks the server's DN (``ssl_server_dn_match``,
``ssl_server_cert_dn``) itself.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from typing import Any

import oracledb

from app.drivers.base import RoundTripLog, SessionInfo
from app.probes.spec import OracleEndpoint, Purity

# The untimed identity query: connping's sys_context query plus the server type.
INFO_SQL = (
    "select sys_context('USERENV','SID'), sys_context('USERENV','INSTANCE'),"
    " sys_context('USERENV','SERVER_TYPE') from dual"
)
# connping's own query, used when the database rejects SERVER_TYPE (ORA-02003).
INFO_SQL_BASIC = "select sys_context('USERENV','SID'), sys_context('USERENV','INSTANCE') from dual"
QUERY_SQL = "select 1 from dual"

_PURITY = {
    Purity.DEFAULT: oracledb.PURITY_DEFAULT,
    Purity.NEW: oracledb.PURITY_NEW,
    Purity.SELF: oracledb.PURITY_SELF,
}
_thick_lock = threading.Lock()
_thick_dir: str | None = None
TLS_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}


class TimedSSLContext(ssl.SSLContext):
    """An SSL context that notes in ``trips.tls`` when each TLS handshake starts.

    python-oracledb thin (asyncio) wraps the new TCP connection with ``loop.start_tls``,
    which calls ``wrap_bio`` once, right before the ClientHello goes out. The trusted CAs
    are loaded there too, the first time: that is when the driver would build its own
    default context (after the TCP connect), so the cost falls in the same phase."""

    trips: RoundTripLog | None = None
    ca_file: str | None = None
    _loaded = False

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        if self.trips is not None:
            self.trips.tls.append(time.perf_counter_ns())
        if not self._loaded:
            self._loaded = True
            if self.ca_file:
                self.load_verify_locations(cafile=self.ca_file)
            else:
                self.load_default_certs(ssl.Purpose.SERVER_AUTH)
        return super().wrap_bio(*args, **kwargs)


def tls_context(ep: OracleEndpoint, trips: RoundTripLog | None) -> TimedSSLContext:
    """What ``ssl.create_default_context()`` gives (the driver's own default), with
    ``ssl_ca_file`` as the only CA when set, and handshake stamps for ``trips``."""
    ctx = TimedSSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.ca_file = ep.ssl_ca_file
    ctx.trips = trips
    return ctx


def connect_params(ep: OracleEndpoint, trips: RoundTripLog | None = None) -> dict[str, Any]:
    """Keyword arguments for ``oracledb.connect*``/``create_pool*`` for one mode."""
    kw: dict[str, Any] = {"user": ep.user, "password": ep.password, "dsn": ep.connect}
    if ep.server_type is not None:
        kw["server_type"] = str(ep.server_type)
    if ep.cclass:
        kw["cclass"] = ep.cclass
    if ep.purity is not Purity.DEFAULT:
        kw["purity"] = _PURITY[ep.purity]
    if ep.pool_boundary:
        kw["pool_boundary"] = ep.pool_boundary
    if ep.protocol != "tcp":
        kw["protocol"] = ep.protocol
    if ep.wallet_location:
        kw["wallet_location"] = ep.wallet_location
    if ep.wallet_password:
        kw["wallet_password"] = ep.wallet_password
    if ep.ssl_server_dn_match is not None:
        kw["ssl_server_dn_match"] = ep.ssl_server_dn_match
    if ep.ssl_server_cert_dn:
        kw["ssl_server_cert_dn"] = ep.ssl_server_cert_dn
    if ep.ssl_version:
        kw["ssl_version"] = TLS_VERSIONS[ep.ssl_version]
    if ep.instance_name:
        kw["instance_name"] = ep.instance_name
    text = ep.connect.lower().replace(" ", "")
    tcps = ep.protocol == "tcps" or text.startswith("tcps://") or "(protocol=tcps)" in text
    if tcps and not ep.thick_lib_dir:
        kw["ssl_context"] = tls_context(ep, trips)
    if ep.sdu:
        kw["sdu"] = ep.sdu
    if ep.connect_timeout_s:
        kw["tcp_connect_timeout"] = ep.connect_timeout_s
    if ep.config_dir:
        kw["config_dir"] = ep.config_dir
    if trips is not None and not ep.thick_lib_dir:
        kw["round_trip_callback"] = trips
    return kw


def ensure_thick(lib_dir: str) -> None:  # pragma: no cover - needs an Oracle Client
    """Switch python-oracledb to thick mode once per process (it cannot switch back)."""
    global _thick_dir
    with _thick_lock:
        if _thick_dir is None:
            oracledb.init_oracle_client(lib_dir=lib_dir)
            _thick_dir = lib_dir
        elif _thick_dir != lib_dir:
            raise ValueError(
                f"thick mode already uses {_thick_dir!r}; one Oracle Client per process"
            )


class OracleSession:
    """One Oracle session (thin asyncio connection, or thick connection in a thread)."""

    def __init__(
        self,
        conn: oracledb.AsyncConnection | None,
        trips: RoundTripLog | None,
        thick: oracledb.Connection | None = None,
        requested_server_type: str | None = None,
    ) -> None:
        self.conn = conn
        self.thick = thick
        self.trips = trips
        self.requested_server_type = requested_server_type
        self._cursor: oracledb.AsyncCursor | None = None
        self._server_type_sql = True
        self.statements = 0  # statements executed through this object (info, query, ...)

    @property
    def round_trips(self) -> int | None:
        return self.trips.count if self.trips is not None else None

    async def ping(self) -> None:
        if self.conn is not None:
            await self.conn.ping()
        else:
            await asyncio.to_thread(self._thick().ping)

    async def query(self) -> None:
        if self.conn is not None:
            if self._cursor is None:
                self._cursor = self.conn.cursor()
            await self._cursor.execute(QUERY_SQL)
            await self._cursor.fetchone()
        else:
            await asyncio.to_thread(self._thick_query, QUERY_SQL)

    def _thick(self) -> oracledb.Connection:
        assert self.thick is not None
        return self.thick

    def _thick_query(self, sql: str) -> Any:
        with self._thick().cursor() as cur:
            cur.execute(sql)
            return cur.fetchone()

    async def _fetch(self, sql: str) -> Any:
        self.statements += 1
        if self.conn is not None:
            with self.conn.cursor() as cur:
                await cur.execute(sql)
                return await cur.fetchone()
        return await asyncio.to_thread(self._thick_query, sql)

    async def rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names (upper case) and every row of ``sql``: one execute and its fetches
        (the serverstats probe's reads of the V$ views)."""
        if self.conn is not None:
            with self.conn.cursor() as cur:
                await cur.execute(sql)
                names = [str(d[0]).upper() for d in cur.description or ()]
                return names, list(await cur.fetchall())
        return await asyncio.to_thread(self._thick_rows, sql)

    def _thick_rows(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        with self._thick().cursor() as cur:
            cur.execute(sql)
            names = [str(d[0]).upper() for d in cur.description or ()]
            return names, list(cur.fetchall())

    async def info(self) -> SessionInfo:
        row: Any = None
        if self._server_type_sql:
            try:
                row = await self._fetch(INFO_SQL)
            except oracledb.DatabaseError as exc:
                if "ORA-02003" not in str(exc):
                    raise
                self._server_type_sql = False
        if row is None:
            row = await self._fetch(INFO_SQL_BASIC)
        conn: Any = self.conn if self.conn is not None else self.thick
        server_type = row[2] if len(row) > 2 and row[2] else self.requested_server_type
        inst = _to_int(row[1])
        return SessionInfo(
            sid=_to_int(row[0]),
            serial=getattr(conn, "serial_num", None),
            instance=getattr(conn, "instance_name", None) or (str(inst) if inst else None),
            service=getattr(conn, "service_name", None),
            server_type=str(server_type).upper() if server_type else None,
            instance_number=inst,
        )

    async def _exec(self, sql: str, binds: list[Any]) -> None:
        if self.conn is not None:
            with self.conn.cursor() as cur:
                await cur.execute(sql, binds)
        else:
            await asyncio.to_thread(self._thick_exec, sql, binds)

    async def insert(self, table: str, probe_id: str) -> None:
        await self._exec(
            f"insert into {table} (probe_id, at) values (:1, systimestamp)", [probe_id]
        )

    def _thick_exec(self, sql: str, binds: list[Any]) -> None:
        with self._thick().cursor() as cur:
            cur.execute(sql, binds)

    async def commit(self) -> None:
        if self.conn is not None:
            await self.conn.commit()
        else:
            await asyncio.to_thread(self._thick().commit)

    async def purge(self, table: str, probe_id: str, keep_seconds: int) -> None:
        sql = (
            f"delete from {table} where probe_id = :1"
            f" and at < systimestamp - numtodsinterval({int(keep_seconds)}, 'SECOND')"
        )
        await self._exec(sql, [probe_id])
        await self.commit()

    async def close(self) -> None:
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None
        if self.conn is not None:
            await self.conn.close()
        elif self.thick is not None:
            await asyncio.to_thread(self.thick.close)


def _to_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


async def connect(ep: OracleEndpoint, trips: RoundTripLog | None = None) -> OracleSession:
    """Log on once (a standalone connection)."""
    requested = str(ep.server_type).upper() if ep.server_type else None
    if ep.thick_lib_dir:  # pragma: no cover - needs an Oracle Client
        ensure_thick(ep.thick_lib_dir)
        conn = await asyncio.to_thread(oracledb.connect, **connect_params(ep))
        return OracleSession(None, None, thick=conn, requested_server_type=requested)
    aconn = await oracledb.connect_async(**connect_params(ep, trips))
    return OracleSession(aconn, trips, requested_server_type=requested)


async def create_pool(
    ep: OracleEndpoint,
    *,
    min_size: int,
    max_size: int,
    increment: int,
    ping_interval: int,
    trips: RoundTripLog | None = None,
) -> oracledb.AsyncConnectionPool:
    """A python-oracledb thin asyncio pool for the poolacquire probe (thin only)."""
    if ep.thick_lib_dir:
        raise ValueError("poolacquire runs in thin mode only (asyncio pools are thin-only)")
    return oracledb.create_pool_async(
        min=min_size,
        max=max_size,
        increment=increment,
        ping_interval=ping_interval,
        **connect_params(ep, trips),
    )
