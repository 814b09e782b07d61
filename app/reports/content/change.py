"""Week over week, only where it is real: is a p95 (or availability) change more than noise?

A p95 change is called **slower** or **faster** only when all three hold:

1. **resolution**: it is larger than 4 %. Each p95 is within 1.96 % of the exact value
   (the store's log buckets), so two of them can differ by up to 4 % (one bucket) with
   no change at all: a smaller change has no direction we can trust. A step of exactly
   one bucket (+4.0 % / -3.8 %) is within it, whatever the floating-point rounding of
   the two bucket values;
2. **sampling noise**: the 95 % interval of the ratio this period / previous period
   excludes 1. The interval comes from a block bootstrap: each period is cut into
   blocks of 6 hours (a month: days), blocks are resampled with replacement 400 times
   per period, and each resample's p95 is read off its merged histogram (interpolated
   inside its bucket, so ratios are not stuck to 4 % steps). Blocks, not samples,
   because latency drifts within a day: resampling single samples would call every
   difference real. Fewer than 4 blocks with samples in either period: too little
   data to tell;
3. **week-to-week noise**: where the trend has at least 4 earlier changes, the change
   is larger than twice their typical size (1.2533 x the mean absolute log change
   without the largest one: a standard deviation that one incident week does not
   inflate): a week that moves as much as ordinary weeks do is not news.

Otherwise it is "no clear change", whatever its sign. Availability is not an estimate
but what happened (every failed run counts against it, as against an SLO): any change
of at least 0.01 percentage points, the precision shown, is called lower or higher.
The bootstrap is seeded: the same data always gives the same verdict.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from app.reports.content.figures import Blocks
from app.store.histogram.buckets import GAMMA

RESOLUTION = GAMMA - 1.0  # 4 %: two percentiles each within 1.96 % may differ by one bucket
N_BOOT = 400
CONFIDENCE = 0.95
MIN_BLOCKS = 4
MIN_HISTORY = 4
NOISE_K = 2.0
AVAIL_PRECISION = 0.01  # percentage points shown


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a change means: ``slower``/``faster`` (latency), ``lower``/``higher``
    (availability), ``no clear change`` or ``no previous period``."""

    word: str
    change: float | None  # percent (latency) or percentage points (availability)
    ci_low: float | None = None  # same unit as change
    ci_high: float | None = None
    noise: float | None = None  # percent: the week-to-week threshold (NOISE_K x typical change)
    reason: str = ""

    @property
    def real(self) -> bool:
        return self.word in ("slower", "faster", "lower", "higher")

    @property
    def worse(self) -> bool:
        return self.word in ("slower", "lower")


def interp_quantile(h: npt.NDArray[np.float64], lo: int, q: float) -> npt.NDArray[np.float64]:
    """Quantile (ns) of each histogram row, placed geometrically inside its bucket.

    The rank-``ceil(q n)`` value lies in bucket ``i`` = ``(GAMMA^(i-1), GAMMA^i]``; putting it
    at the fraction of that bucket's count it sits at keeps it in the bucket (so the
    1.96 % bound holds) while making ratios vary smoothly.
    """
    cum = np.cumsum(h, axis=1)
    tot = cum[:, -1]
    rank = np.maximum(1.0, np.ceil(q * tot - 1e-9))
    pos = np.minimum((cum < rank[:, None]).sum(axis=1), h.shape[1] - 1)
    rows = np.arange(h.shape[0])
    before = np.where(pos > 0, cum[rows, np.maximum(pos - 1, 0)], 0.0)
    inb = np.maximum(h[rows, pos], 1.0)
    frac = np.clip((rank - before) / inb, 0.0, 1.0)
    out = np.power(GAMMA, pos + lo - 1 + frac)
    out[tot == 0] = np.nan
    return np.asarray(out, dtype=np.float64)


def resample_weights(rng: np.random.Generator, nb: int, n: int = N_BOOT) -> npt.NDArray[np.float64]:
    """``n`` bootstrap resamples of ``nb`` blocks as weights [n, nb]: how often each block
    was drawn (``nb`` uniform draws with replacement; the same law as a multinomial, drawn
    in one call instead of one per resample)."""
    draws = rng.integers(0, nb, size=(n, nb))
    flat = np.bincount((draws + nb * np.arange(n)[:, None]).ravel(), minlength=n * nb)
    return np.asarray(flat.reshape(n, nb), dtype=np.float64)


def boot_quantile(
    w: npt.NDArray[np.float64], h: npt.NDArray[np.float64], lo: int, q: float
) -> npt.NDArray[np.float64]:
    """:func:`interp_quantile` of each resample ``w @ h`` (``w``: [resamples, blocks]
    whole-number weights, ``h``: [blocks, buckets] counts), computed on the few columns it
    can fall in: a resample's quantile lies between the blocks' own quantiles (a mixture's
    quantile is bounded by its components'), so only that window's cumulative counts are
    formed (``w @ cumsum(h)``, exact in float64 for counts), not the whole histogram of
    every resample. Resamples whose rank falls outside the window (rare discreteness
    edges) are computed in full. No BLAS call: a small multithreaded BLAS product on a
    busy machine costs 30x a single thread's."""
    cum = np.cumsum(h, axis=1)
    tot_b = cum[:, -1]
    has = tot_b > 0
    if not has.any():
        return np.full(w.shape[0], np.nan)
    rank_b = np.maximum(1.0, np.ceil(q * tot_b[has] - 1e-9))
    pos_b = (cum[has] < rank_b[:, None]).sum(axis=1)
    a, z = int(pos_b.min()), int(pos_b.max()) + 1
    a0 = max(a - 1, 0)
    win = np.einsum("rb,bc->rc", w, cum[:, a0:z])  # cumulative counts at columns a0..z-1
    tot = np.einsum("rb,b->r", w, tot_b)
    rank = np.maximum(1.0, np.ceil(q * tot - 1e-9))
    below = win[:, 0] if a > 0 else np.zeros(w.shape[0])
    k = (win[:, a - a0 :] < rank[:, None]).sum(axis=1)  # columns of the window before it
    pos = a + k
    rows = np.arange(w.shape[0])
    kk = np.minimum(k, z - a - 1) + (a - a0)
    at = win[rows, kk]
    before = np.where(k > 0, win[rows, np.maximum(kk - 1, 0)], below)
    inb = np.maximum(at - before, 1.0)
    frac = np.clip((rank - before) / inb, 0.0, 1.0)
    out = np.power(GAMMA, pos + lo - 1 + frac)
    out[tot == 0] = np.nan
    bad = (tot > 0) & ((rank <= below) | (k >= z - a))
    if bad.any():
        out[bad] = interp_quantile(np.einsum("rb,bc->rc", w[bad], h), lo, q)
    return np.asarray(out, dtype=np.float64)


@dataclass(slots=True)
class ModeBlocks:
    """One mode's blocks in one period: per site a [blocks, buckets] matrix, per block counts."""

    hists: list[npt.NDArray[np.float64]]  # one per series, rows = the period's block slots
    lo: int

    @property
    def timed_blocks(self) -> int:
        if not self.hists:
            return 0
        return int(np.count_nonzero(sum(h.sum(axis=1) for h in self.hists)))


def mode_blocks(
    b: Blocks, series_ids: tuple[int, ...], start: datetime, end: datetime
) -> ModeBlocks:
    """The mode's blocks in ``[start, end)`` on one time grid for all its sites, the
    histogram columns trimmed to the buckets the mode uses (the resampling's cost)."""
    per_site = [b.rows(sid, start, end) for sid in series_ids]
    rows = np.concatenate(per_site) if per_site else np.zeros(0, dtype=np.int64)
    slots, where = np.unique(b.starts()[rows], return_inverse=True)
    used = np.nonzero(b.hist[rows].sum(axis=0))[0] if rows.size else np.zeros(0, dtype=np.int64)
    c0, c1 = (int(used.min()), int(used.max()) + 1) if used.size else (0, 1)
    hists = []
    k = 0
    for site_rows in per_site:
        m = np.zeros((slots.size, c1 - c0))
        np.add.at(m, where[k : k + site_rows.size], b.hist[site_rows, c0:c1])
        k += site_rows.size
        hists.append(m)
    return ModeBlocks(hists, b.lo + c0)


def _boot_p95(mb: ModeBlocks, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """N_BOOT resampled p95s (ns) of the mode: the worst site's in each resample."""
    nb = mb.hists[0].shape[0]
    w = resample_weights(rng, nb)
    per_site = [boot_quantile(w, h, mb.lo, 0.95) for h in mb.hists]
    return np.asarray(np.fmax.reduce(np.vstack(per_site), axis=0), dtype=np.float64)


def history_noise(p95s: list[float | None]) -> float | None:
    """NOISE_K x the typical size (percent) of earlier week-to-week log changes.

    The spread is 1.2533 x the mean absolute change (a standard deviation for normal
    changes) with the single largest change left out, so one incident week does not
    widen it. Not the median: weekly p95s move in steps of one 4 % bucket, so most changes
    are exactly 0 and a median would call every step news.
    """
    changes = [abs(math.log(b / a)) for a, b in itertools.pairwise(p95s) if a and b and a > 0]
    if len(changes) < MIN_HISTORY:
        return None
    kept = sorted(changes)[:-1] if len(changes) > MIN_HISTORY else changes
    sigma = 1.2533 * float(np.mean(kept))
    return (math.exp(NOISE_K * sigma) - 1.0) * 100.0


def latency_verdict(
    cur: float | None,
    prev: float | None,
    cur_blocks: ModeBlocks,
    prev_blocks: ModeBlocks,
    history: list[float | None],
    seed: int,
) -> Verdict:
    """The verdict on a p95 going from ``prev`` to ``cur`` (ms); ``history``: earlier
    periods' p95s, oldest first, ending with ``prev``'s period."""
    if cur is None:
        return Verdict("no data", None)
    if prev is None or prev <= 0:
        return Verdict("no previous period", None)
    change = (cur / prev - 1.0) * 100.0
    noise = history_noise(history)
    lo = hi = None
    enough = cur_blocks.timed_blocks >= MIN_BLOCKS and prev_blocks.timed_blocks >= MIN_BLOCKS
    if enough:
        rng = np.random.default_rng(seed)
        ratios = _boot_p95(cur_blocks, rng) / _boot_p95(prev_blocks, rng)
        ratios = ratios[np.isfinite(ratios)]
        if ratios.size:
            a = (1.0 - CONFIDENCE) / 2.0
            q_lo, q_hi = np.quantile(ratios, (a, 1.0 - a))
            lo, hi = (float(q_lo) - 1.0) * 100.0, (float(q_hi) - 1.0) * 100.0
    word = "slower" if change > 0 else "faster"
    if abs(math.log(cur / prev)) <= math.log1p(RESOLUTION) * (1.0 + 1e-9):  # rounding
        reason = f"within the store's resolution ({RESOLUTION * 100:.0f} %)"
    elif lo is None or hi is None:
        reason = "too few hours with samples to tell it from noise"
    elif lo <= 0.0 <= hi:
        reason = "the 95 % interval includes no change"
    elif (
        noise is not None
        and abs(change) <= noise
        and abs(math.log(cur / prev)) <= math.log1p(noise / 100.0)
    ):
        reason = f"no larger than ordinary week-to-week moves (±{noise:.0f} %)"
    else:
        return Verdict(word, change, lo, hi, noise, "")
    return Verdict("no clear change", change, lo, hi, noise, reason)


def availability_verdict(cur: float | None, prev: float | None) -> Verdict:
    """Availability (percent) from ``prev`` to ``cur``: a fact of what happened, not an
    estimate, so any change of at least the precision shown is lower or higher."""
    if cur is None or prev is None:
        return Verdict("no previous period" if prev is None else "no data", None)
    diff = cur - prev
    if abs(diff) < AVAIL_PRECISION:
        return Verdict("no clear change", diff, reason="unchanged at the precision shown")
    return Verdict("lower" if diff < 0 else "higher", diff)
