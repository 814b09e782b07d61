"""Rollup rows of synthetic history, binned in numpy as the store's rollups would be.

:func:`bucket_rows` turns one series' simulated day (values, histogram bucket indexes,
status and error per slot) into the rows of a rollup table, every bucket at once: the
same count, min, max, sum, nearest-rank p50/p95/p99 and sparse histogram that
:mod:`app.store.write.rollups` computes from raw samples, so history generated here reads
the same as history rolled up from real samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from app.store.histogram.buckets import bucket_value

_NO_INDEX = np.int16(np.iinfo(np.int16).max)  # sorts after every real bucket index


def bucket_rows(
    series_id: int | Sequence[int],
    phases: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.int16]]],
    status: npt.NDArray[np.uint8],
    err: npt.NDArray[np.int8],
    errors: tuple[tuple[int, str, str, str, str], ...],
    day_start: datetime,
    width_s: int,
    per: int,
) -> list[tuple[Any, ...]]:
    """Rollup rows of one day: buckets of ``per`` consecutive slots, series after series.

    One series (``series_id`` an int, arrays of slots) or several at once (a sequence of
    ids, arrays of [series, slots]: one pass for all of them). ``phases`` maps a timing
    phase to (values ns, their histogram bucket indexes); phases absent from it are NULL
    in every row (not measured by that probe kind).
    """
    ids = [series_id] if isinstance(series_id, int) else list(series_id)
    nb = status.shape[-1] // per

    def rows(a: npt.NDArray[Any]) -> npt.NDArray[Any]:  # [series * buckets, per]
        return a.reshape(len(ids), -1)[:, : nb * per].reshape(len(ids) * nb, per)

    st = rows(status)
    okm = st == 0
    n_ok = okm.sum(axis=1)
    n_err = (st == 1).sum(axis=1)
    n_to = (st == 2).sum(axis=1)
    cols = {p: _phase_cells(rows(v), rows(i), okm, n_ok) for p, (v, i) in phases.items()}
    bad_b = np.flatnonzero(n_err + n_to)
    ecls_of: dict[int, Any] = {}
    ecode_of: dict[int, Any] = {}
    if bad_b.size:
        # per bucket with failures: how many of each error spec (one bincount for the day)
        e = rows(err)[bad_b]
        failed = ~okm[bad_b]
        rows_of = np.repeat(np.arange(bad_b.size), per).reshape(bad_b.size, per)[failed]
        k = len(errors)
        per_spec = np.bincount(
            rows_of * k + e[failed].astype(np.int64), minlength=bad_b.size * k
        ).reshape(bad_b.size, k)
        for j, b in enumerate(bad_b.tolist()):
            ecls: dict[str, int] = {}
            ecode: dict[str, int] = {}
            for spec_i in np.flatnonzero(per_spec[j]).tolist():
                c, spec = int(per_spec[j, spec_i]), errors[spec_i]
                ecls[spec[1]] = ecls.get(spec[1], 0) + c
                ecode[spec[2]] = ecode.get(spec[2], 0) + c
            ecls_of[b], ecode_of[b] = Jsonb(ecls), Jsonb(ecode)
    empty = [None] * 9
    none_cols = {p: [empty] * okm.shape[0] for p in _ROLLUP_PHASES if p not in cols}
    cols.update(none_cols)
    ordered = [cols[p] for p in _ROLLUP_PHASES]
    n_ok_l, n_err_l, n_to_l = n_ok.tolist(), n_err.tolist(), n_to.tolist()
    out: list[tuple[Any, ...]] = []
    times = [day_start + timedelta(seconds=b * width_s) for b in range(nb)]
    for b in range(okm.shape[0]):
        row: list[Any] = [
            ids[b // nb], times[b % nb], per, n_ok_l[b], n_err_l[b], n_to_l[b], 0, 0,
            ecls_of.get(b), ecode_of.get(b),  # n_skipped, n_probe: synthetic has neither
        ]  # fmt: skip
        for cells in ordered:
            row += cells[b]
        out.append(tuple(row))
    return out


_ROLLUP_PHASES = ("total", "logon", "ping", "query", "logoff", "commit", "acquire")


def _phase_cells(
    values: npt.NDArray[np.int64],
    index: npt.NDArray[np.int16],
    okm: npt.NDArray[np.bool_],
    n_ok: npt.NDArray[np.int64],
) -> list[list[Any]]:
    """One phase's 9 rollup cells per bucket (``values``, ``index``: [buckets, per];
    ``[None] * 9`` where nothing was ok): count, min, max, sum, p50, p95, p99 and the
    histogram as (bucket indexes, counts), all buckets at once (one sort, one pass over
    the run starts)."""
    nb, per = okm.shape
    # the ok samples' bucket indexes sorted per bucket (failures last, as a sentinel):
    # the nearest-rank value of rank r lies in bucket srt[r - 1], as in the merged form
    idx = np.sort(np.where(okm, index, _NO_INDEX), axis=1)
    v = values
    big = np.iinfo(np.int64).max
    vmin = np.where(okm, v, big).min(axis=1)
    vmax = np.where(okm, v, -1).max(axis=1)
    vsum = np.where(okm, v, 0).sum(axis=1)
    qs = []
    for q in (0.5, 0.95, 0.99):
        rank = np.maximum(1, np.ceil(q * n_ok - 1e-9).astype(np.int64))
        at = np.where(n_ok > 0, idx[np.arange(nb), np.minimum(rank, per) - 1], 0)
        rep = bucket_value(at)
        qs.append(np.minimum(np.maximum(rep, vmin.astype(np.float64)), vmax.astype(np.float64)))
    # runs of equal indexes among each bucket's ok samples: their first position and length
    starts = np.ones((nb, per), dtype=bool)
    starts[:, 1:] = idx[:, 1:] != idx[:, :-1]
    starts &= np.arange(per)[None, :] < n_ok[:, None]
    pos = np.flatnonzero(starts)
    row = pos // per
    same = np.zeros(pos.size, dtype=bool)
    same[:-1] = row[1:] == row[:-1]
    nxt = np.empty_like(pos)
    nxt[:-1] = pos[1:]
    ends = np.where(same, nxt, row * per + n_ok[row])
    uniq = idx.ravel()[pos].tolist()
    counts = (ends - pos).tolist()
    off = np.concatenate([[0], np.cumsum(starts.sum(axis=1))]).tolist()
    n_l, lo_l, hi_l, sum_l = n_ok.tolist(), vmin.tolist(), vmax.tolist(), vsum.tolist()
    q50, q95, q99 = (q.tolist() for q in qs)
    empty = [None] * 9
    return [
        [n_l[b], lo_l[b], hi_l[b], sum_l[b], q50[b], q95[b], q99[b],
         uniq[off[b] : off[b + 1]], counts[off[b] : off[b + 1]]]
        if n_l[b] else empty
        for b in range(nb)
    ]  # fmt: skip
