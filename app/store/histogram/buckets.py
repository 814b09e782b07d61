"""The log-bucket histogram scheme shared by rollups, queries and tests.

A timing of ``v`` nanoseconds (``v >= 1``) falls in bucket ``i = ceil(ln(v) / ln(GAMMA))``,
which holds the values in ``(GAMMA^(i-1), GAMMA^i]``; 0 ns falls in bucket 0 with 1 ns.
A bucket is reported as ``2 * GAMMA^i / (GAMMA + 1)``, whose distance to any value in
the bucket is at most ``(GAMMA - 1) / (GAMMA + 1)`` of that value: 1.96 % for
``GAMMA = 1.04``. Histograms merge by adding counts per index, so a percentile over
any union of rollup rows keeps that bound: the rank-``ceil(q*n)`` value (nearest
rank, what ``percentile_disc`` returns) lies in the bucket found by a cumulative
count, and its representative is within 1.96 % of it. Clamping to the exact min/max
of the merged rows can only move the estimate closer.

Indexes fit ``smallint``: 1000 s is bucket 705.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

GAMMA = 1.04
LN_GAMMA = math.log(GAMMA)
MAX_RELATIVE_ERROR = (GAMMA - 1) / (GAMMA + 1)
QUANTILES = (0.5, 0.95, 0.99)

# The same mapping in SQL (kept textually identical in every statement that bins).
SQL_INDEX = "ceil(ln(greatest({v}, 1)::float8) / ln(1.04))::smallint"
SQL_VALUE = "(2 * power(1.04::float8, {i}) / 2.04)"


def bucket_index(values_ns: npt.ArrayLike) -> npt.NDArray[np.int16]:
    """Bucket index of each value (nanoseconds)."""
    v = np.maximum(np.asarray(values_ns, dtype=np.float64), 1.0)
    return np.ceil(np.log(v) / LN_GAMMA).astype(np.int16)


def bucket_value(index: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Representative value (nanoseconds) of each bucket index."""
    i = np.asarray(index, dtype=np.float64)
    return np.asarray(2.0 * np.power(GAMMA, i) / (GAMMA + 1.0), dtype=np.float64)


def quantiles(
    idx: Sequence[int] | npt.NDArray[np.integer],
    cnt: Sequence[int] | npt.NDArray[np.integer],
    qs: Sequence[float] = QUANTILES,
    lo: float | None = None,
    hi: float | None = None,
) -> list[float | None]:
    """Nearest-rank quantiles (ns) of a histogram given as parallel index/count arrays.

    Indexes may repeat and need not be sorted. ``lo``/``hi`` (exact min/max) clamp.
    """
    i = np.asarray(idx, dtype=np.int64)
    c = np.asarray(cnt, dtype=np.int64)
    if i.size == 0 or int(c.sum()) == 0:
        return [None for _ in qs]
    order = np.argsort(i, kind="stable")
    i, c = i[order], c[order]
    cum = np.cumsum(c)
    total = int(cum[-1])
    out: list[float | None] = []
    for q in qs:
        rank = max(1, math.ceil(q * total - 1e-9))
        pos = int(np.searchsorted(cum, rank, side="left"))
        v = float(bucket_value(i[pos]))
        if lo is not None:
            v = max(v, lo)
        if hi is not None:
            v = min(v, hi)
        out.append(v)
    return out


def exact_quantiles(values: Sequence[float], qs: Sequence[float] = QUANTILES) -> list[float]:
    """Nearest-rank quantiles of raw values (the definition ``percentile_disc`` uses)."""
    s = np.sort(np.asarray(values, dtype=np.float64))
    n = s.size
    return [float(s[max(1, math.ceil(q * n - 1e-9)) - 1]) for q in qs]
