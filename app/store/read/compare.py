"""Compare the modes of one target over a range: distributions, percentiles, ratio of medians.

For each mode the merged histogram of the range gives the distribution (for the
page's histogram/violin), its percentiles (within 1.96 %) and availability. Against
the baseline mode (``dedicated`` by default) the ratio of medians comes with a
block-bootstrap confidence interval and a two-sided bootstrap p-value.

Blocks are consecutive stretches of time (the range cut into at most 150 equal
"nice" steps built from whole rollup rows; at least an hour once the range exceeds
8 hours), resampled with replacement: latency is
autocorrelated (daily drift, incidents), and resampling single samples would make
every difference look significant. ``significant`` means the interval excludes 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import availability_ratio
from app.store.histogram.buckets import GAMMA, bucket_value, quantiles
from app.store.histogram.numpy_merge import merged_matrix, rollup_columns
from app.store.layout import ORIGIN_SQL, check_phase, no_jit
from app.store.read.timeseries import NS_PER_MS, ms
from app.store.resolution import check_range, choose


@dataclass(frozen=True, slots=True)
class ModeStats:
    mode_id: int
    mode: str
    kind: str
    series_ids: list[int]
    n: int
    n_ok: int
    n_error: int
    n_timeout: int
    availability: float | None  # ok / (runs that measured the target); None without any
    count: int  # ok samples with this timing
    mean_ms: float | None
    min_ms: float | None
    p50_ms: float | None
    p90_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    histogram: list[tuple[float, int]] = field(default_factory=list)  # (bucket value ms, count)
    ratio: float | None = None  # this median / baseline median (interpolated medians)
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    significant: bool | None = None
    n_probe: int = 0  # probe-side errors: not the target's, not in availability


@dataclass(frozen=True, slots=True)
class CompareResult:
    target_id: int
    phase: str
    start: datetime
    end: datetime
    block: timedelta  # width of the bootstrap blocks
    source: str  # rollup table the rows came from ("1m", "1h", "1d")
    baseline: str | None  # mode kind the ratios are against (None if absent)
    confidence: float
    modes: list[ModeStats]


MAX_BLOCKS = 150
BLOCK_HOURS_AFTER = timedelta(hours=8)


def _medians(h: npt.NDArray[np.float64], lo: int) -> npt.NDArray[np.float64]:
    """Median (ns) of each histogram row, interpolated geometrically inside its bucket.

    The rank-``ceil(n/2)`` value lies in bucket ``i`` = ``(GAMMA^(i-1), GAMMA^i]``; placing
    it at the fraction of that bucket's count it sits at keeps it in the bucket (so the
    1.96 % bound holds) and makes ratios vary smoothly instead of in 4 % steps.
    """
    cum = np.cumsum(h, axis=1)
    tot = cum[:, -1]
    rank = np.maximum(1.0, np.ceil(0.5 * tot - 1e-9))
    pos = np.minimum((cum < rank[:, None]).sum(axis=1), h.shape[1] - 1)
    rows = np.arange(h.shape[0])
    before = np.where(pos > 0, cum[rows, np.maximum(pos - 1, 0)], 0.0)
    inb = np.maximum(h[rows, pos], 1.0)
    frac = np.clip((rank - before) / inb, 0.0, 1.0)
    out = np.power(GAMMA, pos + lo - 1 + frac)
    out[tot == 0] = np.nan
    return np.asarray(out, dtype=np.float64)


def _boot_medians(
    m: npt.NDArray[np.float64], lo: int, n_boot: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    nb = m.shape[0]
    w = rng.multinomial(nb, np.full(nb, 1.0 / nb), size=n_boot).astype(np.float64)
    return _medians(w @ m, lo)


def compare(
    conn: Connection,
    target_id: int,
    start: datetime,
    end: datetime,
    *,
    phase: str = "total",
    baseline: str = "dedicated",
    probe: str | None = None,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CompareResult:
    """Per-mode distribution over ``[start, end)`` (widened to whole blocks) and ratios.

    ``probe`` (e.g. ``"connping"``) keeps only that probe kind's series; without it every
    series of a mode is pooled. A mode without matching data gets an empty entry.
    """
    check_phase(phase)
    check_range(start, end)
    no_jit(conn)
    # Past 8 hours, blocks are whole hours or more: cheaper to read, and closer to the
    # time scale of the autocorrelation the block bootstrap is there to respect.
    # (Saying the 1-minute rows start at ``end`` makes the plan use hours or coarser.)
    long = end - start > BLOCK_HOURS_AFTER
    p = choose(start, end, MAX_BLOCKS, allow_raw=False, minute_from=end if long else None)
    grain, a, b = p.grain, p.data_start, p.data_end
    groups, mat, lo = merged_matrix(
        conn,
        f"select s.mode_id as k1, date_bin(:step, r.bucket, {ORIGIN_SQL}) as k2, "
        f"{rollup_columns(phase, 'r.')} from {grain.table} r "
        "join series s on s.id = r.series_id join modes m on m.id = s.mode_id "
        "where m.target_id = :t and r.bucket >= :a and r.bucket < :b "
        "and (cast(:probe as text) is null or s.probe = cast(:probe as text))",
        {"t": target_id, "a": a, "b": b, "step": p.step, "probe": probe},
        nkeys=2,
    )
    series_of: dict[int, list[int]] = {}
    for mid, sid in conn.execute(
        text(
            "select s.mode_id, s.id from series s join modes m on m.id = s.mode_id "
            "where m.target_id = :t "
            "and (cast(:probe as text) is null or s.probe = cast(:probe as text)) order by s.id"
        ),
        {"t": target_id, "probe": probe},
    ):
        series_of.setdefault(mid, []).append(sid)
    modes_meta = conn.execute(
        text("select id, name, kind from modes where target_id = :t order by id"), {"t": target_id}
    ).all()
    rows_of: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        rows_of.setdefault(g[0], []).append(i)
    width = mat.shape[1]
    rng = np.random.default_rng(seed)
    medians: dict[int, float] = {}
    boots: dict[int, npt.NDArray[np.float64]] = {}
    stats: list[dict[str, Any]] = []
    for mid, name, kind in modes_meta:
        sel = rows_of.get(mid, [])
        mrows = [groups[i] for i in sel]  # (mode, block, gid, n, ok, err, to, skip, cnt, ...)
        m = mat[sel] if sel else np.zeros((0, width))
        m = m[m.sum(axis=1) > 0]  # blocks without timings do not take part in the bootstrap
        hist = (m.sum(axis=0) if m.size else np.zeros(width)).astype(np.int64)
        if hist.sum():
            medians[mid] = float(_medians(hist[None, :].astype(np.float64), lo)[0])
        n = sum(int(r[3]) for r in mrows)
        n_ok = sum(int(r[4]) for r in mrows)
        skipped = sum(int(r[7]) for r in mrows)
        n_probe = sum(int(r[12] or 0) for r in mrows)
        cnt = int(hist.sum())
        mins = [r[9] for r in mrows if r[9] is not None]
        maxs = [r[10] for r in mrows if r[10] is not None]
        lo_v = float(min(mins)) if mins else None
        hi_v = float(max(maxs)) if maxs else None
        nz = np.nonzero(hist)[0]
        q = quantiles(nz + lo, hist[nz], (0.5, 0.9, 0.95, 0.99), lo_v, hi_v)
        sm = sum(float(r[11]) for r in mrows if r[11] is not None)
        stats.append(
            {
                "mode_id": mid,
                "mode": name,
                "kind": kind,
                "series_ids": series_of.get(mid, []),
                "n": n,
                "n_ok": n_ok,
                "n_error": sum(int(r[5]) for r in mrows),
                "n_timeout": sum(int(r[6]) for r in mrows),
                "n_probe": n_probe,
                "availability": availability_ratio(n_ok, n, skipped, n_probe),
                "count": cnt,
                "mean_ms": (sm / cnt / NS_PER_MS) if cnt else None,
                "min_ms": ms(lo_v),
                "p50_ms": ms(q[0]),
                "p90_ms": ms(q[1]),
                "p95_ms": ms(q[2]),
                "p99_ms": ms(q[3]),
                "max_ms": ms(hi_v),
                "histogram": [(float(bucket_value(i + lo)) / NS_PER_MS, int(hist[i])) for i in nz],
            }
        )
        if m.shape[0] >= 2 and cnt:
            boots[mid] = _boot_medians(m, lo, n_boot, rng)
    base = next((s for s in stats if s["kind"] == baseline and s["count"]), None)
    alpha = 1.0 - confidence
    if base is not None:
        for s in stats:
            if not s["count"] or base["p50_ms"] is None or s["p50_ms"] is None:
                continue
            s["ratio"] = medians[s["mode_id"]] / medians[base["mode_id"]]
            if s is base:
                continue
            if s["mode_id"] in boots and base["mode_id"] in boots:
                ratios = boots[s["mode_id"]] / boots[base["mode_id"]]
                ratios = ratios[np.isfinite(ratios)]
                if ratios.size:
                    s["ci_low"] = float(np.quantile(ratios, alpha / 2))
                    s["ci_high"] = float(np.quantile(ratios, 1 - alpha / 2))
                    tail = min(float(np.mean(ratios <= 1.0)), float(np.mean(ratios >= 1.0)))
                    s["p_value"] = min(1.0, max(2.0 * tail, 1.0 / ratios.size))
                    s["significant"] = not (s["ci_low"] <= 1.0 <= s["ci_high"])
    return CompareResult(
        target_id=target_id,
        phase=phase,
        start=a,
        end=b,
        block=p.step,
        source=grain.name,
        baseline=baseline if base is not None else None,
        confidence=confidence,
        modes=[ModeStats(**s) for s in stats],
    )
