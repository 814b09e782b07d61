"""Maintenance windows that pause probing: which series skip which instants, and why.

A recurring maintenance window (:mod:`app.alerts.mute.maintenance`) with ``pause_probes``
asks the agents not to probe its series while it is open: planned work (a restart, a
patch) would otherwise read as an outage, and the probes' logons would hit a database
that is being worked on. Each worker keeps a :class:`PauseBook` of the series it runs:
the spans of such windows from now to ``HORIZON_S`` ahead, computed in the coordination
thread (:meth:`PauseBook.refresh`, called every tick) when the windows changed (one
cheap fingerprint query per tick), when the worker's series changed, and at least every
``REFRESH_S``. The scheduler asks :meth:`PauseBook.at` for each instant, so a window
opens and closes at its exact instant, not at the next tick.

An instant inside a span is recorded as a SKIPPED sample with code ``PAUSED`` naming
the window and when it ends: exactly one sample per instant as always, shown as planned
on the series' charts, never as a failure. The session a probe keeps across runs is
closed when its pause begins, so the first run after the window logs on afresh instead
of failing on a session the maintenance killed.

While the store is unreachable the book keeps what it had: windows already known still
pause on time for ``HORIZON_S - REFRESH_S`` at least; a window created meanwhile is seen
when the store is back.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.alerts.mute.maintenance import list_windows
from app.targets.selector import catalog

log = logging.getLogger(__name__)

HORIZON_S = 900.0  # spans are computed this far ahead
REFRESH_S = 300.0  # and recomputed at least this often (< HORIZON_S)

_FINGERPRINT = text(
    "select count(*) || '/' || coalesce(sum(id), 0) || '/' || coalesce(max(updated_at)::text, '') "
    "from maintenance_windows where pause_probes"
)


@dataclass(frozen=True, slots=True)
class Pause:
    """One occurrence of a pausing window for one series: ``[start, end)``, aware UTC."""

    window: str
    start: datetime
    end: datetime

    def message(self) -> str:
        return (
            f"probing paused by maintenance window {self.window!r} until "
            f"{self.end.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC (planned, not an outage)"
        )


class PauseBook:
    """Pause spans by series id. Written by the coordination thread (a whole new dict at
    once), read by the event loop."""

    def __init__(self) -> None:
        self.spans: dict[int, tuple[Pause, ...]] = {}
        self._fingerprint: str | None = None
        self._series: frozenset[int] = frozenset()
        self._next = 0.0  # monotonic time of the next forced refresh

    def at(self, series_id: int, instant: datetime) -> Pause | None:
        """The pause covering ``instant`` of that series, if any."""
        for p in self.spans.get(series_id, ()):
            if p.start <= instant < p.end:
                return p
        return None

    def refresh(self, conn: Connection, series_ids: set[int]) -> bool:
        """Recompute the spans if anything they depend on changed; True if recomputed."""
        fp = str(conn.execute(_FINGERPRINT).scalar_one())
        ids = frozenset(series_ids)
        if fp == self._fingerprint and ids == self._series and time.monotonic() < self._next:
            return False
        self.spans = compute_spans(conn, ids, datetime.now(UTC), HORIZON_S)
        self._fingerprint, self._series = fp, ids
        self._next = time.monotonic() + REFRESH_S
        return True


def compute_spans(
    conn: Connection, series_ids: frozenset[int], now: datetime, horizon_s: float
) -> dict[int, tuple[Pause, ...]]:
    """Occurrences of enabled ``pause_probes`` windows overlapping ``[now, now +
    horizon_s]``, for each of ``series_ids`` their selector matches."""
    windows = [w for w in list_windows(conn, enabled_only=True) if w.spec.pause_probes]
    if not windows or not series_ids:
        return {}
    refs = [r for r in catalog(conn) if r.series_id in series_ids]
    out: dict[int, list[Pause]] = {}
    until = now + timedelta(seconds=horizon_s)
    for w in windows:
        occurrences = [
            Pause(w.spec.name, s.astimezone(UTC), e.astimezone(UTC))
            for s, e in w.spec.spans(now, until)
        ]
        if not occurrences:
            continue
        for ref in w.spec.selector.select(refs):
            out.setdefault(ref.series_id, []).extend(occurrences)
    return {sid: tuple(sorted(ps, key=lambda p: p.start)) for sid, ps in out.items()}
