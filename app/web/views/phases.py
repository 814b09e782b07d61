"""The Target page's "logon round trips" chart: per mode, the median of each phase per bucket.

Phase names and their order come from the data and :mod:`app.samples`
(``LOGON_PHASE_ORDER``), never from a list of the web's own.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection

from app.samples import logon_phase_key
from app.store.read.phases import MAX_SPAN, PhasePoint, logon_phases
from app.web.timerange import TimeRange
from app.web.views.lookups import TargetInfo
from app.web.views.readers import probe_ids


class PhaseMode(BaseModel):
    name: str
    color: str
    t: list[datetime] = Field(description="bucket starts (UTC)")
    n: list[int] = Field(description="ok samples with phases per bucket")
    phases: dict[str, list[float | None]] = Field(
        description="phase -> median ms per bucket (null: the phase did not occur)"
    )


class LogonPhasesOut(BaseModel):
    target: str
    probe: str
    window_start: datetime
    window_end: datetime
    start: datetime = Field(description="first bucket read (at most 2 days before the end)")
    end: datetime
    step_s: float
    cut: bool = Field(description="the window is longer than the raw samples read (2 days)")
    phases: list[str] = Field(description="every phase name seen, in wire order")
    modes: list[PhaseMode]


def target_logon_phases(
    conn: Connection, target: TargetInfo, mode_names: list[str], window: TimeRange, probe: str
) -> LogonPhasesOut:
    modes = [m for m in target.modes if m.name in mode_names]
    owner = probe_ids(modes, probe)
    res = logon_phases(conn, list(owner), window.start, window.end)
    # per mode and bucket, the series (site) with the most samples, like the band charts
    grouped: dict[int, dict[datetime, dict[int, list[PhasePoint]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for p in res.points:
        grouped[owner[p.series_id]][p.bucket][p.series_id].append(p)
    names = sorted({p.phase for p in res.points}, key=logon_phase_key)
    out: list[PhaseMode] = []
    for m in modes:
        buckets = grouped.get(m.id, {})
        t: list[datetime] = []
        n: list[int] = []
        cols: dict[str, list[float | None]] = {k: [] for k in names}
        for bucket in sorted(buckets):
            best = max(buckets[bucket].values(), key=lambda ps: max(p.n for p in ps))
            got = {p.phase: p.p50_ms for p in best}
            t.append(bucket)
            n.append(max(p.n for p in best))
            for k in names:
                cols[k].append(got.get(k))
        used = {k: v for k, v in cols.items() if any(x is not None for x in v)}
        out.append(PhaseMode(name=m.name, color=m.style["color"], t=t, n=n, phases=used))
    return LogonPhasesOut(
        target=target.name,
        probe=probe,
        window_start=window.start,
        window_end=window.end,
        start=res.start,
        end=res.end,
        step_s=res.step.total_seconds(),
        cut=res.cut or window.span > MAX_SPAN,
        phases=names,
        modes=out,
    )
