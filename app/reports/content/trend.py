"""The 12-week trend per mode: availability and logon (and ping) p95 of each whole week.

From the store's weekly rollups (``weekly(probe=...)``: one row per mode and week,
true weekly percentiles within 1.96 %; a mode with several sites is merged). Weeks
without samples are absent, never interpolated. The trend ends with the report's
week (a month: the week its end falls in), the current week so far included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.engine import Connection

from app.reports.content.period import WEEK, Period, monday
from app.reports.content.scope import Scope
from app.store.read.weekly import weekly

WEEKS = 12


@dataclass(slots=True)
class TrendPoint:
    week: datetime  # Monday 00:00 UTC
    availability: float | None  # percent
    logon_p95_ms: float | None
    ping_p95_ms: float | None = None


@dataclass(slots=True)
class ModeTrend:
    mode_id: int
    points: list[TrendPoint] = field(default_factory=list)  # oldest first

    def p95s_before(self, week: datetime, phase: str = "logon") -> list[float | None]:
        """The p95s of the whole weeks before ``week``, oldest first (for the noise test)."""
        attr = "logon_p95_ms" if phase == "logon" else "ping_p95_ms"
        return [getattr(p, attr) for p in self.points if p.week < week]


def trend_weeks(period: Period) -> tuple[datetime, datetime]:
    """``[first Monday, end)`` of the trend: the 12 weeks ending with the period's last."""
    last = monday((period.end - timedelta(microseconds=1)).date())
    return last - (WEEKS - 1) * WEEK, last + WEEK


def read_trend(conn: Connection, scope: Scope, period: Period) -> dict[int, ModeTrend]:
    """Per mode id: its weekly points over the trend's weeks plus the one before them."""
    start, end = trend_weeks(period)
    out = {m.mode_id: ModeTrend(m.mode_id) for m in scope.modes}
    for probe in sorted({m.probe for m in scope.modes}):
        tids = sorted({m.target_id for m in scope.modes if m.probe == probe})
        mine = {m.mode_id for m in scope.modes if m.probe == probe}
        logon = weekly(conn, start - WEEK, end, phase="logon", target_ids=tids, probe=probe)
        ping = weekly(conn, start - WEEK, end, phase="ping", target_ids=tids, probe=probe)
        ping_p95 = {(r.mode_id, r.week): r.p95_ms for r in ping}
        for r in logon:
            if r.mode_id in mine:
                out[r.mode_id].points.append(
                    TrendPoint(r.week, r.availability, r.p95_ms, ping_p95.get((r.mode_id, r.week)))
                )
    return out
