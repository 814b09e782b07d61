"""The Compare page's data: the store's per-mode comparison, shaped for charts and words.

From :func:`app.store.read.compare.compare` restricted to one probe kind's series per mode
(merged log-bucket histograms, percentiles within 1.96 %, ratio of medians against
dedicated with a block-bootstrap CI) this module derives the ECDF and box statistics
of each histogram and the plain sentence. Daily p50s come from the store's series
query with one-day buckets.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection

from app.store.read.compare import ModeStats, compare
from app.store.read.timeseries import timeseries
from app.web.palette import ModeStyle, mode_style
from app.web.views.lookups import TargetInfo

MODE_WORDS = {
    "dedicated": "dedicated-server",
    "shared": "shared-server",
    "pooled": "DRCP (pooled)",
    "direct": "direct",
    "unix": "unix-socket",
    "pgbouncer_session": "pgbouncer (session pool)",
    "pgbouncer_transaction": "pgbouncer (transaction pool)",
}
BASELINE = {"oracle": "dedicated", "postgres": "direct"}
# Bootstrap resamples for the ratio's CI: 400 keeps the page within its time budget
# (docs/benchmarks.md, "Web"); the CI's ends move by well under a percentage point
# against 1000 resamples on the synthetic dataset (2.5 % tails of 10 resamples each).
N_BOOT = 400


class BoxStats(BaseModel):
    p5: float
    p25: float
    p50: float
    p75: float
    p95: float
    mean: float | None


class CompareMode(BaseModel):
    name: str
    kind: str
    color: str
    dash: str
    symbol: str
    n: int
    n_failed: int
    timed: int = Field(0, description="ok samples that timed this phase (the percentiles' base)")
    availability: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    mean: float | None
    ratio: float | None = Field(description="this mode's median / the baseline's")
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    significant: bool | None
    sentence: str | None
    box: BoxStats | None
    ecdf_x: list[float]
    ecdf_y: list[float]
    values: list[float] = Field(default_factory=list, description="unused (box is precomputed)")


class CompareOut(BaseModel):
    target: str
    phase: str
    probe: str = Field(description="the probe kind whose samples are compared")
    start: datetime
    end: datetime
    resolution: str
    baseline: str | None
    confidence: float
    block_s: float = Field(description="width of the bootstrap blocks")
    modes: list[CompareMode]

    @property
    def block_text(self) -> str:
        """The bootstrap blocks' width in words: "6-hour", "15-minute"."""
        s = self.block_s
        if s >= 3600 and s % 3600 == 0:
            return f"{s / 3600:g}-hour"
        if s >= 60:
            return f"{s / 60:g}-minute"
        return f"{s:g}-second"


class DailyMode(BaseModel):
    name: str
    color: str
    dash: str
    symbol: str
    days: list[str]
    p50: list[float | None]


class DailyOut(BaseModel):
    target: str
    phase: str
    probe: str
    resolution: str
    modes: list[DailyMode]


def weighted_quantiles(hist: list[tuple[float, int]], qs: list[float]) -> list[float]:
    """Nearest-rank quantiles of a (value, count) histogram."""
    values = np.array([v for v, _ in hist], dtype=np.float64)
    counts = np.array([c for _, c in hist], dtype=np.int64)
    order = np.argsort(values)
    values, counts = values[order], counts[order]
    cum = np.cumsum(counts)
    total = int(cum[-1])
    out = []
    for q in qs:
        rank = max(1, math.ceil(q * total - 1e-9))
        out.append(float(values[int(np.searchsorted(cum, rank, side="left"))]))
    return out


def sentence(phase: str, m: ModeStats, baseline_kind: str, confidence: float) -> str | None:
    """E.g. "shared-server logons were 28 % faster than dedicated-server, 95 % CI 25-31 %"."""
    if m.ratio is None or m.kind == baseline_kind:
        return None
    who = MODE_WORDS.get(m.kind, m.mode)
    base = MODE_WORDS.get(baseline_kind, baseline_kind)
    what = f"{who} {phase}s" if phase in ("logon", "ping", "query", "logoff") else f"{who} {phase}"
    change = (1.0 - m.ratio) * 100.0
    word = "faster" if change > 0 else "slower"
    level = f"{confidence * 100:.0f} %"
    if m.ci_low is None or m.ci_high is None:
        return f"{what} were {abs(change):.0f} % {word} than {base} (too little data for a CI)"
    lo, hi = sorted((abs((1.0 - m.ci_high) * 100.0), abs((1.0 - m.ci_low) * 100.0)))
    if not m.significant:
        return (
            f"{what} were {abs(change):.0f} % {word} than {base}, but the {level} CI "
            f"({(1 - m.ci_high) * 100:+.0f} % to {(1 - m.ci_low) * 100:+.0f} %) includes no "
            "difference: not a clear difference"
        )
    digits = 0 if hi - lo >= 2 else 1
    return (
        f"{what} were {abs(change):.{digits}f} % {word} than {base}, "
        f"{level} CI {lo:.{digits}f}-{hi:.{digits}f} %"
    )


def _style(target: TargetInfo, mode: str, kind: str) -> ModeStyle:
    info = target.mode(mode)
    return info.style if info is not None else mode_style(kind)


def compare_view(
    conn: Connection,
    target: TargetInfo,
    start: datetime,
    end: datetime,
    phase: str,
    mode_names: list[str],
    probe: str = "connping",
) -> CompareOut:
    """The modes of ``target`` compared on ``probe``'s samples only (one kind, never mixed)."""
    baseline = BASELINE.get(target.kind, "dedicated")
    res = compare(
        conn, target.id, start, end, probe=probe, phase=phase, baseline=baseline, n_boot=N_BOOT
    )
    out: list[CompareMode] = []
    for m in res.modes:
        if m.mode not in mode_names:
            continue
        hist = sorted(m.histogram)
        box = None
        ex: list[float] = []
        ey: list[float] = []
        if hist and m.count:
            p5, p25, p50, p75, p95 = weighted_quantiles(hist, [0.05, 0.25, 0.5, 0.75, 0.95])
            box = BoxStats(p5=p5, p25=p25, p50=p50, p75=p75, p95=p95, mean=m.mean_ms)
            cum = np.cumsum([c for _, c in hist])
            ex = [round(v, 4) for v, _ in hist]
            ey = [round(float(c) / float(cum[-1]), 5) for c in cum]
        out.append(
            CompareMode(
                name=m.mode,
                kind=m.kind,
                **_style(target, m.mode, m.kind),
                n=m.n,
                n_failed=m.n_error + m.n_timeout,
                timed=m.count,
                availability=m.availability,
                p50=m.p50_ms,
                p90=m.p90_ms,
                p95=m.p95_ms,
                p99=m.p99_ms,
                mean=m.mean_ms,
                ratio=m.ratio,
                ci_low=m.ci_low,
                ci_high=m.ci_high,
                p_value=m.p_value,
                significant=m.significant,
                sentence=sentence(phase, m, baseline, res.confidence) if res.baseline else None,
                box=box,
                ecdf_x=ex,
                ecdf_y=ey,
            )
        )
    return CompareOut(
        target=target.name,
        phase=phase,
        probe=probe,
        start=res.start,
        end=res.end,
        resolution=res.source,
        baseline=res.baseline,
        confidence=res.confidence,
        block_s=res.block.total_seconds(),
        modes=out,
    )


def daily_view(
    conn: Connection,
    target: TargetInfo,
    start: datetime,
    end: datetime,
    phase: str,
    mode_names: list[str],
    probe: str = "connping",
) -> DailyOut:
    """p50 per UTC day and mode over the window (at least its last 7 days)."""
    start = min(start, end - timedelta(days=7))
    modes = [m for m in target.modes if m.name in mode_names]
    owner = {s.id: m for m in modes for s in m.series_for(probe)}
    days = max(1, math.ceil((end - start) / timedelta(days=1)))
    res = timeseries(conn, list(owner), start, end, phase=phase, max_points=days)
    per: dict[int, dict[datetime, tuple[int, float | None]]] = defaultdict(dict)
    for p in res.points:
        mid = owner[p.series_id].id
        cur = per[mid].get(p.bucket)
        if cur is None or p.count > cur[0]:
            per[mid][p.bucket] = (p.count, p.p50_ms)
    out = []
    for m in modes:
        items = sorted(per.get(m.id, {}).items())
        out.append(
            DailyMode(
                name=m.name,
                **m.style,
                days=[b.date().isoformat() for b, _ in items],
                p50=[v for _, (_, v) in items],
            )
        )
    return DailyOut(target=target.name, phase=phase, probe=probe, resolution=res.source, modes=out)
