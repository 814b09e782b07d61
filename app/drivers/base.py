"""What the probes need from a database driver: a session with timed-able calls.

Both drivers (:mod:`app.drivers.oracle`, :mod:`app.drivers.postgres`) return a
:class:`Session`. Each method is exactly one driver call (one round trip unless
said otherwise), so a probe can time it with nothing else inside the timer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """Who served us: read with an untimed query after logon."""

    sid: int | None
    serial: int | None
    instance: str | None
    service: str | None
    server_type: str | None
    instance_number: int | None = None


class Session(Protocol):
    async def ping(self) -> None:
        """The cheapest round trip (Oracle: OCIPing; PostgreSQL: an empty query)."""

    async def query(self) -> None:
        """``select 1 from dual`` (PostgreSQL ``select 1``): execute and fetch."""

    async def info(self) -> SessionInfo:
        """Session identity; one untimed round trip."""

    async def insert(self, table: str, probe_id: str) -> None:
        """Insert one row into the commit probe's scratch table (no commit)."""

    async def commit(self) -> None: ...

    async def purge(self, table: str, probe_id: str, keep_seconds: int) -> None:
        """Delete this probe's rows older than ``keep_seconds`` and commit."""

    async def close(self) -> None:
        """Log off and close the network connection."""

    @property
    def round_trips(self) -> int | None:
        """Round trips made on this session so far (``None`` if the driver cannot tell)."""


class RoundTripLog:
    """Counts round trips and stamps when each one started (python-oracledb thin).

    Passed as ``round_trip_callback``: python-oracledb calls it with the round
    trip's name just before sending the request. It returns no completion
    callable, so the cost per round trip is one Python call and a clock read.
    """

    __slots__ = ("events", "tls")

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        # perf_counter_ns() at the start of each TLS handshake (tcps; see drivers/oracle.py)
        self.tls: list[int] = []

    def __call__(self, name: str) -> None:
        self.events.append((name, time.perf_counter_ns()))

    @property
    def count(self) -> int:
        return len(self.events)


# python-oracledb thin's round-trip names (``Message.name``, passed to
# ``round_trip_callback``), and the TLS handshakes drivers/oracle.py stamps, -> connwatch's
# logon phase names (app.samples.LOGON_PHASE_ORDER). ``authorization`` is numbered by the
# authentication phase it carries: see :func:`round_trip_labels`.
_PHASE_NAMES = {
    "connect": "connect",
    "protocol": "protocol",
    "data_types": "data_types",
    "fast_authorization": "fast_auth",
    "network_services": "network_services",
    "tls_handshake": "tls_handshake",
}


def round_trip_labels(names: list[str]) -> list[str]:
    """connwatch's phase name for each logon event, given the driver's names in order.

    ``authorization`` round trips are numbered by the authentication phase they carry:
    in the 19c flow the first is phase one (``auth1``), the second phase two
    (``auth2``); after a 23ai ``fast_authorization`` (which carries phase one with
    the protocol and data-types negotiation) the next ``authorization`` is phase two
    (``auth2``), so a wrong password fails at ``auth2`` whatever the server version.
    A repeated label (a RESEND, the CONNECT sent again after a listener REDIRECT) gets
    ``_2``, ``_3``. Names the table does not know pass through unchanged.
    """
    labels: list[str] = []
    seen: dict[str, int] = {}
    auth = 0
    for name in names:
        if name == "fast_authorization":
            auth = max(auth, 1)
        if name == "authorization":
            auth += 1
            label = f"auth{auth}"
        else:
            label = _PHASE_NAMES.get(name, name)
        n = seen.get(label, 0) + 1
        seen[label] = n
        labels.append(label if n == 1 else f"{label}_{n}")
    return labels


def logon_phases(
    start_ns: int, end_ns: int, events: list[tuple[str, int]], tls: list[int] | None = None
) -> dict[str, int]:
    """Split one logon into contiguous phases that add up to ``end_ns - start_ns``.

    ``tcp_connect`` runs from the connect call until the first Oracle Net request
    (address resolution and the TCP handshake). For tcps, ``tls_handshake`` runs from
    the start of the TLS handshake (``tls``: when the driver wrapped the new TCP
    connection) until the first Oracle Net request (the handshake, the certificate and
    DN checks). Each round trip then runs from its request until the next request starts
    (the last one until connect returned), so it includes the client work that follows
    its reply (the password-key derivation after ``auth1``, the session set-up after
    ``auth2``). Round trips are named by :func:`round_trip_labels` (the names and both
    flows: docs/probes.md, "Logon phases"; :data:`app.samples.LOGON_PHASE_ORDER`).
    """
    phases: dict[str, int] = {}
    if tls:
        events = sorted([*events, *(("tls_handshake", t) for t in tls)], key=lambda e: e[1])
    if not events:
        phases["tcp_connect"] = end_ns - start_ns
        return phases
    phases["tcp_connect"] = events[0][1] - start_ns
    labels = round_trip_labels([name for name, _ in events])
    for i, (label, (_, at)) in enumerate(zip(labels, events, strict=True)):
        nxt = events[i + 1][1] if i + 1 < len(events) else end_ns
        phases[label] = nxt - at
    return phases
    phases["tcp_connect"] = events[0][1] - start_ns
    auth = 0
    for i, (name, at) in enumerate(events):
        nxt = events[i + 1][1] if i + 1 < len(events) else end_ns
        if name == "authorization":
            auth += 1
            label = f"auth{auth}"
        else:
            label = _PHASE_NAMES.get(name, name)
        base, n = label, 1
        while label in phases:
            n += 1
            label = f"{base}_{n}"
        phases[label] = nxt - at
    return phases
