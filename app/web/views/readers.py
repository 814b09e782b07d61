"""The one place the web calls the store's query functions, shaping results for pages and API.

Nothing here writes SQL over samples or rollups: series, percentiles and counts come
from :mod:`app.store`. What is added is presentation: grouping series into modes,
milliseconds, colours, and the overview's summary of the store's buckets.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from app.explain import explain
from app.samples import is_probe_side
from app.store.read.availability import code_class, failure_codes
from app.store.read.recent import activity, minute_points
from app.store.read.samples import read_samples
from app.store.read.timeseries import Point, summary, timeseries
from app.web.schemas import ErrorMark, ModeTimeseries, TimeseriesOut
from app.web.timerange import TimeRange
from app.web.views.lookups import ModeInfo, TargetInfo
from app.web.views.overview import ModeStats, overview_probe
from app.web.views.reuse.recent import Recent


def meaning(code: str) -> str:
    """``code: what it means`` (hover text); the code alone when it has no entry."""
    found = explain(code)
    return f"{code}: {found.meaning}" if found else code


def probe_ids(modes: Iterable[ModeInfo], probe: str = "connping") -> dict[int, int]:
    """series id -> mode id, for the given probe kind (every site)."""
    return {s.id: m.id for m in modes for s in m.series_for(probe)}


def overview_ids(modes: Iterable[ModeInfo]) -> dict[int, int]:
    """series id -> mode id, for each mode's overview probe (connping where it has one)."""
    return {s.id: m.id for m in modes for s in m.series_for(overview_probe(m))}


SPARK_SPAN = timedelta(hours=1)  # the sparkline: one point per minute over the last hour


def _by_mode(points: list[Point], owner: dict[int, int]) -> dict[int, list[Point]]:
    out: dict[int, list[Point]] = defaultdict(list)
    for p in points:
        out[owner[p.series_id]].append(p)
    return out


def _worst(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def _latest(points: list[Point]) -> list[Point]:
    """The points of the most recent bucket that has successful timings (any series)."""
    with_data = [p for p in points if p.count > 0]
    if not with_data:
        return []
    last = max(p.bucket for p in with_data)
    return [p for p in with_data if p.bucket == last]


def overview_stats(
    conn: Connection, targets: list[TargetInfo], now: datetime
) -> dict[int, ModeStats]:
    """Per mode id: recent counts, current logon/ping p50/p95, and an hour's sparkline.

    Each mode is read from the series of one probe kind (:func:`overview_probe`:
    connping where the mode has one), never a mix.

    - counts and the newest sample's time: the store's count over the last 15 minutes;
    - current p50/p95: the latest 15-minute bucket (aligned) with successful samples;
    - sparkline: logon p50 per minute over the last hour from the 1-minute rollups (what
      exists: a mode that started 3 minutes ago has 2-3 points; the current minute
      appears once rolled up), and its median is the "degraded" baseline;
    - a mode with several sites: counts add up, latencies are the worst site's.
    """
    owner = overview_ids(m for t in targets for m in t.modes)
    stats: dict[int, ModeStats] = {mid: ModeStats() for mid in set(owner.values())}
    if not owner:
        return stats
    ids = list(owner)
    for sid, a in activity(conn, ids, now).items():
        s = stats[owner[sid]]
        s.last_at = a.last_at if s.last_at is None else max(s.last_at, a.last_at)
        s.n_5m += a.n_5m
        s.ok_5m += a.ok_5m
        s.n_15m += a.n_15m
        s.failed_15m += a.failed_15m
        if a.last_failed_at is not None and (
            s.last_failed_at is None or a.last_failed_at > s.last_failed_at
        ):
            s.last_failed_at, s.last_code = a.last_failed_at, a.last_code
        s.unmeasured_5m += a.unmeasured_5m
        s.probe_15m += a.probe_15m
    for phase in ("logon", "ping"):
        cur = summary(conn, ids, now - timedelta(minutes=15), now, phase=phase)
        for mid, pts in _by_mode(cur.points, owner).items():
            latest = _latest(pts)
            setattr(stats[mid], f"{phase}_p50", _worst(p.p50_ms for p in latest))
            setattr(stats[mid], f"{phase}_p95", _worst(p.p95_ms for p in latest))
    start = (now - SPARK_SPAN).replace(second=0, microsecond=0)
    minutes = minute_points(conn, ids, start, now, phase="logon")
    nb = math.ceil((now - start) / timedelta(minutes=1))
    for mid, pts in _by_mode(minutes, owner).items():
        per_series: dict[int, list[float | None]] = defaultdict(lambda: [None] * nb)
        for p in pts:
            i = int((p.bucket - start) / timedelta(minutes=1))
            if 0 <= i < nb:
                per_series[p.series_id][i] = p.p50_ms
        best = max(per_series.values(), key=lambda v: sum(x is not None for x in v))
        s = stats[mid]
        s.spark = best
        known = sorted(v for v in best if v is not None)
        s.baseline_logon_p50 = known[len(known) // 2] if known else None
        s.baseline_minutes = len(known)
    return stats


MAX_FAILED_SAMPLES = 2000
RAW_SPAN = timedelta(days=2)
HOURLY_SPAN = timedelta(days=31)


def points_for(span: timedelta, requested: int | None) -> int:
    """The chart's bucket budget: ``requested``, or by default one that lands on a grain.

    Up to 2 days the store answers from raw samples (400 buckets); beyond, a budget of
    one bucket per hour (up to 31 days) or per day makes the store read its 1-hour or
    1-day rollup rows as they are instead of merging them into wider buckets, which
    is several times faster (docs/benchmarks.md, "Web"). Past a month, hourly points
    cost more than they show (2 160 per mode over 90 days, each with a p5 read off its
    histogram): a day per point, and zooming in fetches hours again.
    """
    if requested is not None:
        return requested
    if span <= RAW_SPAN:
        return 400
    if span <= HOURLY_SPAN:
        return math.ceil(span / timedelta(hours=1)) + 1
    return math.ceil(span / timedelta(days=1)) + 1


def _failure_codes(
    conn: Connection, owner: dict[int, int], start: datetime, end: datetime, step: timedelta
) -> dict[int, dict[datetime, dict[str, int]]]:
    """Per mode id, error codes per chart bucket, from the store's failed raw samples.

    One read per charted mode (its newest 2000 failures), only when
    some bucket failed. Failures are rare and indexed (a partial index), so this stays
    cheap; beyond the raw horizon or the cap, markers keep their counts without codes.
    """
    out: dict[int, dict[datetime, dict[str, int]]] = defaultdict(lambda: defaultdict(dict))
    by_mode: dict[int, list[int]] = defaultdict(list)
    for series_id, mode_id in owner.items():
        by_mode[mode_id].append(series_id)
    # one read per mode: the cap holds per mode, and a read's limit stays within the
    # store's (a single read for six or more failing modes asked for more than it allows)
    for series_ids in by_mode.values():
        page = read_samples(
            conn,
            series_ids=series_ids,
            statuses=["error", "timeout"],
            start=start,
            end=end,
            limit=MAX_FAILED_SAMPLES,
        )
        for s in page.samples:
            if s.series_id is None:
                continue
            bucket = start + ((s.scheduled_at - start) // step) * step
            code = s.error_code or str(s.status)
            per = out[owner[s.series_id]][bucket]
            per[code] = per.get(code, 0) + 1
    return out


def target_timeseries(
    conn: Connection,
    target: TargetInfo,
    mode_names: list[str],
    window: TimeRange,
    *,
    phase: str,
    probe: str,
    points: int | None,
) -> TimeseriesOut:
    """One band chart's data: per mode, p50 with its band, per bucket; error markers.

    A mode with several sites shows the site with most samples per bucket.
    """
    modes = [m for m in target.modes if m.name in mode_names]
    owner = probe_ids(modes, probe)
    budget = points_for(window.span, points)
    res = timeseries(conn, list(owner), window.start, window.end, phase=phase, max_points=budget)
    grouped = _by_mode(res.points, owner)
    out_modes: list[ModeTimeseries] = []
    marks: list[ErrorMark] = []
    failed_any = any(p.n_failed or p.n_probe for p in res.points)
    codes_of: dict[int, dict[datetime, dict[str, int]]] = {}
    if failed_any and res.source == "raw":
        codes_of = _failure_codes(conn, owner, res.start, res.end, res.step)
    elif failed_any:  # from the rollups' error codes: old raw days may be compacted or gone
        for (sid, bucket), found in failure_codes(
            conn, list(owner), res.start, res.end, res.step
        ).items():
            per = codes_of.setdefault(owner[sid], {}).setdefault(bucket, {})
            for code, count in found.items():
                per[code] = per.get(code, 0) + count
    for m in modes:
        best: dict[datetime, Point] = {}
        for p in grouped.get(m.id, []):
            if p.bucket not in best or p.n > best[p.bucket].n:
                best[p.bucket] = p
        pts = [best[b] for b in sorted(best)]
        out_modes.append(
            ModeTimeseries(
                name=m.name,
                kind=m.kind,
                **m.style,
                t=[p.bucket for p in pts],
                p5=[p.p5_ms for p in pts],
                p50=[p.p50_ms for p in pts],
                p95=[p.p95_ms for p in pts],
                p99=[p.p99_ms for p in pts],
                n=[p.n for p in pts],
                errors=[p.n_failed for p in pts],
            )
        )
        codes = codes_of.get(m.id, {})
        for p in pts:
            found = codes.get(p.bucket, {})
            listed = sorted(found, key=lambda c: -found[c])
            probe_codes = [c for c in listed if is_probe_side(code_class(c))]
            if p.n_failed:
                target_codes = [c for c in listed if c not in probe_codes]
                marks.append(
                    ErrorMark(
                        mode=m.name,
                        t=p.bucket,
                        count=p.n_failed,
                        n=p.n,
                        codes=target_codes,
                        meanings=[meaning(c) for c in target_codes],
                    )
                )
            if p.n_probe:  # shown apart: connwatch's own trouble, not the database's
                marks.append(
                    ErrorMark(
                        mode=m.name,
                        t=p.bucket,
                        count=p.n_probe,
                        n=p.n,
                        codes=probe_codes,
                        meanings=[meaning(c) for c in probe_codes],
                        probe_side=True,
                    )
                )
    return TimeseriesOut(
        target=target.name,
        probe=probe,
        phase=phase,
        start=res.start,
        end=res.end,
        window_start=window.start,
        window_end=window.end,
        resolution=res.source,
        step_s=res.step.total_seconds(),
        band_low="p5",
        modes=out_modes,
        errors=marks,
    )


def recent_overview_stats(
    state: Any, conn: Connection, targets: list[TargetInfo], now: datetime
) -> dict[int, ModeStats]:
    """:func:`overview_stats`, reused for ``CONNWATCH_OVERVIEW_CACHE_S`` by the web app
    whose ``state`` this is (app/web/views/reuse/recent.py): the overview page, its API and
    ``/metrics`` share it. Keyed by the modes' overview series, so a mode or series
    added, removed or changed is read at once."""
    recent: Recent[dict[int, ModeStats]] = state.overview_recent
    key = tuple(sorted(overview_ids(m for t in targets for m in t.modes).items()))
    ttl = state.settings.overview_cache_s
    return recent.get(key, ttl, lambda: overview_stats(conn, targets, now))
