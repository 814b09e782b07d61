"""Backtest: what a rule would have done over the last days, before it is saved.

"Over the last 7 days this rule would have fired 3 times, for a total of 42 minutes."
The rule's condition is replayed minute by minute (the evaluator itself runs every 15 s,
so ``pending`` and ``clear_for`` are honoured to the minute) through the same state
machine the evaluator uses (:func:`app.alerts.engine.states.step`), from:

- ``latency``: the 1-minute rollup histograms, merged over each minute's trailing
  ``window`` (percentiles within 1.96 %);
- ``availability`` with ``error_rate_pct``: the 1-minute rollups' run and error-code
  counts over the trailing window; with ``m`` of ``n``: every run, in order (raw samples);
- ``nodata``: the gaps between consecutive samples (raw samples).

Other kinds (baseline, SLO burn, mode comparison, agent) are not backtested (the result
says so). At most ``max_units`` instances are replayed (the first ones by name).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.alerts.engine.observe import Obs, Unit, units_of
from app.alerts.engine.states import Instance, step
from app.alerts.rules import RuleSpec
from app.slo.compute import NOT_THE_DATABASE
from app.store.histogram.buckets import bucket_value
from app.store.layout import ORIGIN_SQL, no_jit
from app.targets.selector import catalog

SUPPORTED = ("latency", "availability", "nodata")


@dataclass(slots=True)
class Episode:
    labels: dict[str, str]
    start: datetime
    end: datetime | None  # None: still firing at the end of the replay

    def minutes(self, until: datetime) -> float:
        return ((self.end or until) - self.start).total_seconds() / 60


@dataclass(slots=True)
class BacktestResult:
    start: datetime
    end: datetime
    supported: bool
    instances: int = 0
    replayed: int = 0
    episodes: list[Episode] = field(default_factory=list)
    note: str = ""

    @property
    def fired(self) -> int:
        return len(self.episodes)

    @property
    def firing_minutes(self) -> float:
        return round(sum(e.minutes(self.end) for e in self.episodes), 1)

    def sentence(self) -> str:
        days = round((self.end - self.start).total_seconds() / 86400)
        if not self.supported:
            return self.note
        if self.instances == 0:
            return "This rule matches no series."
        what = (
            "would not have fired"
            if not self.episodes
            else f"would have fired {self.fired} time{'s' if self.fired != 1 else ''}, "
            f"for a total of {self.firing_minutes:g} minutes"
        )
        extra = (
            f" (first {self.replayed} of {self.instances} instances)"
            if (self.replayed < self.instances)
            else ""
        )
        return f"Over the last {days} days this rule {what}{extra}."


def backtest(
    conn: Connection,
    spec: RuleSpec,
    now: datetime,
    *,
    days: int = 7,
    max_units: int = 50,
) -> BacktestResult:
    start = (now - timedelta(days=days)).replace(second=0, microsecond=0)
    end = now.replace(second=0, microsecond=0)
    res = BacktestResult(start, end, spec.kind in SUPPORTED)
    if not res.supported:
        res.note = f"{spec.kind} rules cannot be backtested yet; {SUPPORTED} can."
        return res
    if spec.round_trip:  # rollups keep no round trips: replaying raw days is not built
        res.supported = False
        res.note = (
            f"A rule on one logon round trip ({spec.phase}) cannot be backtested yet: "
            "round trips are kept on raw samples only"
        )
        return res
    no_jit(conn)
    units = sorted(units_of(spec, spec.selector.select(catalog(conn))), key=lambda u: u.key)
    res.instances, res.replayed = len(units), min(len(units), max_units)
    minutes = [
        start + timedelta(minutes=i + 1) for i in range(int((end - start).total_seconds() // 60))
    ]
    for u in units[:max_units]:
        if spec.kind == "latency":
            values = _latency_minutes(conn, spec, u, start, end)
            obs = [
                _threshold_obs(u, v, spec.threshold_ms or 0, spec.clear_threshold_ms or 0)
                for v in values
            ]
        elif spec.kind == "availability" and spec.m is None:
            rates = _rate_minutes(conn, spec, u, start, end)
            thr = spec.error_rate_pct or 0
            clear = spec.clear_rate_pct if spec.clear_rate_pct is not None else thr
            obs = [_rate_obs(u, r, thr, clear) for r in rates]
        else:
            fires = _run_minutes(conn, spec, u, start, end)
            obs = [
                Obs(u, fire=f, clear=not f) if f is not None else Obs(u, nodata=True) for f in fires
            ]
        res.episodes.extend(_replay(spec, u, obs, minutes))
    return res


def _threshold_obs(u: Unit, v: float, thr: float, clear: float) -> Obs:
    if np.isnan(v):
        return Obs(u, nodata=True)
    return Obs(u, value=v, fire=v > thr, clear=v < clear)


def _rate_obs(u: Unit, r: float, thr: float, clear: float) -> Obs:
    if np.isnan(r):
        return Obs(u, nodata=True)
    return Obs(u, value=r, fire=r >= thr, clear=r < clear)


def _replay(spec: RuleSpec, u: Unit, obs: list[Obs], minutes: list[datetime]) -> list[Episode]:
    pending = timedelta(milliseconds=spec.pending)
    clear_for = timedelta(milliseconds=spec.clear_for)
    inst: Instance | None = None
    out: list[Episode] = []
    for at, o in zip(minutes, obs, strict=False):
        inst, change = step(inst, o, at, pending=pending, clear_for=clear_for)
        if change and change[1] == "firing":
            out.append(Episode(dict(u.labels), at, None))
        elif change and change[0] == "firing" and out:
            out[-1].end = at
    return out


def _minute_index(start: datetime, end: datetime) -> int:
    return int((end - start).total_seconds() // 60)


def _latency_minutes(
    conn: Connection, spec: RuleSpec, u: Unit, start: datetime, end: datetime
) -> list[float]:
    """Per minute: the percentile over the trailing window (NaN without enough samples)."""
    w = max(1, spec.window // 60_000)
    a = start - timedelta(minutes=w)
    rows = conn.execute(
        text(
            "select ((extract(epoch from r.bucket - :a)) / 60)::int, u.i, sum(u.c)::bigint "
            "from rollup_1m r cross join lateral "
            f"unnest(r.{spec.phase}_hi, r.{spec.phase}_hc) u(i, c) "
            "where r.series_id = any(:ids) "
            f"and r.bucket >= date_bin('1 minute', cast(:a as timestamptz), {ORIGIN_SQL}) "
            "and r.bucket < :b group by 1, 2"
        ),
        {"ids": [s.series_id for s in u.series], "a": a, "b": end},
    ).all()
    n = _minute_index(start, end)
    if not rows:
        return [float("nan")] * n
    lo = min(r[1] for r in rows)
    hi = max(r[1] for r in rows)
    dense = np.zeros((n + w, hi - lo + 1), dtype=np.int64)
    for m, i, c in rows:
        if 0 <= m < n + w:
            dense[m, i - lo] += c
    csum = np.cumsum(dense, axis=0)
    rolled = csum[w : w + n] - csum[:n]  # minute k: rows k+1 .. k+w, the trailing window
    total = rolled.sum(axis=1)
    cum = np.cumsum(rolled, axis=1)
    rank = np.maximum(1, np.ceil(spec.quantile * total))
    pos = (cum < rank[:, None]).sum(axis=1)
    values = np.asarray(bucket_value(pos + lo), dtype=np.float64) / 1e6
    values[total < spec.min_samples] = np.nan
    return [float(v) for v in values[:n]]


def _rate_minutes(
    conn: Connection, spec: RuleSpec, u: Unit, start: datetime, end: datetime
) -> list[float]:
    w = max(1, spec.window // 60_000)
    a = start - timedelta(minutes=w)
    rows = conn.execute(
        text(
            "select ((extract(epoch from bucket - :a)) / 60)::int, n - n_skipped, err_class, "
            "err_code from rollup_1m where series_id = any(:ids) and bucket >= :a and bucket < :b"
        ),
        {"ids": [s.series_id for s in u.series], "a": a, "b": end},
    ).all()
    n = _minute_index(start, end)
    ran = np.zeros(n + w)
    bad = np.zeros(n + w)
    for m, count, classes, codes in rows:
        if not 0 <= m < n + w:
            continue
        excluded = sum(int(v) for k, v in (classes or {}).items() if k in NOT_THE_DATABASE)
        ran[m] += count - excluded
        for code, c in (codes or {}).items():
            cls = code.split("-", 1)[0]
            if cls in NOT_THE_DATABASE:
                continue
            if (
                (not spec.codes and not spec.classes)
                or cls in spec.classes
                or any(fnmatch.fnmatchcase(code, p) for p in spec.codes)
            ):
                bad[m] += int(c)
    cs_ran, cs_bad = np.cumsum(ran), np.cumsum(bad)
    r_ran = cs_ran[w : w + n] - cs_ran[:n]
    r_bad = cs_bad[w : w + n] - cs_bad[:n]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(r_ran >= spec.min_samples, 100.0 * r_bad / r_ran, np.nan)
    return [float(x) for x in rate]


def _run_minutes(
    conn: Connection, spec: RuleSpec, u: Unit, start: datetime, end: datetime
) -> list[bool | None]:
    """Per minute: does the m-of-n (or no-data) condition hold at its end? None: no runs."""
    rows = conn.execute(
        text(
            "select scheduled_at, status <> 'ok', coalesce(error_class, ''), "
            "coalesce(error_code, '') from connwatch_sample_timings(cast(:ids as int[]), :a, :b) "
            "where status <> 'skipped' and coalesce(error_class, '') <> all(cast(:excl as text[])) "
            "order by scheduled_at"
        ),
        {
            "ids": [s.series_id for s in u.series],
            "a": start - timedelta(hours=1),
            "b": end,
            "excl": list(NOT_THE_DATABASE),
        },
    ).all()
    n = _minute_index(start, end)
    out: list[bool | None] = [None] * n
    if spec.kind == "nodata":
        limit = timedelta(
            milliseconds=max(max(s.interval_ms for s in u.series) * spec.intervals, 60_000)
        )
        times = [r[0] for r in rows]
        j = 0
        last: datetime | None = None
        for k in range(n):
            at = start + timedelta(minutes=k + 1)
            while j < len(times) and times[j] <= at:
                last, j = times[j], j + 1
            out[k] = last is None or at - last > limit
        return out
    m, size = spec.m or 1, spec.n or 1
    flags = [
        bool(bad)
        and (
            (not spec.codes and not spec.classes)
            or cls in spec.classes
            or any(fnmatch.fnmatchcase(code, p) for p in spec.codes)
        )
        for _, bad, cls, code in rows
    ]
    window: list[bool] = []
    j = 0
    for k in range(n):
        at = start + timedelta(minutes=k + 1)
        while j < len(rows) and rows[j][0] <= at:
            window.append(flags[j])
            if len(window) > size:
                window.pop(0)
            j += 1
        out[k] = sum(window) >= m if window else None
    return out
