"""SLOs in the report: attainment this period and this month, error budget left, burn.

Definitions and arithmetic are ``app.slo``'s (the same numbers the burn-rate alerts use):
each SLO is measured per target x mode of the report's scope that it selects, and in
total. Attainment = good runs / runs that count (skipped and monitor-caused failures
never count); the error budget is the SLO's own window (e.g. 30 days) ending with the
period; burn = (1 - attainment) / (1 - objective) over the period: 1.0 spends exactly
the budget, above 1 the budget runs out before the window ends.
"""

from __future__ import annotations

from collections.abc import Hashable
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection

from app.reports.content.period import Period
from app.reports.content.scope import Scope
from app.slo.compute import SloStatus, burn_rate, slo_status
from app.slo.definitions import list_slos
from app.targets.selector import catalog

TOTAL = ("", "")


class SloRow(BaseModel):
    slo: str
    meaning: str = Field(description="the SLO in words")
    target: str = Field(description="empty for the SLO over all its series")
    mode: str
    objective: float
    attainment_period: float | None = Field(description="percent good runs in the period")
    attainment_month: float | None = Field(description="percent good runs, month to date")
    bad_period: int
    total_period: int
    budget_left_pct: float | None = Field(
        description="error budget left over the SLO's window ending with the period "
        "(100 untouched, 0 spent, negative overspent)"
    )
    window_days: int
    burn_period: float | None = Field(description="burn rate over the period")
    met_period: bool | None


def month_start(t: datetime) -> datetime:
    t = t - timedelta(microseconds=1)
    return t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def read_objectives(conn: Connection, scope: Scope, period: Period) -> list[SloRow]:
    slos = list_slos(conn)
    if not slos or not scope.modes:
        return []
    mine = set(scope.series_ids)
    series = [s for s in catalog(conn, include_disabled=True) if s.series_id in mine]
    out: list[SloRow] = []
    end = period.end
    for slo in slos:
        spec = slo.spec
        chosen = spec.selector.select(series)
        if not chosen:
            continue
        groups: dict[Hashable, list[int]] = {TOTAL: [s.series_id for s in chosen]}
        for s in chosen:
            groups.setdefault((s.target, s.mode), []).append(s.series_id)
        week = slo_status(conn, spec, groups, end, window=end - period.start)
        month = slo_status(conn, spec, groups, end, window=end - month_start(end))
        budget = slo_status(conn, spec, groups, end)
        for key in sorted(groups, key=lambda k: (k != TOTAL, k)):
            w: SloStatus = week[key]
            if w.counts.total == 0 and key != TOTAL:
                continue
            target, mode = str(key[0]), str(key[1])  # type: ignore[index]
            out.append(
                SloRow(
                    slo=spec.name, meaning=spec.describe(), target=target, mode=mode,
                    objective=spec.objective, attainment_period=w.attainment,
                    attainment_month=month[key].attainment, bad_period=w.counts.bad,
                    total_period=w.counts.total,
                    budget_left_pct=budget[key].budget_remaining_pct,
                    window_days=spec.window_days,
                    burn_period=burn_rate(w.counts, spec.objective), met_period=w.met,
                )
            )  # fmt: skip
    return out
