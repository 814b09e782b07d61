"""Compare the modes of one target using the samples of ONE probe kind only.

:func:`app.store.compare.compare` pools every series of a mode: on a mode that runs
connping, sessionping (whose reconnects log on too) and commit probes, the logon
distribution mixes three different measurements, and modes with more probe kinds
get more samples. :func:`compare_probe` takes the same inputs plus ``probe`` and
returns the same :class:`~app.store.compare.CompareResult` computed from that
probe's series alone (a mode without such a series gets an empty entry).

The statistics are those of :mod:`app.store.compare` (medians interpolated inside
their bucket, the same block bootstrap): only the rows read differ. Once ``compare``
takes a probe filter itself, this module can go.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.compare import MAX_BLOCKS, CompareResult, ModeStats, _boot_medians, _medians
from app.store.hist import bucket_value, quantiles
from app.store.layout import ORIGIN_SQL, check_phase
from app.store.resolution import check_range, choose
from app.store.timeseries import NS_PER_MS, ms

PROBES = ("connping", "sessionping", "commit", "poolacquire", "sweep")


def _blocks(
    rows: list[Any], lo: int, width: int, a: datetime, step: timedelta
) -> npt.NDArray[np.float64]:
    """Histogram counts per bootstrap block (rows: one per block that has timings)."""
    timed = [r for r in rows if r.hi]
    if not timed:
        return np.zeros((0, width), dtype=np.float64)
    _, block = np.unique([(r.bucket - a) // step for r in timed], return_inverse=True)
    sizes = [len(r.hi) for r in timed]
    out = np.zeros((int(block.max()) + 1, width), dtype=np.float64)
    cols = np.concatenate([np.asarray(r.hi, dtype=np.int64) for r in timed]) - lo
    vals = np.concatenate([np.asarray(r.hc, dtype=np.float64) for r in timed])
    np.add.at(out, (np.repeat(block, sizes), cols), vals)
    return out


def _mode_stats(
    mid: int,
    name: str,
    kind: str,
    ids: list[int],
    rows: list[Any],
    m: npt.NDArray[np.float64],
    lo: int,
) -> dict[str, Any]:
    hist = (m.sum(axis=0) if m.size else np.zeros(m.shape[1])).astype(np.int64)
    nz = np.nonzero(hist)[0]
    cnt = int(hist.sum())
    n = sum(r.n for r in rows)
    ran = n - sum(r.n_skipped for r in rows)
    n_ok = sum(r.n_ok for r in rows)
    mins = [r.mn for r in rows if r.mn is not None]
    maxs = [r.mx for r in rows if r.mx is not None]
    low = float(min(mins)) if mins else None
    high = float(max(maxs)) if maxs else None
    q = quantiles(nz + lo, hist[nz], (0.5, 0.9, 0.95, 0.99), low, high)
    total_ns = sum(int(r.sm) for r in rows if r.sm is not None)
    return {
        "mode_id": mid,
        "mode": name,
        "kind": kind,
        "series_ids": ids,
        "n": n,
        "n_ok": n_ok,
        "n_error": sum(r.n_error for r in rows),
        "n_timeout": sum(r.n_timeout for r in rows),
        "availability": n_ok / ran if ran > 0 else None,
        "count": cnt,
        "mean_ms": total_ns / cnt / NS_PER_MS if cnt else None,
        "min_ms": ms(low),
        "p50_ms": ms(q[0]),
        "p90_ms": ms(q[1]),
        "p95_ms": ms(q[2]),
        "p99_ms": ms(q[3]),
        "max_ms": ms(high),
        "histogram": [(float(bucket_value(i + lo)) / NS_PER_MS, int(hist[i])) for i in nz],
    }


def compare_probe(
    conn: Connection,
    target_id: int,
    start: datetime,
    end: datetime,
    *,
    probe: str = "connping",
    phase: str = "total",
    baseline: str = "dedicated",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CompareResult:
    """Per-mode distribution of ``probe``'s samples over ``[start, end)`` and ratios."""
    check_phase(phase)
    check_range(start, end)
    if probe not in PROBES:
        raise ValueError(f"probe: {probe!r} is not one of {', '.join(PROBES)}")
    p = choose(start, end, MAX_BLOCKS, allow_raw=False)
    a, b = p.data_start, p.data_end
    params = {"t": target_id, "p": probe, "a": a, "b": b, "step": p.step}
    meta = conn.execute(
        text(
            "select m.id, m.name, m.kind, coalesce(array_agg(s.id order by s.id) "
            "filter (where s.id is not null), '{}') from modes m "
            "left join series s on s.mode_id = m.id and s.probe = :p "
            "where m.target_id = :t group by m.id order by m.id"
        ),
        params,
    ).all()
    rows = conn.execute(
        text(
            f"select s.mode_id, date_bin(:step, r.bucket, {ORIGIN_SQL}) as bucket, r.n, "
            f"r.n_skipped, r.n_ok, r.n_error, r.n_timeout, r.{phase}_min as mn, "
            f"r.{phase}_max as mx, r.{phase}_sum as sm, r.{phase}_hi as hi, r.{phase}_hc as hc "
            f"from {p.grain.table} r join series s on s.id = r.series_id "
            "join modes m on m.id = s.mode_id "
            "where m.target_id = :t and s.probe = :p and r.bucket >= :a and r.bucket < :b"
        ),
        params,
    ).all()
    by_mode: dict[int, list[Any]] = {}
    for r in rows:
        by_mode.setdefault(r.mode_id, []).append(r)
    ends = [i for r in rows if r.hi for i in (min(r.hi), max(r.hi))]
    lo = min(ends, default=0)
    width = max(ends) - lo + 1 if ends else 1
    rng = np.random.default_rng(seed)
    stats: list[dict[str, Any]] = []
    medians: dict[int, float] = {}
    boots: dict[int, npt.NDArray[np.float64]] = {}
    for mid, name, kind, ids in meta:
        mrows = by_mode.get(mid, [])
        mat = _blocks(mrows, lo, width, a, p.step)
        s = _mode_stats(mid, name, kind, list(ids), mrows, mat, lo)
        stats.append(s)
        if s["count"]:
            medians[mid] = float(_medians(mat.sum(axis=0)[None, :], lo)[0])
            if mat.shape[0] >= 2:
                boots[mid] = _boot_medians(mat, lo, n_boot, rng)
    base = next((s for s in stats if s["kind"] == baseline and s["count"]), None)
    if base is not None:
        _ratios(stats, base, medians, boots, confidence)
    return CompareResult(
        target_id=target_id,
        phase=phase,
        start=a,
        end=b,
        block=p.step,
        source=p.grain.name,
        baseline=baseline if base is not None else None,
        confidence=confidence,
        modes=[ModeStats(**s) for s in stats],
    )


def _ratios(
    stats: list[dict[str, Any]],
    base: dict[str, Any],
    medians: dict[int, float],
    boots: dict[int, npt.NDArray[np.float64]],
    confidence: float,
) -> None:
    """Ratio of medians against ``base``, its bootstrap CI, p-value and significance."""
    bid = base["mode_id"]
    tail = (1.0 - confidence) / 2
    for s in stats:
        mid = s["mode_id"]
        if mid not in medians:
            continue
        s["ratio"] = medians[mid] / medians[bid]
        if mid == bid or mid not in boots or bid not in boots:
            continue
        r = boots[mid] / boots[bid]
        r = r[np.isfinite(r)]
        if not r.size:
            continue
        s["ci_low"], s["ci_high"] = (float(x) for x in np.quantile(r, [tail, 1 - tail]))
        one_side = min(float(np.mean(r <= 1.0)), float(np.mean(r >= 1.0)))
        s["p_value"] = min(1.0, max(2.0 * one_side, 1.0 / r.size))
        s["significant"] = not s["ci_low"] <= 1.0 <= s["ci_high"]
