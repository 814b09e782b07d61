"""The measurement record shared by probes, the agent and the store.

A :class:`Sample` is one run of one series at one scheduled instant. Every
timing is a non-negative number of nanoseconds measured with
``time.perf_counter_ns()``; ``None`` means "not measured in this run" (the phase
was not reached, or the probe kind has no such phase), never zero. Failures are
samples too: ``status`` says how the run ended and the ``error_*`` fields say
why and where.

What each timing covers (probes document their own exact boundaries):

``logon_ns``    from just before the driver's connect call until it returns a
                usable session (TCP connect, Oracle Net CONNECT/ACCEPT,
                negotiation and both authentication round trips; for
                PostgreSQL the startup and authentication exchange).
``ping_ns``     one client-server round trip without SQL (OCIPing /
                ``Connection.ping()``; PostgreSQL: an empty query).
``query_ns``    execute and fetch of ``select 1 from dual`` (``select 1``).
``logoff_ns``   closing the session until the driver returns.
``commit_ns``   one insert plus its commit (commit probe).
``acquire_ns``  a client-side pool ``acquire()`` (poolacquire probe).
``total_ns``    the whole run as the runner saw it, including everything above.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class SampleStatus(enum.StrEnum):
    """How a run ended."""

    OK = "ok"
    ERROR = "error"  # the database or driver raised a classified error
    TIMEOUT = "timeout"  # the runner's deadline cut the run; ``error_phase`` says where
    SKIPPED = "skipped"  # the run could not start in time (agent overload); no timings


class ErrorClass(enum.StrEnum):
    """Where a failure's code comes from.

    Every class but :attr:`PROBE` is a failure of the target (or of the network to it).
    :attr:`PROBE` is a **probe-side error**: the measurement itself failed on
    connwatch's side (a defect of the driver or of connwatch, or a series connwatch
    cannot build), so the sample says nothing about the target. Probe-side errors are
    stored with ``status = 'error'`` and ``error_class = 'PROBE'``, their codes start
    with ``PROBE-`` (``PROBE-IndexError``, ``PROBE-CONFIG``, ...), the rollups count
    them in ``n_probe`` (never in ``n_error``), and every reader that judges a target
    (availability, overview state, alert rules, the weekly report, ``/metrics``) must
    leave them out: availability is ``n_ok / (n - n_skipped - n_probe)``
    (:func:`measured`). They are shown as what they are (class PROBE) and the
    Samples page filters for them. docs/probes.md, "Error classes and codes".
    """

    ORA = "ORA"  # server error, code ``ORA-nnnnn``
    DPY = "DPY"  # python-oracledb client error, code ``DPY-nnnn``
    TNS = "TNS"  # the listener refused, code ``TNS-nnnnn`` (ORA-125xx family)
    TIMEOUT = "TIMEOUT"  # deadline exceeded, code ``TIMEOUT``
    PG = "PG"  # PostgreSQL SQLSTATE, code ``PG-xxxxx``
    NET = "NET"  # operating-system network error (refused, reset, unreachable)
    TLS = "TLS"  # the TLS handshake failed (tcps): untrusted, DN/name mismatch, version
    OTHER = "OTHER"  # a driver error without a code (code is the exception's class name)
    PROBE = "PROBE"  # probe-side: NOT the target's failure (code ``PROBE-<what>``)


PROBE_CODE_PREFIX = "PROBE-"  # every probe-side error code starts with it


def is_probe_side(error_class: str | None) -> bool:
    """True for a probe-side error (:attr:`ErrorClass.PROBE`): not the target's failure."""
    return error_class == ErrorClass.PROBE


def measured(n: int, n_skipped: int, n_probe: int) -> int:
    """How many of ``n`` runs said something about the target: every run except skipped
    ones (the agent could not start them) and probe-side errors. Availability is
    ``n_ok / measured(...)`` (``None`` when that is 0)."""
    return n - n_skipped - n_probe


def availability_ratio(n_ok: int, n: int, n_skipped: int, n_probe: int) -> float | None:
    """``n_ok`` over the runs that measured the target; None when none did."""
    ran = measured(n, n_skipped, n_probe)
    return n_ok / ran if ran > 0 else None


# --- Oracle thin logon phases -------------------------------------------------------
# The logon's round trips in wire order: the names ``logon_phases`` keys carry
# (app.drivers.base.logon_phases names them). Charts and "test now" order phases by
# this one list and show names it does not know after it (a repeat such as
# ``connect_2`` right after its base). Rename a phase here, nowhere else.
LOGON_PHASE_ORDER: tuple[str, ...] = (
    "tcp_connect",
    "tls_handshake",
    "connect",
    "network_services",
    "protocol",
    "data_types",
    "fast_auth",
    "auth1",
    "auth2",
)


def logon_phase_key(name: str) -> tuple[int, int, str]:
    """Sort key putting logon phase names in wire order (``connect_2`` after ``connect``)."""
    base, _, n = name.rpartition("_")
    if not (base and n.isdigit()):
        base, n = name, "1"
    try:
        at = LOGON_PHASE_ORDER.index(base)
    except ValueError:
        at = len(LOGON_PHASE_ORDER)
    return at, int(n), name


# The two logon flows python-oracledb negotiates, phase by phase (docs/probes.md, "Logon
# phases"; tcps adds ``tls_handshake`` after ``tcp_connect``). 19c and earlier, 5 round
# trips: CONNECT/ACCEPT, protocol, data types, authentication phase one (user -> session
# key and verifier data), authentication phase two (password proof -> session).
LOGON_FLOW_19C: tuple[str, ...] = (
    "tcp_connect",
    "connect",
    "protocol",
    "data_types",
    "auth1",
    "auth2",
)
# 23ai fast authentication, 3 round trips: CONNECT/ACCEPT (the ACCEPT offers fast
# authentication), one round trip carrying protocol + data types + authentication phase
# one, then authentication phase two as in 19c. A wrong password fails at ``auth2`` in
# both flows.
LOGON_FLOW_23AI: tuple[str, ...] = ("tcp_connect", "connect", "fast_auth", "auth2")
LOGON_PHASE_MEANING: dict[str, str] = {
    "tcp_connect": "from the connect call until the first Oracle Net request: name "
    "resolution and the TCP handshake",
    "tls_handshake": "tcps only: the TLS handshake and the certificate and DN checks",
    "connect": "CONNECT sent until the next request: the listener's ACCEPT (or RESEND / "
    "REDIRECT), and for a dedicated server its process start",
    "network_services": "native network services negotiation (only with EZTLS or external "
    "authentication)",
    "protocol": "protocol version negotiation (19c flow)",
    "data_types": "data-types negotiation (19c flow)",
    "fast_auth": "23ai fast authentication: protocol + data types + authentication phase "
    "one in one round trip",
    "auth1": "authentication phase one: user name sent, session key and verifier data "
    "received, then the client's password-key derivation (19c flow)",
    "auth2": "authentication phase two: password proof sent, session created (ORA-01017 "
    "and ORA-28000 come back here); both flows",
}


PHASE_FIELDS: tuple[str, ...] = (
    "logon_ns",
    "ping_ns",
    "query_ns",
    "logoff_ns",
    "commit_ns",
    "acquire_ns",
)


@dataclass(slots=True)
class Sample:
    """One probe run. Field order is the storage order; see module docs for meanings."""

    series_id: int | None
    scheduled_at: datetime  # timezone-aware UTC: the instant the run was due
    started_at: datetime  # timezone-aware UTC: the instant the run really started
    status: SampleStatus
    total_ns: int | None = None
    logon_ns: int | None = None
    ping_ns: int | None = None
    query_ns: int | None = None
    logoff_ns: int | None = None
    commit_ns: int | None = None
    acquire_ns: int | None = None
    round_trips: int | None = None
    # Logon broken down per round trip, in wire order, named as in LOGON_PHASE_ORDER, e.g.
    # {"tcp_connect": .., "connect": .., "protocol": .., "data_types": .., "auth1": .., "auth2": ..}
    # (19c) or {"tcp_connect": .., "connect": .., "fast_auth": .., "auth2": ..} (23ai)
    logon_phases: dict[str, int] | None = None
    error_class: ErrorClass | None = None
    error_code: str | None = None  # e.g. "ORA-01017", "DPY-6005", "TNS-12520", "PG-28P01"
    error_phase: str | None = None  # the phase that failed or hung: "logon", "ping", ...
    # the driver message (lines joined by " | "), secrets removed, at most 500 chars
    error_message: str | None = None
    sid: int | None = None
    serial: int | None = None
    instance: str | None = None
    service: str | None = None
    server_type: str | None = None  # DEDICATED / SHARED / POOLED (Oracle), or PG analogue
    agent: str | None = None  # agent name that took the sample
    site: str | None = None  # vantage point of that agent
    extra: dict[str, Any] = field(default_factory=dict)  # pool settings, sweep level, ...

    @property
    def ok(self) -> bool:
        return self.status is SampleStatus.OK

    def timings(self) -> dict[str, int]:
        """The measured phases of this run (name without ``_ns`` -> nanoseconds)."""
        out: dict[str, int] = {}
        for name in PHASE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name.removesuffix("_ns")] = value
        return out
