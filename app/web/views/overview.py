"""The overview's rows: every target x mode with its state, current latencies and a sparkline.

State of a mode (its connping series, all sites together; a mode without connping: its
series of the first of sessionping, commit, poolacquire it runs; kinds are never pooled):

- ``stale``: no sample at all in the last ``STALE_AFTER`` intervals (at least 2 minutes);
- ``probe-error``: samples arrived in the last 5 minutes but none of them measured the
  target: each was a probe-side error (class PROBE: connwatch's own trouble, e.g. a
  driver defect or a series it cannot build) or a skipped run. Says nothing about
  the database, so it is neither ``down`` nor ``ok``;
- ``down``: runs in the last 5 minutes measured the target and none succeeded;
- ``degraded``: the target failed in the last 15 minutes (error rate above 0), or the
  current logon p50 is more than twice the median of the last hour's per-minute logon
  p50s and at least ``SLOWER_MS`` slower (like compared with like: a normal tail, p95
  above twice the median, is not a degradation; a doubling from 1 to 2 ms is noise),
  given at least ``BASELINE_MINUTES`` minutes of that hour;
- ``ok`` otherwise. Disabled targets and modes are listed last as ``disabled``.

Probe-side errors never make a mode ``down`` or ``degraded`` and are not in its error
rate; the reason names them when there were some. Rows are sorted worst first: down,
degraded, probe-error, stale, ok, then by logon p95 descending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from app.explain import explain
from app.web.palette import ModeStyle
from app.web.views.lookups import ModeInfo, TargetInfo

STATE_ORDER = {
    "down": 0,
    "degraded": 1,
    "probe-error": 2,
    "stale": 3,
    "ok": 4,
    "unknown": 5,
    "disabled": 6,
}
STALE_AFTER = 3  # intervals without any sample
SLOWER_FACTOR = 2.0  # "degraded": the current logon p50 above this times the hour's median
SLOWER_MS = 10.0  # ... and at least this many ms above it
BASELINE_MINUTES = 10  # ... with at least this many minutes of the hour to compare with
# which probe's series speak for a mode: connping where the mode has one, else the first of
# these it runs (a mode's logons from different probe kinds are never pooled)
OVERVIEW_PROBES = ("connping", "sessionping", "commit", "poolacquire")


def overview_probe(mode: ModeInfo) -> str | None:
    """The probe kind whose series give the mode's state and latencies (None: no series)."""
    have = {s.probe for s in mode.series}
    return next((p for p in OVERVIEW_PROBES if p in have), None)


def probe_interval_ms(mode: ModeInfo) -> int:
    probe = overview_probe(mode)
    return min((x.interval_ms for x in mode.series if x.probe == probe), default=0)


@dataclass(slots=True)
class ModeStats:
    """What the store says about one mode's series of its overview probe (connping if any)."""

    last_at: datetime | None = None
    n_5m: int = 0
    ok_5m: int = 0
    n_15m: int = 0
    failed_15m: int = 0  # the target's failures (probe-side errors excluded)
    unmeasured_5m: int = 0  # probe-side errors and skipped runs in the last 5 minutes
    probe_15m: int = 0  # probe-side errors in the last 15 minutes
    logon_p50: float | None = None
    logon_p95: float | None = None
    ping_p50: float | None = None
    ping_p95: float | None = None
    baseline_logon_p50: float | None = None
    baseline_minutes: int = 0
    spark: list[float | None] = field(default_factory=list)
    last_code: str | None = None  # the newest failure's code (last 15 minutes)
    last_failed_at: datetime | None = None


@dataclass(slots=True)
class OverviewRow:
    target: str
    target_kind: str
    mode: str
    mode_kind: str
    style: ModeStyle
    state: str
    reason: str
    stats: ModeStats
    interval_ms: int
    probe: str | None

    @property
    def explained(self) -> str | None:
        """The newest failure's code and what it means (``ORA-01017: invalid ...``)."""
        found = explain(self.stats.last_code)
        return found.line() if found else None

    @property
    def meaning(self) -> str | None:
        found = explain(self.stats.last_code)
        return found.meaning if found else None

    @property
    def error_rate(self) -> float | None:
        """The target's failures over the runs that measured it (last 15 minutes)."""
        measured = self.stats.n_15m - self.stats.probe_15m
        if measured <= 0:
            return None
        return self.stats.failed_15m / measured


def classify(mode: ModeInfo, target: TargetInfo, s: ModeStats, now: datetime) -> tuple[str, str]:
    """(state, reason in words)."""
    if not target.enabled or not mode.enabled:
        return "disabled", "monitoring is switched off"
    interval_ms = probe_interval_ms(mode)
    if not interval_ms:
        return "unknown", "no probe series"
    stale_s = max(120.0, STALE_AFTER * interval_ms / 1000)
    if s.last_at is None or (now - s.last_at).total_seconds() > stale_s:
        return "stale", f"no sample for more than {stale_s:.0f} s"
    aside = (
        f" ({s.probe_15m} probe-side error(s) in the last 15 minutes not counted)"
        if s.probe_15m
        else ""
    )
    if s.n_5m > 0 and s.unmeasured_5m >= s.n_5m:
        return "probe-error", (
            "no run of the last 5 minutes measured the database: probe-side errors or "
            "skipped runs (connwatch's own trouble, see the Samples page, class PROBE)"
        )
    if s.n_5m > 0 and s.ok_5m == 0:
        return "down", "every sample of the last 5 minutes that measured it failed" + aside
    if s.failed_15m > 0:
        measured = s.n_15m - s.probe_15m
        return "degraded", (
            f"{s.failed_15m} of {measured} samples failed in the last 15 minutes" + aside
        )
    base = s.baseline_logon_p50
    if (
        s.logon_p50 is not None
        and base is not None
        and s.baseline_minutes >= BASELINE_MINUTES
        and s.logon_p50 > SLOWER_FACTOR * base
        and s.logon_p50 - base >= SLOWER_MS
    ):
        return "degraded", (
            f"logon p50 {s.logon_p50:.1f} ms is more than {SLOWER_FACTOR:g} times the last "
            f"hour's median of {base:.1f} ms" + aside
        )
    return "ok", "all recent samples succeeded" + aside


def build_rows(
    targets: list[TargetInfo], stats: dict[int, ModeStats], now: datetime
) -> list[OverviewRow]:
    rows = []
    for t in targets:
        for m in t.modes:
            s = stats.get(m.id, ModeStats())
            state, reason = classify(m, t, s, now)
            rows.append(
                OverviewRow(
                    t.name, t.kind, m.name, m.kind, m.style, state, reason, s,
                    probe_interval_ms(m), overview_probe(m),
                )
            )  # fmt: skip
    rows.sort(
        key=lambda r: (
            STATE_ORDER[r.state],
            -(r.stats.logon_p95 or 0.0),
            r.target,
            r.mode,
        )
    )
    return rows


def sparkline_svg(
    values: list[float | None], color: str, width: int = 120, height: int = 28
) -> str:
    """A tiny inline SVG of the p50 per bucket over a fixed axis (the hour): a line through
    consecutive buckets, a dot for a lone one; gaps stay gaps. Empty without any value."""
    pts = [v for v in values if v is not None]
    if not pts:
        return ""
    lo, hi = min(pts), max(pts)
    span = (hi - lo) or 1.0
    step = width / max(1, len(values) - 1)
    segments: list[list[str]] = [[]]
    for i, v in enumerate(values):
        if v is None:
            if segments[-1]:
                segments.append([])
            continue
        y = height - 2 - (v - lo) / span * (height - 4)
        segments[-1].append(f"{i * step:.1f},{y:.1f}")
    lines = "".join(
        f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(seg)}"/>'
        if len(seg) > 1
        else '<circle cx="{}" cy="{}" r="1.5" fill="{}"/>'.format(*seg[0].split(","), color)
        for seg in segments
        if seg
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="logon p50 over the last hour, {lo:.1f} to {hi:.1f} ms">'
        f"{lines}</svg>"
    )
