"""Good and total runs per series over a window, and what an SLO makes of them.

Counts add up, so they are read per series and summed per group (a mode, a target, an
SLO in total) in Python. Where they come from:

- windows up to 30 minutes: raw samples (exact);
- up to 2 days: 1-minute rollups (the minute still being written, and any minute not
  rolled up yet, ~10 s behind, is missing: a 1-hour window reads 59-60 minutes);
- beyond: 1-hour rollups.

A run counts when it ran (``skipped`` does not: the monitor could not start it) and did
not fail for a probe-side reason (:data:`NOT_THE_DATABASE`). It is good when it succeeded
and, with a latency threshold, its phase took at most ``threshold_ms``; a successful run
that did not time that phase (a kept session that did not log on) is not counted. From
rollups the threshold is applied per histogram bucket: a bucket counts as good when its
upper edge is at most the threshold, so a run up to 4 % under the threshold may count as
bad (never the other way round).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import ErrorClass
from app.slo.definitions import SloSpec
from app.store.layout import ORIGIN_SQL, check_phase, no_jit

# Failures caused by the monitor itself, not the database: the probe-side error class
# (app.samples.ErrorClass.PROBE, codes PROBE-<what>). Never against availability, an
# SLO or an alert rule (app.alerts.engine.data and .backtest exclude these classes too).
NOT_THE_DATABASE: tuple[str, ...] = (ErrorClass.PROBE.value,)
RAW_UP_TO = timedelta(minutes=30)
MINUTES_UP_TO = timedelta(days=2)
# The SRE workbook's multi-window, multi-burn-rate alerts (for a 30-day SLO).
BURN_WINDOWS: tuple[tuple[str, timedelta, timedelta, float], ...] = (
    ("page", timedelta(hours=1), timedelta(minutes=5), 14.4),
    ("page", timedelta(hours=6), timedelta(minutes=30), 6.0),
    ("ticket", timedelta(days=3), timedelta(hours=6), 1.0),
)


@dataclass(frozen=True, slots=True)
class Counts:
    total: int = 0  # runs that count
    good: int = 0

    @property
    def bad(self) -> int:
        return self.total - self.good

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.total + other.total, self.good + other.good)

    def ratio(self) -> float | None:
        """Good / total, None when nothing counted."""
        return self.good / self.total if self.total else None


def _bucket_at_most(threshold_ms: float) -> int:
    """The highest histogram bucket index whose upper edge (1.04^i ns) <= the threshold."""
    return math.floor(math.log(max(threshold_ms * 1e6, 1.0)) / math.log(1.04) + 1e-9)


def series_counts(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    *,
    phase: str = "logon",
    threshold_ms: float | None = None,
) -> dict[int, Counts]:
    """series id -> Counts over ``[start, end)`` (series without runs: absent)."""
    check_phase(phase)
    if start.tzinfo is None or end.tzinfo is None or end <= start:
        raise ValueError("start and end must be timezone-aware with start < end")
    if not series_ids:
        return {}
    no_jit(conn)
    params = {
        "ids": list(series_ids),
        "a": start,
        "b": end,
        "thr": None if threshold_ms is None else int(threshold_ms * 1e6),
        "excl": list(NOT_THE_DATABASE),
    }
    if end - start <= RAW_UP_TO:
        timed = f"(status = 'ok' and {phase}_ns is null)" if threshold_ms is not None else "false"
        sql = (
            "select series_id, (count(*) filter (where status <> 'skipped' "
            "and coalesce(error_class, '') <> all(cast(:excl as text[])) "
            f"and not {timed}))::bigint, "
            "(count(*) filter (where status = 'ok' and "
            f"(cast(:thr as bigint) is null or {phase}_ns <= :thr)))::bigint "
            "from connwatch_sample_timings(cast(:ids as integer[]), :a, :b) group by 1"
        )
    else:
        table = "rollup_1m" if end - start <= MINUTES_UP_TO else "rollup_1h"
        width = "1 minute" if table == "rollup_1m" else "1 hour"
        excluded = (
            "coalesce((select sum(value::bigint) from jsonb_each_text(err_class) "
            "where key = any(cast(:excl as text[]))), 0)"
        )
        if threshold_ms is None:
            untimed, good = "0", "n_ok"
        else:
            params["imax"] = _bucket_at_most(threshold_ms)
            untimed = f"(n_ok - coalesce({phase}_n, 0))"
            good = (
                f"coalesce((select sum(c) from unnest({phase}_hi, {phase}_hc) u(i, c) "
                "where i <= :imax), 0)"
            )
        sql = (
            f"select series_id, sum(n - n_skipped - {excluded} - {untimed})::bigint, "
            f"sum({good})::bigint from {table} where series_id = any(:ids) "
            f"and bucket >= date_bin('{width}', cast(:a as timestamptz), {ORIGIN_SQL}) "
            "and bucket < :b group by 1"
        )
    rows = conn.execute(text(sql), params).all()
    return {int(r[0]): Counts(int(r[1] or 0), int(r[2] or 0)) for r in rows}


def group_counts(
    per_series: Mapping[int, Counts], groups: Mapping[Hashable, Iterable[int]]
) -> dict[Hashable, Counts]:
    out: dict[Hashable, Counts] = {}
    for key, ids in groups.items():
        total = Counts()
        for sid in ids:
            total = total + per_series.get(sid, Counts())
        out[key] = total
    return out


def burn_rate(counts: Counts, objective_pct: float) -> float | None:
    """How fast the error budget burns: 1.0 spends exactly the budget over the window."""
    ratio = counts.ratio()
    if ratio is None:
        return None
    return (1.0 - ratio) / (1.0 - objective_pct / 100.0)


@dataclass(frozen=True, slots=True)
class SloStatus:
    """One SLO over its window for one group of series (a mode, or all of them)."""

    counts: Counts
    objective: float  # percent
    attainment: float | None  # percent good, None when nothing counted
    budget_total: float  # bad runs the window may have: total x (1 - objective)
    budget_remaining_pct: float | None  # 100 = untouched, 0 = spent, negative = overspent
    met: bool | None

    @classmethod
    def of(cls, counts: Counts, objective: float) -> SloStatus:
        ratio = counts.ratio()
        budget = counts.total * (1.0 - objective / 100.0)
        if ratio is None:
            return cls(counts, objective, None, 0.0, None, None)
        remaining = 100.0 * (1.0 - counts.bad / budget) if budget > 0 else None
        attainment = 100.0 * ratio
        return cls(counts, objective, attainment, budget, remaining, attainment >= objective)


def slo_status(
    conn: Connection,
    spec: SloSpec,
    groups: Mapping[Hashable, Sequence[int]],
    end: datetime,
    *,
    window: timedelta | None = None,
) -> dict[Hashable, SloStatus]:
    """SLO status per group over ``window`` (default the SLO's own) ending at ``end``."""
    span = window or timedelta(days=spec.window_days)
    ids = sorted({sid for g in groups.values() for sid in g})
    per = series_counts(
        conn, ids, end - span, end, phase=spec.phase, threshold_ms=spec.threshold_ms
    )
    return {k: SloStatus.of(c, spec.objective) for k, c in group_counts(per, groups).items()}


def burn_rates(
    conn: Connection,
    spec: SloSpec,
    groups: Mapping[Hashable, Sequence[int]],
    end: datetime,
    windows: Iterable[timedelta],
) -> dict[timedelta, dict[Hashable, float | None]]:
    """Burn rate per window and group (each window read once for every group)."""
    ids = sorted({sid for g in groups.values() for sid in g})
    out: dict[timedelta, dict[Hashable, float | None]] = {}
    for w in sorted(set(windows)):
        per = series_counts(
            conn, ids, end - w, end, phase=spec.phase, threshold_ms=spec.threshold_ms
        )
        out[w] = {k: burn_rate(c, spec.objective) for k, c in group_counts(per, groups).items()}
    return out
