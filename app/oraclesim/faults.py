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
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

from app.oraclesim.config import MODES, PHASES

KINDS = ("refuse", "drop", "hang", "slow", "kill", "resend")


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
        d.pop("until")
        return d


class FaultSet:
    """Thread-safe: tests may add faults from any thread while the simulator runs."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
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
    ) -> Fault:
        for name, val, types in (
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
        phase = phase or ("accept" if kind in ("refuse", "resend") else "")
        if phase not in PHASES:
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
        )
        with self._lock:
            self._faults.append(fault)
        return fault

    def any(self) -> bool:
        return bool(self._faults)

    def remove(self, fault_id: int) -> bool:
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if f.id != fault_id]
            return len(self._faults) != before

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def active(self) -> list[Fault]:
        with self._lock:
            self._expire()
            return list(self._faults)

    def _expire(self) -> None:
        now = time.monotonic()
        self._faults = [
            f
            for f in self._faults
            if (f.until is None or f.until > now) and (f.count is None or f.count > 0)
        ]

    def take(
        self, phase: str, service: str | None, mode: str | None, user: str | None
    ) -> list[Fault]:
        """Faults that fire now (their counts are consumed)."""
        if not self._faults:
            return []
        with self._lock:
            self._expire()
            hits = [f for f in self._faults if f.matches(phase, service, mode, user)]
            for f in hits:
                f.fired += 1
                if f.count is not None:
                    f.count -= 1
            return hits
