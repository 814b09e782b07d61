"""The mode comparison in one sentence per target, with its confidence interval.

Each mode's median logon over the period against the baseline mode's (dedicated server
for Oracle, a direct connection for PostgreSQL), as the store's ``compare()`` computes it
(median interpolated inside its bucket; a 95 % block-bootstrap interval of the ratio, 400
resamples, seeded) but from the blocks the report has already read (1-hour rollups merged
into 6-hour blocks, a month: days; a mode's sites pooled per block): no query per target.
A difference whose interval includes no difference is said to be "not a clear difference".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.reports.content.change import (
    ModeBlocks,
    boot_quantile,
    interp_quantile,
    resample_weights,
)
from app.reports.content.scope import ModeScope

MODE_WORDS = {
    "dedicated": "dedicated server",
    "shared": "shared server",
    "pooled": "DRCP",
    "direct": "direct",
    "unix": "unix-socket",
    "pgbouncer_session": "pgbouncer (session)",
    "pgbouncer_transaction": "pgbouncer (transaction)",
}
BASELINE = {"oracle": "dedicated", "postgres": "direct"}
N_BOOT = 400
CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class ModeMedian:
    """One mode's median logon against the baseline's (ratio < 1: faster)."""

    mode_id: int
    mode: str
    kind: str
    count: int
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None


@dataclass(frozen=True, slots=True)
class ModeRatio:
    mode: str
    kind: str
    change_pct: float  # positive: faster than the baseline
    ci_low_pct: float | None
    ci_high_pct: float | None
    clear: bool


@dataclass(frozen=True, slots=True)
class Comparison:
    target: str
    baseline: str
    sentence: str
    ratios: list[ModeRatio]


def _words(kind: str, name: str) -> str:
    return MODE_WORDS.get(kind, name)


def _clause(m: ModeMedian, first: bool, base: str) -> tuple[str, ModeRatio] | None:
    if m.ratio is None:
        return None
    change = (1.0 - m.ratio) * 100.0
    word = "faster" if change > 0 else "slower"
    than = f" than {base}" if first else ""
    who = _words(m.kind, m.mode) + (" logons were" if first else "")
    if m.ci_low is None or m.ci_high is None:
        r = ModeRatio(m.mode, m.kind, change, None, None, False)
        return f"{who} {abs(change):.0f} % {word}{than} (too little data for an interval)", r
    lo, hi = sorted((abs((1.0 - m.ci_high) * 100.0), abs((1.0 - m.ci_low) * 100.0)))
    clear = bool(m.significant)
    r = ModeRatio(
        m.mode, m.kind, change, (1.0 - m.ci_high) * 100.0, (1.0 - m.ci_low) * 100.0, clear
    )
    if not clear:
        return (
            f"{who} {abs(change):.0f} % {word}{than}, not a clear difference",
            r,
        )
    digits = 0 if hi - lo >= 2 else 1
    return (
        f"{who} {abs(change):.{digits}f} % {word}{than}, 95 % CI {lo:.{digits}f}-{hi:.{digits}f} %",
        r,
    )


def _pooled(mb: ModeBlocks) -> npt.NDArray[np.float64]:
    """The mode's blocks with timings, its sites added up per block."""
    if not mb.hists:
        return np.zeros((0, 1))
    m = np.sum(mb.hists, axis=0)
    return np.asarray(m[m.sum(axis=1) > 0], dtype=np.float64)


def _medians(
    modes: list[ModeScope], blocks: dict[int, ModeBlocks], baseline: str
) -> list[ModeMedian]:
    rng = np.random.default_rng(0)
    med: dict[int, float] = {}
    boots: dict[int, npt.NDArray[np.float64]] = {}
    counts: dict[int, int] = {}
    for m in sorted(modes, key=lambda m: m.mode_id):
        mb = blocks.get(m.mode_id)
        h = _pooled(mb) if mb else np.zeros((0, 1))
        lo = mb.lo if mb else 0
        counts[m.mode_id] = int(h.sum())
        if not counts[m.mode_id]:
            continue
        med[m.mode_id] = float(interp_quantile(h.sum(axis=0)[None, :], lo, 0.5)[0])
        if h.shape[0] >= 2:
            nb = h.shape[0]
            w = resample_weights(rng, nb, N_BOOT)
            boots[m.mode_id] = boot_quantile(w, h, lo, 0.5)
    base = next((m for m in modes if m.kind == baseline and m.mode_id in med), None)
    out: list[ModeMedian] = []
    for m in modes:
        if base is None or m.mode_id not in med:
            out.append(ModeMedian(m.mode_id, m.mode, m.kind, counts.get(m.mode_id, 0)))
            continue
        ratio = med[m.mode_id] / med[base.mode_id]
        lo_r = hi_r = sig = None
        if m.mode_id in boots and base.mode_id in boots and m is not base:
            r = boots[m.mode_id] / boots[base.mode_id]
            r = r[np.isfinite(r)]
            if r.size:
                a = (1.0 - CONFIDENCE) / 2.0
                q_lo, q_hi = np.quantile(r, (a, 1.0 - a))
                lo_r, hi_r = float(q_lo), float(q_hi)
                sig = not (lo_r <= 1.0 <= hi_r)
        out.append(ModeMedian(m.mode_id, m.mode, m.kind, counts[m.mode_id], ratio, lo_r, hi_r, sig))
    return out


def compare_modes(modes: list[ModeScope], blocks: dict[int, ModeBlocks]) -> Comparison | None:
    """One target's sentence (None when it has no baseline mode or nothing to compare);
    ``blocks``: the period's logon blocks per mode id."""
    if len(modes) < 2:
        return None
    target = modes[0]
    baseline = BASELINE.get(target.target_kind, "dedicated")
    stats = _medians(modes, blocks, baseline)
    base = next((m for m in stats if m.kind == baseline and m.count), None)
    if base is None:
        return None
    base_words = _words(base.kind, base.mode)
    clauses: list[str] = []
    ratios: list[ModeRatio] = []
    for m in sorted(stats, key=lambda m: m.mode):
        if m.kind == baseline:
            continue
        got = _clause(m, not clauses, base_words)
        if got:
            clauses.append(got[0])
            ratios.append(got[1])
    if not clauses:
        return None
    sentence = "; ".join(clauses).replace(" %", "\u00a0%")  # "23.4 %" never splits
    return Comparison(target.target, base.mode, sentence[0].upper() + sentence[1:] + ".", ratios)
