"""The table: every code connwatch records or commonly sees, with a meaning and a likely cause.

Each entry is ``code: (meaning, likely cause)``, one short line each, written for the
on-call engineer who reads it at 03:00: what the code says, then what usually makes it
happen in a monitored estate. Codes not listed here still get a family-level sentence
from :mod:`app.explain.lookup`.
"""

from __future__ import annotations

# Recorded by connwatch itself (the runner and the agent), not by a database.
CONNWATCH: dict[str, tuple[str, str]] = {
    "TIMEOUT": (
        "the probe did not finish within its timeout; the phase that hung is named",
        "a server or listener that accepts but does not answer, a firewall dropping packets "
        "silently, or a logon queued behind an exhausted pool or process limit",
    ),
    "CONFIG": (
        "the series could not be built: its target or mode settings are unusable",
        "a password reference (env:/file:) that cannot be read, or parameters that no "
        "longer validate; fix the target in the Targets page",
    ),
    "LATE": (
        "skipped: the run could not start within its grace (the agent was late)",
        "the agent's host or event loop was overloaded or paused; this is the monitor's "
        "trouble, not the database's",
    ),
    "BUSY": (
        "skipped: no free run slot in time (CONNWATCH_AGENT_MAX_IN_FLIGHT reached)",
        "too many probes in flight at once, often many hanging targets; raise the limit "
        "or add an agent",
    ),
    "RATE_LIMIT": (
        "skipped: the agent's logons-per-second cap was reached",
        "more logons scheduled than CONNWATCH_AGENT_LOGONS_PER_S or "
        "..._TARGET_LOGONS_PER_S allow; lengthen intervals or raise the cap",
    ),
    "OVERLOAD": (
        "skipped: the agent had more runs due than it could start on time, so it ran a "
        "share of every series' instants and recorded the rest (or its own loop stalled "
        "during the run)",
        "too many series for the agent's cores: add workers (CONNWATCH_AGENT_WORKERS), "
        "cores or agents, or lengthen intervals; the Agents page says by how much; "
        "the monitor's trouble, not the database's",
    ),
    "PAUSED": (
        "skipped: a maintenance window with pause_probes was open; the message names it "
        "and when it ends",
        "planned work (Alerts > Maintenance windows); probing resumes at the window's end, "
        "with a fresh logon; not the database's fault",
    ),
    "OVERRUN": (
        "skipped: the previous run of this series was still running",
        "a run that takes longer than the interval (slow or hanging target); the "
        "timeout should be shorter than the interval",
    ),
}

# Probe-side errors (class PROBE, app.samples.ErrorClass.PROBE): the measurement failed on
# connwatch's side; never the database's failure, never counted in its availability.
# docs/probes.md, "Probe-side errors" and "Driver defects connwatch works around".
PROBE: dict[str, tuple[str, str]] = {
    "PROBE-CONFIG": (
        "probe-side: the series could not be built or run as configured",
        "a password reference (env:/file:) that cannot be read, parameters that no longer "
        "validate, or a second sweep of one endpoint; fix the target in the Targets page",
    ),
    "PROBE-IndexError": (
        "probe-side: an IndexError inside the driver or connwatch, not an answer of the database",
        "python-oracledb thin's DRCP statement-cache overflow ('array assignment index out "
        "of range'); connwatch recycles pooled connections before it: report a recurrence",
    ),
    "PROBE-DPY-4011": (
        "probe-side: python-oracledb's asyncio listener-REDIRECT race closed the logon, not "
        "the dispatcher",
        "a redirected shared-server logon run on an event loop connwatch does not control; "
        "connwatch's own loops are immune (docs/probes.md)",
    ),
}

# Oracle server errors (python-oracledb passes the server's ORA- code through).
ORA: dict[str, tuple[str, str]] = {
    "ORA-01017": (
        "invalid username or password; logon denied",
        "a wrong or changed password, a wrong user, or a password reference that "
        "resolves to an old value",
    ),
    "ORA-28000": (
        "the account is locked",
        "too many failed logons (FAILED_LOGIN_ATTEMPTS), often from a client with an "
        "old password, or locked by a DBA",
    ),
    "ORA-28001": (
        "the password has expired",
        "the profile's PASSWORD_LIFE_TIME passed; set a new password for the monitoring user",
    ),
    "ORA-01034": (
        "ORACLE not available",
        "the instance is down or starting; the listener still has a static registration",
    ),
    "ORA-01033": (
        "ORACLE initialization or shutdown in progress",
        "the instance is starting up or shutting down (planned maintenance or a crash)",
    ),
    "ORA-01089": (
        "immediate shutdown or close in progress",
        "a DBA issued SHUTDOWN IMMEDIATE; sessions are being refused",
    ),
    "ORA-01013": (
        "user requested cancel of current operation",
        "the call was cancelled, usually by a client-side call timeout",
    ),
    "ORA-03113": (
        "end-of-file on communication channel",
        "the server process died or the network dropped the connection mid-call",
    ),
    "ORA-03135": (
        "connection lost contact",
        "a firewall or the server dropped an idle or busy connection",
    ),
    "ORA-00018": (
        "maximum number of sessions exceeded",
        "the SESSIONS parameter is reached: a connection storm or leaking sessions",
    ),
    "ORA-00020": (
        "maximum number of processes exceeded",
        "the PROCESSES parameter is reached: dedicated-server logons use one process each",
    ),
    "ORA-00028": (
        "your session has been killed",
        "a DBA or a resource manager rule killed the session",
    ),
    "ORA-02396": (
        "exceeded maximum idle time, please connect again",
        "the profile's IDLE_TIME ended a kept session (sessionping)",
    ),
    "ORA-01012": (
        "not logged on",
        "the session was ended by the server before the call (killed or timed out)",
    ),
    "ORA-00942": (
        "table or view does not exist",
        "the probe's query names an object the user cannot see (grants or wrong schema)",
    ),
    "ORA-00904": (
        "invalid identifier",
        "the probe's query names a column that does not exist in this database version",
    ),
    "ORA-01403": ("no data found", "the probe's query returned no row"),
    "ORA-02003": (
        "invalid USERENV parameter",
        "the database does not know a SYS_CONTEXT parameter the probe asked for",
    ),
    "ORA-04031": (
        "unable to allocate shared memory",
        "the shared pool or large pool is exhausted (shared server and DRCP use the large pool)",
    ),
    "ORA-00600": (
        "internal error in the Oracle server",
        "a server bug: the alert log and trace file hold its arguments for a service request",
    ),
    "ORA-12170": (
        "TNS: connect timeout occurred",
        "the host did not answer in time: firewall, routing or a host that is down",
    ),
    "ORA-56600": (
        "DRCP: illegal call",
        "the client used a call DRCP does not allow on a pooled server",
    ),
}

# Listener refusals (thin mode reports them as DPY-6005 "Similar to ORA-125xx").
TNS: dict[str, tuple[str, str]] = {
    "TNS-12514": (
        "the listener does not currently know of the requested service",
        "the service is not registered (instance down, service stopped, or a typo in the "
        "service name)",
    ),
    "TNS-12505": (
        "the listener does not currently know of the SID given",
        "a wrong SID or the instance is not registered with this listener",
    ),
    "TNS-12516": (
        "the listener could not find an available handler with a matching protocol stack",
        "all dispatchers or dedicated handlers are busy or blocked (PROCESSES reached)",
    ),
    "TNS-12519": (
        "no appropriate service handler found",
        "the instance reached PROCESSES or SESSIONS and the listener stopped handing off",
    ),
    "TNS-12520": (
        "the listener could not find an available handler for the requested type of server",
        "shared server asked for with no dispatcher, or a pooled (DRCP) logon with the "
        "pool not started",
    ),
    "TNS-12521": (
        "the listener does not currently know of the requested instance",
        "INSTANCE_NAME in the connect string names an instance that is not registered",
    ),
    "TNS-12528": (
        "all appropriate instances are blocking new connections",
        "the instances are starting, shutting down or in restricted mode",
    ),
    "TNS-12535": ("operation timed out", "the host or a firewall did not answer in time"),
    "TNS-12537": (
        "the connection was closed",
        "the listener or server closed the connection (invited nodes, a crash, a firewall)",
    ),
    "TNS-12541": (
        "no listener",
        "nothing listens on that host and port: listener down or a wrong port",
    ),
    "TNS-12547": ("lost contact", "the server process died during the handshake"),
}

# python-oracledb client errors (thin mode).
DPY: dict[str, tuple[str, str]] = {
    "DPY-6002": (
        "the server certificate's DN is not the one expected (recorded as TLS-DN-MISMATCH)",
        "ssl_server_cert_dn names another server, or the listener's certificate changed",
    ),
    "DPY-6006": (
        "the host name is not in the server certificate (recorded as TLS-NAME-MISMATCH)",
        "connect by a name the certificate carries, or set ssl_server_cert_dn",
    ),
    "DPY-4011": (
        "the database or network closed the connection",
        "the server process ended or a firewall reset the connection (before ACCEPT, "
        "often a refused or crashed handshake)",
    ),
    "DPY-4024": (
        "the call timeout was exceeded",
        "the server did not answer a round trip within the driver's call timeout",
    ),
    "DPY-4033": (
        "the database closed the connection: its idle time was exceeded",
        "the profile's IDLE_TIME ended a kept session (sessionping reconnects next run)",
    ),
    "DPY-4005": (
        "timed out waiting for the connection pool to return a connection",
        "every pooled connection is in use (poolacquire) or the pool cannot grow",
    ),
    "DPY-4000": (
        "the TNS alias was not found in tnsnames.ora",
        "a typo in the alias, or CONNWATCH_TNS_ADMIN points at the wrong directory",
    ),
    "DPY-4026": (
        "a configuration file is missing or unreadable",
        "tnsnames.ora or a wallet file is absent from the configured directory",
    ),
    "DPY-4027": (
        "no configuration directory specified",
        "the connect string was read as a TNS alias (a typo such as a non-numeric port) "
        "and CONNWATCH_TNS_ADMIN is unset",
    ),
    "DPY-4028": (
        "invalid server type",
        "the connect string asks for a server type other than dedicated, shared or pooled",
    ),
    "DPY-6000": (
        "the listener refused the connection",
        "see the ORA-125xx it resembles (recorded as TNS-125xx when found)",
    ),
    "DPY-6001": (
        "the service name is not registered with the listener",
        "the service is down or misspelled (like TNS-12514)",
    ),
    "DPY-6003": (
        "the SID is not registered with the listener",
        "the instance is down or the SID is misspelled (like TNS-12505)",
    ),
    "DPY-6005": (
        "cannot connect to the database",
        "a network or listener failure with no more specific code",
    ),
    "DPY-1001": (
        "not connected to the database",
        "the connection was lost before the call (see the previous sample's error)",
    ),
}

# PostgreSQL SQLSTATEs (and the ones recognised from libpq's start-up messages).
PG: dict[str, tuple[str, str]] = {
    "PG-28P01": (
        "password authentication failed",
        "a wrong or changed password for the monitoring role",
    ),
    "PG-28000": (
        "invalid authorization: the role does not exist or pg_hba.conf has no matching entry",
        "a wrong role name, or pg_hba.conf does not allow this host, user or database",
    ),
    "PG-3D000": (
        "the database does not exist",
        "a typo in the database name, or the database was dropped or renamed",
    ),
    "PG-53300": (
        "too many connections",
        "max_connections (or pgbouncer's max_client_conn / pool size) is reached",
    ),
    "PG-57P01": (
        "terminating connection due to administrator command",
        "pg_terminate_backend() or a fast shutdown ended the session",
    ),
    "PG-57P03": (
        "the database system is starting up, shutting down or in recovery",
        "a restart, a failover or a standby that does not accept connections yet",
    ),
    "PG-57014": (
        "the query was cancelled",
        "statement_timeout or a cancel request stopped the probe's query",
    ),
    "PG-08004": (
        "the server rejected the connection (reason not recognised)",
        "look at the message: pg_hba.conf, an extension or pgbouncer refused the login",
    ),
    "PG-08006": (
        "the connection failed (libpq gave no SQLSTATE)",
        "the server or pgbouncer closed the connection during start-up or a call",
    ),
    "PG-08001": (
        "the client could not establish the connection",
        "the host or port is unreachable or nothing listens there",
    ),
    "PG-08P01": (
        "protocol violation",
        "pgbouncer refused the request (e.g. a prepared statement in transaction pooling) "
        "or a non-PostgreSQL server answered",
    ),
    "PG-42P01": (
        "the relation does not exist",
        "the probe's query or the commit probe's scratch table is missing",
    ),
    "PG-42501": (
        "insufficient privilege",
        "the monitoring role lacks a grant the probe needs (e.g. CREATE on the schema)",
    ),
    "PG-53100": ("disk full", "the server's data or WAL volume is full"),
    "PG-53200": ("out of memory", "the server could not allocate memory for the session"),
    "PG-25006": (
        "read-only transaction",
        "the commit probe reached a standby or a database in read-only mode",
    ),
}

# Operating-system network errors, by errno name (NET-<ERRNO>).
NET: dict[str, tuple[str, str]] = {
    "NET-ECONNREFUSED": (
        "connection refused: nothing listens on that host and port",
        "the listener, server or pgbouncer is down, or the port is wrong",
    ),
    "NET-ECONNRESET": (
        "connection reset by the peer",
        "the server process died or a firewall or load balancer reset the connection",
    ),
    "NET-ETIMEDOUT": (
        "the connection attempt timed out",
        "the host is down or a firewall drops packets silently",
    ),
    "NET-EHOSTUNREACH": ("no route to the host", "the host is down or routing is broken"),
    "NET-ENETUNREACH": ("the network is unreachable", "no route from the agent to that network"),
    "NET-ENOENT": (
        "the unix socket does not exist",
        "the server is not running, or the socket directory or port is wrong",
    ),
    "NET-EACCES": (
        "permission denied on the socket",
        "the agent's user may not open that unix socket",
    ),
    "NET-EPIPE": ("broken pipe: the peer closed the connection", "the server process ended"),
    "NET-EADDRNOTAVAIL": (
        "no local address available",
        "the agent's host ran out of ephemeral ports (too many connections in TIME_WAIT)",
    ),
    "NET-ECONNABORTED": ("the connection was aborted", "the local network stack gave up"),
    "NET-EAI_NONAME": (
        "the host name does not resolve",
        "a typo in the host name, or DNS does not know it from the agent's host",
    ),
    "NET-EAI_AGAIN": (
        "temporary failure in name resolution",
        "the DNS server did not answer; the agent's resolver is down or unreachable",
    ),
}

# tcps: the TLS handshake, before any Oracle Net packet (app.probes.errors._tls_code).
TLS: dict[str, tuple[str, str]] = {
    "TLS-UNTRUSTED": (
        "the server's certificate does not chain to a CA this client trusts",
        "the mode's CA (ssl_ca_file or the wallet's ewallet.pem) is missing or not the CA "
        "that signed the listener's certificate, or the certificate is self-signed",
    ),
    "TLS-EXPIRED": (
        "a certificate in the server's chain is expired or not yet valid",
        "the listener's wallet was not renewed in time, or the agent's clock is wrong",
    ),
    "TLS-DN-MISMATCH": (
        "the certificate's subject is not the DN this mode expects (DPY-6002)",
        "ssl_server_cert_dn names another server, or the listener presents a new "
        "certificate (renewed, moved, or a man in the middle)",
    ),
    "TLS-NAME-MISMATCH": (
        "the host name connected to is not in the certificate (DPY-6006)",
        "connect by a name the certificate carries, or set ssl_server_cert_dn",
    ),
    "TLS-VERSION": (
        "client and listener share no TLS version",
        "ssl_version pins a version the listener does not allow (SSL_VERSION in its "
        "sqlnet.ora), or one side allows only old versions",
    ),
    "TLS-HANDSHAKE": (
        "the TLS handshake failed for another reason (the message says which)",
        "the port does not speak TLS (a tcp listener), or a proxy or firewall cut the handshake",
    ),
}
