"""Faults switchable at run time, each scoped to a service, mode or user, for the next N
occurrences or a time window.

Kinds:
- ``refuse``: at ``accept`` the listener sends REFUSE (ERR=code); at any later phase the
  server answers with an ORA error ``code`` (e.g. 1017, 28000, 1034).
- ``drop``: close the TCP connection when the phase's request arrives.
- ``hang``: never answer the phase (the connection stays open, breaks are ignored).
- ``slow``: add ``delay_ms`` to the phase.
- ``kill``: answer the phase with a CONTROL packet carrying ``code`` (default 2396); the
  client marks the connection dead.
- ``resend`` (phase ``accept`` only): answer CONNECT with RESEND; the client sends it again.

State faults (no phase; scoped to an ``instance`` by name, or every instance without one)
change what an instance is, and its V$ views say so (:mod:`app.oraclesim.database.pressure`):

- ``pool_exhausted``: other clients hold every DRCP pooled server. A pooled logon (or a
  re-attach after a release) waits ``delay_ms`` (default 200) before it gets a server,
  counted in NUM_WAITS; NUM_BUSY_SERVERS shows the pool full.
- ``dispatchers_saturated``: the shared-server dispatchers are busy with other traffic:
  BUSY grows at wall-clock rate (busy share 100 %) and every message relayed waits
  ``delay_ms`` (default 20) in the dispatcher queue (V$QUEUE DISPATCHER WAIT, TOTALQ).
- ``processes_limit``: the PROCESSES limit is reached (V$RESOURCE_LIMIT shows it). What
  needs a new server process fails: dedicated connects are refused with ``code`` (default
  12516; 12520 also fits; 20 lets the connect through and fails the logon with
  ORA-00020), pooled logons wait for a pooled server to free up (the broker cannot start
  one); shared connects carry on with the servers that exist.
- ``instance_down``: the instance is gone: its sessions end (end-of-file on their next
  call), the listener stops handing it connections (a connect pinned to it with
  INSTANCE_NAME is refused, TNS-12521). When the fault ends the instance starts again:
  new startup time, its counters from zero.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from app.oraclesim.config import MODES, PHASES

PHASE_KINDS = ("refuse", "drop", "hang", "slow", "kill", "resend")
STATE_KINDS = ("pool_exhausted", "dispatchers_saturated", "processes_limit", "instance_down")
KINDS = PHASE_KINDS + STATE_KINDS
STATE_DELAY_MS = {"pool_exhausted": 200.0, "dispatchers_saturated": 20.0}


class FaultError(ValueError):
    """A fault definition that cannot work."""


@dataclass(slots=True)
class Fault:
    id: int
    kind: str
    phase: str
    service: str | None = None
    mode: str | None = None
    user: str | None = None
    code: int = 0
    delay_ms: float = 0.0
    count: int | None = None  # remaining firings; None = unlimited
    until: float | None = None  # time.monotonic() deadline; None = no window
    fired: int = 0
    instance: str | None = None  # state faults: the instance name (None: every instance)
    started_ns: int = 0  # perf_counter_ns() when added
    window_ns: int | None = None  # duration_s in ns
    ended_ns: int | None = None  # when it expired, ran out or was removed

    @property
    def is_state(self) -> bool:
        return self.kind in STATE_KINDS

    def on_instance(self, name: str) -> bool:
        return self.instance is None or self.instance == name.upper()

    def matches(self, phase: str, service: str | None, mode: str | None, user: str | None) -> bool:
        if self.phase != phase:
            return False
        if self.service is not None and (service or "").upper() != self.service:
            return False
        if self.mode is not None and mode != self.mode:
            return False
        return self.user is None or (user or "").upper() == self.user

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["remaining_s"] = None if self.until is None else max(0.0, self.until - time.monotonic())
        for key in ("until", "started_ns", "window_ns", "ended_ns"):
            d.pop(key)
        return d


class FaultSet:
    """Thread-safe: tests may add faults from any thread while the simulator runs."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._ended: deque[Fault] = deque(maxlen=1000)  # state faults, for their time windows
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def add(
        self,
        kind: str,
        phase: str | None = None,
        *,
        service: str | None = None,
        mode: str | None = None,
        user: str | None = None,
        code: int | None = None,
        delay_ms: float = 0.0,
        count: int | None = None,
        duration_s: float | None = None,
        instance: str | None = None,
    ) -> Fault:
        for name, val, types in (
            ("instance", instance, str),
            ("service", service, str),
            ("mode", mode, str),
            ("user", user, str),
            ("phase", phase, str),
            ("code", code, int),
            ("count", count, int),
            ("delay_ms", delay_ms, (int, float)),
            ("duration_s", duration_s, (int, float)),
        ):
            if val is not None and (isinstance(val, bool) or not isinstance(val, types)):
                raise FaultError(f"{name}: wrong type {type(val).__name__}")
        if kind not in KINDS:
            raise FaultError(f"kind: unknown fault kind {kind!r} (known: {KINDS})")
        if kind in STATE_KINDS:
            if phase:
                raise FaultError(f"phase: a {kind} fault has no phase")
            if kind in STATE_DELAY_MS and not delay_ms:
                delay_ms = STATE_DELAY_MS[kind]
            if kind == "processes_limit" and not code:
                code = 12516
            if kind == "processes_limit" and code not in (20, 12516, 12519, 12520):
                raise FaultError("code: processes_limit answers 20, 12516, 12519 or 12520")
        phase = phase or ("accept" if kind in ("refuse", "resend") else "")
        if kind not in STATE_KINDS and phase not in PHASES:
            raise FaultError(f"phase: unknown phase {phase!r} (known: {PHASES})")
        if mode is not None and mode not in MODES:
            raise FaultError(f"mode: unknown mode {mode!r} (known: {MODES})")
        if kind == "refuse" and not code:
            code = 12520 if phase == "accept" else 1017
        if kind == "kill" and not code:
            code = 2396
        if kind == "slow" and delay_ms <= 0:
            raise FaultError("delay_ms: a slow fault needs delay_ms > 0")
        if count is not None and count < 1:
            raise FaultError("count: must be at least 1")
        if duration_s is not None and duration_s <= 0:
            raise FaultError("duration_s: must be > 0")
        until = None if duration_s is None else time.monotonic() + duration_s
        fault = Fault(
            next(self._ids),
            kind,
            phase,
            service.upper() if service else None,
            mode,
            user.upper() if user else None,
            code or 0,
            float(delay_ms),
            count,
            until,
            instance=instance.upper() if instance else None,
            started_ns=time.perf_counter_ns(),
            window_ns=None if duration_s is None else int(duration_s * 1e9),
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def any(self) -> bool:
        return bool(self._faults)

    def remove(self, fault_id: int) -> bool:
        with self._lock:
            gone = [f for f in self._faults if f.id == fault_id]
            self._end(gone, time.perf_counter_ns())
            self._faults = [f for f in self._faults if f.id != fault_id]
            return bool(gone)

    def clear(self) -> None:
        with self._lock:
            self._end(self._faults, time.perf_counter_ns())
            self._faults.clear()

    def _end(self, faults: list[Fault], now_ns: int) -> None:
        for f in faults:
            if f.is_state and f.ended_ns is None:
                f.ended_ns = now_ns
                self._ended.append(f)

    def active(self) -> list[Fault]:
        with self._lock:
            self._expire()
            return list(self._faults)

    def _expire(self) -> None:
        now = time.monotonic()
        keep: list[Fault] = []
        for f in self._faults:
            if f.until is not None and f.until <= now:
                self._end([f], f.started_ns + (f.window_ns or 0))
            elif f.count is not None and f.count <= 0:
                self._end([f], time.perf_counter_ns())
            else:
                keep.append(f)
        self._faults = keep

    def take(
        self, phase: str, service: str | None, mode: str | None, user: str | None
    ) -> list[Fault]:
        """Faults that fire now (their counts are consumed)."""
        if not self._faults:
            return []
        with self._lock:
            self._expire()
            hits = [
                f for f in self._faults if not f.is_state and f.matches(phase, service, mode, user)
            ]
            for f in hits:
                f.fired += 1
                if f.count is not None:
                    f.count -= 1
            return hits

    def state(self, kind: str, instance: str, consume: bool = False) -> Fault | None:
        """The active state fault ``kind`` on ``instance`` (its count consumed if asked)."""
        if not self._faults:
            return None
        with self._lock:
            self._expire()
            for f in self._faults:
                if f.kind == kind and f.on_instance(instance):
                    if consume:
                        f.fired += 1
                        if f.count is not None:
                            f.count -= 1
                    return f
            return None

    def windows(self, kind: str, instance: str) -> list[tuple[int, int | None]]:
        """(started_ns, ended_ns or None while active) of every ``kind`` fault on
        ``instance``, ended ones included (the latest 1000)."""
        with self._lock:
            self._expire()
            return [
                (f.started_ns, f.ended_ns)
                for f in (*self._ended, *self._faults)
                if f.kind == kind and f.on_instance(instance)
            ]
