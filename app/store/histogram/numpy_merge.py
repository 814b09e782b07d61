"""Merging many histograms in numpy instead of SQL, for merges over thousands of rows.

SQL merges (``unnest`` + ``group by`` + window functions) cost several microseconds
per histogram entry; a year of hourly rows for one series holds ~200 000 entries.
Here PostgreSQL flattens the rows' index and count arrays into text lists, numpy
parses them in C and adds them into a dense matrix with one vectorised
``np.bincount``; quantiles are read off its cumulative counts with the same
nearest-rank rule and clamping as the SQL path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from app.samples import availability_ratio
from app.store.histogram.buckets import bucket_value
from app.store.layout import driver_connection


def matrix_quantiles(
    m: npt.NDArray[np.float64],
    lo: int,
    qs: Sequence[float],
    mins: npt.NDArray[np.float64] | None = None,
    maxs: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.float64]:
    """Nearest-rank quantiles (ns) per matrix row, shape [rows, len(qs)]; NaN for empty rows."""
    cum = np.cumsum(m, axis=1)
    tot = cum[:, -1]
    out = np.empty((m.shape[0], len(qs)))
    for j, q in enumerate(qs):
        rank = np.maximum(1.0, np.ceil(q * tot - 1e-9))
        pos = (cum < rank[:, None]).sum(axis=1)
        v = bucket_value(np.minimum(pos, m.shape[1] - 1) + lo)
        if mins is not None:
            v = np.maximum(v, mins)
        if maxs is not None:
            v = np.minimum(v, maxs)
        v[tot == 0] = np.nan
        out[:, j] = v
    return out


def dense(
    row: npt.NDArray[np.int64], col: npt.NDArray[np.int64], cnt: npt.NDArray[np.int64], nrows: int
) -> npt.NDArray[np.float64]:
    """A [nrows, max(col) + 1] matrix with ``cnt`` added at each (row, col), repeats summed.

    ``np.bincount`` over flat positions: several times faster than ``np.add.at``.
    """
    width = int(col.max()) + 1 if col.size else 1
    flat = np.bincount(row * width + col, weights=cnt.astype(np.float64), minlength=nrows * width)
    return np.asarray(flat, dtype=np.float64).reshape(nrows, width)


def _psql(sql: str) -> str:
    """``:name`` placeholders (SQLAlchemy style) to psycopg's ``%(name)s``."""
    return re.sub(r"(?<!:):([a-z_]+)", r"%(\1)s", sql)


@dataclass(frozen=True, slots=True)
class Merged:
    """One merged group: counts, and one timing's count/min/max/sum/percentiles (ns)."""

    n: int
    n_ok: int
    n_error: int
    n_timeout: int
    n_skipped: int
    count: int
    min: float | None
    max: float | None
    sum: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    p5: float | None = None
    n_probe: int = 0  # probe-side errors (not the target's; app.samples.ErrorClass.PROBE)

    @property
    def availability(self) -> float | None:
        """ok / runs that measured the target (skipped and probe-side runs left out)."""
        return availability_ratio(self.n_ok, self.n, self.n_skipped, self.n_probe)


MERGE_QUANTILES = (0.05, 0.5, 0.95, 0.99)


def rollup_columns(phase: str, prefix: str = "") -> str:
    """The columns :func:`merge` expects after the key columns ``k1..kN``, for one phase."""
    r = prefix
    return (
        f"{r}n, {r}n_ok, {r}n_error, {r}n_timeout, {r}n_skipped, {r}{phase}_n as pn, "
        f"{r}{phase}_min as pmin, {r}{phase}_max as pmax, {r}{phase}_sum as psum, "
        f"{r}{phase}_hi as hi, {r}{phase}_hc as hc, {r}n_probe"
    )


def _ints(text_list: str | None) -> npt.NDArray[np.int64]:
    """Integers from ``1,2,3`` or from concatenated array literals ``{1,2}{3}``."""
    if not text_list:
        return np.zeros(0, dtype=np.int64)
    if text_list[0] == "{":
        text_list = text_list[1:-1].replace("}{", ",")
    return np.fromstring(text_list, dtype=np.int64, sep=",")


def merged_matrix(
    conn: Connection, src: str, params: Mapping[str, Any], nkeys: int = 1
) -> tuple[list[Any], npt.NDArray[np.float64], int]:
    """Merge rollup rows per key, keeping the histograms as a dense matrix.

    ``src`` selects key columns named ``k1..kN`` then :func:`rollup_columns`. Returns
    one row per key, ordered by key, ``(k1..kN, gid, n, n_ok, n_error, n_timeout,
    n_skipped, count, min, max, sum, n_probe)``, the matching rows of a dense histogram matrix
    and the bucket index of its first column. Counts, min, max and sums are aggregated
    in SQL in one grouped pass; each group's histograms travel as three integer lists
    (lengths, indexes, counts; the latter two as concatenated array literals,
    PostgreSQL's cheapest text form) parsed by numpy in C and added into the matrix,
    so a merge costs little per entry on either side.
    """
    keys = ", ".join(f"k{i}" for i in range(1, nkeys + 1))
    sql = (
        f"select {keys}, (row_number() over (order by {keys}) - 1)::int as gid, "
        "sum(n)::bigint as n, sum(n_ok)::bigint as n_ok, sum(n_error)::bigint as n_error, "
        "sum(n_timeout)::bigint as n_timeout, sum(n_skipped)::bigint as n_skipped, "
        "coalesce(sum(pn), 0)::bigint as pn, min(pmin) as pmin, max(pmax) as pmax, "
        "sum(psum)::float8 as psum, "
        "string_agg(cardinality(hi)::text, ',') as lens, "
        "string_agg(hi::text, '') as his, string_agg(hc::text, '') as hcs, "
        "sum(n_probe)::bigint as n_probe "
        f"from ({src}) src group by {keys} order by {keys}"
    )
    raw = driver_connection(conn)
    with raw.cursor() as cur:
        cur.execute(_psql(sql), params)
        rows = cur.fetchall()
    if not rows:
        return [], np.zeros((0, 1)), 0
    k = nkeys
    groups = [(*r[: k + 10], r[k + 13]) for r in rows]  # ..., sum, n_probe
    per_group = [_ints(r[k + 10]) for r in rows]  # histogram lengths of each group's rows
    lens = np.concatenate(per_group) if per_group else np.zeros(0, dtype=np.int64)
    if not lens.size:
        return groups, np.zeros((len(rows), 1)), 0
    owner = np.repeat(np.arange(len(rows)), [p.size for p in per_group])
    idx = _ints("".join(r[k + 11] or "" for r in rows))
    cnt = _ints("".join(r[k + 12] or "" for r in rows))
    lo = int(idx.min())
    return groups, dense(np.repeat(owner, lens), idx - lo, cnt, len(rows)), lo


def merge(
    conn: Connection, src: str, params: Mapping[str, Any], nkeys: int = 1
) -> dict[Any, Merged]:
    """Merge rollup rows per key (see :func:`merged_matrix`); keys are single values
    (``nkeys == 1``) or tuples."""
    rows, m, lo = merged_matrix(conn, src, params, nkeys)
    if not rows:
        return {}
    k = nkeys
    mins = np.array([r[k + 7] for r in rows], dtype=np.float64)  # None -> nan
    maxs = np.array([r[k + 8] for r in rows], dtype=np.float64)
    q = matrix_quantiles(m, lo, MERGE_QUANTILES, mins, maxs)
    out: dict[Any, Merged] = {}
    for i, r in enumerate(rows):
        key = r[0] if k == 1 else tuple(r[:k])
        count = int(r[k + 6])
        has = count > 0 and bool(np.isfinite(q[i, 1]))
        out[key] = Merged(
            int(r[k + 1]), int(r[k + 2]), int(r[k + 3]), int(r[k + 4]), int(r[k + 5]), count,
            float(r[k + 7]) if count and r[k + 7] is not None else None,
            float(r[k + 8]) if count and r[k + 8] is not None else None,
            float(r[k + 9]) if count and r[k + 9] is not None else None,
            float(q[i, 1]) if has else None,
            float(q[i, 2]) if has else None,
            float(q[i, 3]) if has else None,
            float(q[i, 0]) if has else None,
            int(r[k + 10]),
        )  # fmt: skip
    return out


def histogram_columns(phase: str) -> str:
    """The columns :func:`row_quantiles` reads from each row: one timing's histogram as text."""
    return f"{phase}_min, {phase}_max, cardinality({phase}_hi), {phase}_hi::text, {phase}_hc::text"


def row_quantiles(
    rows: Sequence[Sequence[Any]], first: int, qs: Sequence[float]
) -> npt.NDArray[np.float64]:
    """Quantiles (ns) of each row's own histogram, shape [rows, len(qs)]; NaN where empty.

    ``rows[i][first:first + 5]`` are the :func:`histogram_columns` of row ``i``. The
    text arrays of all rows are joined and parsed by numpy at once, like a merge whose
    groups each hold one row (same nearest-rank rule, same clamping to min/max).
    """
    if not rows:
        return np.zeros((0, len(qs)))
    lens = np.array([r[first + 2] or 0 for r in rows], dtype=np.int64)
    if not lens.sum():
        return np.full((len(rows), len(qs)), np.nan)
    idx = _ints("".join(r[first + 3] or "" for r in rows if r[first + 2]))
    cnt = _ints("".join(r[first + 4] or "" for r in rows if r[first + 2]))
    lo = int(idx.min())
    m = dense(np.repeat(np.arange(len(rows)), lens), idx - lo, cnt, len(rows))
    mins = np.array([r[first] for r in rows], dtype=np.float64)
    maxs = np.array([r[first + 1] for r in rows], dtype=np.float64)
    return matrix_quantiles(m, lo, qs, mins, maxs)
