"""The period's figures per mode, and the per-block histograms the change test resamples.

Everything is read from the store's 1-hour rollups in ONE pass per timing (logon,
ping) over the period and the one before it, merged per (series, block) in numpy
(:func:`app.store.histogram.numpy_merge.merged_matrix`): blocks are 6 hours for a
week, 1 day for a month. From those blocks:

- counts: ``n`` (runs), ``ok``, ``failed`` (error + timeout), ``skipped`` (the agent
  could not start the run in time; not counted in availability); failures the monitor
  caused itself (probe-side errors, class PROBE, which the rollups count in ``n_probe``
  and never in ``n_error``) are taken out of the runs and never count against
  availability;
- availability = ok / (n - skipped), in percent;
- p50/p95 of the ok samples' timing: the nearest-rank percentile of the merged
  histogram, clamped to the exact min/max (within 1.96 % of the exact value, the
  store's bound); a mode with several sites shows its worst site's latencies (as the
  overview does), its counts add up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from app.reports.content.period import Period
from app.reports.content.scope import ModeScope, Scope
from app.store.histogram.buckets import quantiles
from app.store.histogram.numpy_merge import merged_matrix, rollup_columns
from app.store.layout import ORIGIN_SQL, no_jit

NS_PER_MS = 1e6
PHASES = ("logon", "ping")


def block_width(period: Period) -> timedelta:
    return timedelta(hours=6) if period.kind == "week" else timedelta(days=1)


@dataclass(slots=True)
class Blocks:
    """One timing's rollups of some series merged per (series, block), as arrays."""

    series: npt.NDArray[np.int64]  # [rows]
    block: list[datetime]  # [rows] block start
    counts: npt.NDArray[np.int64]  # [rows, 5]: n, ok, error, timeout, skipped
    mins: npt.NDArray[np.float64]  # [rows] ns (nan: no timing)
    maxs: npt.NDArray[np.float64]
    hist: npt.NDArray[np.float64]  # [rows, width]
    lo: int  # bucket index of hist's first column
    index: dict[int, npt.NDArray[np.int64]] | None = None  # series -> its rows, built once
    at: npt.NDArray[np.float64] | None = None  # [rows] block start, epoch seconds (built once)

    def starts(self) -> npt.NDArray[np.float64]:
        if self.at is None:
            self.at = np.array([t.timestamp() for t in self.block], dtype=np.float64)
        return self.at

    def rows_of(self, sid: int) -> npt.NDArray[np.int64]:
        if self.index is None:
            order = np.argsort(self.series, kind="stable")
            ids, starts = np.unique(self.series[order], return_index=True)
            parts = np.split(order, starts[1:]) if len(order) else []
            self.index = {int(k): p.astype(np.int64) for k, p in zip(ids, parts, strict=True)}
        return self.index.get(sid, np.zeros(0, dtype=np.int64))

    def rows(self, sid: int, start: datetime, end: datetime) -> npt.NDArray[np.int64]:
        """``sid``'s rows whose block starts in ``[start, end)``."""
        mine = self.rows_of(sid)
        t = self.starts()[mine]
        return mine[(t >= start.timestamp()) & (t < end.timestamp())]


def read_blocks(
    conn: Connection, series_ids: list[int], start: datetime, end: datetime, *, phase: str,
    block: timedelta,
) -> Blocks:  # fmt: skip
    """``phase``'s 1-hour rollups of ``series_ids`` in ``[start, end)`` merged per block."""
    no_jit(conn)
    groups, mat, lo = merged_matrix(
        conn,
        f"select r.series_id as k1, date_bin(:step, r.bucket, {ORIGIN_SQL}) as k2, "
        f"{rollup_columns(phase, 'r.')} from rollup_1h r "
        "where r.series_id = any(:ids) and r.bucket >= :a and r.bucket < :b",
        {"ids": series_ids, "a": start, "b": end, "step": block},
        nkeys=2,
    )
    n = len(groups)
    counts = np.array([[int(v) for v in g[3:8]] for g in groups], dtype=np.int64).reshape(n, 5)
    # Failures the monitor caused itself (probe-side errors, class PROBE) are counted apart
    # by the rollups (n_probe, never in n_error): taken out of the runs here, so they never
    # count against the database.
    counts[:, 0] -= np.array([int(g[12] or 0) for g in groups], dtype=np.int64)
    return Blocks(
        series=np.array([g[0] for g in groups], dtype=np.int64),
        block=[g[1] for g in groups],
        counts=counts,
        mins=np.array([g[9] if g[8] else None for g in groups], dtype=np.float64),
        maxs=np.array([g[10] if g[8] else None for g in groups], dtype=np.float64),
        hist=mat,
        lo=lo,
    )


@dataclass(frozen=True, slots=True)
class Counts:
    n: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def ran(self) -> int:
        return self.n - self.skipped

    @property
    def availability(self) -> float | None:
        return 100.0 * self.ok / self.ran if self.ran > 0 else None


@dataclass(frozen=True, slots=True)
class ModeFigures:
    counts: Counts
    logon_p50_ms: float | None
    logon_p95_ms: float | None
    ping_p95_ms: float | None

    @property
    def empty(self) -> bool:
        return self.counts.n == 0


def _percentiles(b: Blocks, rows: npt.NDArray[np.int64]) -> tuple[float | None, float | None]:
    """p50 and p95 (ms) of the merged rows: nearest rank, clamped to the exact min/max."""
    if rows.size == 0:
        return None, None
    h = b.hist[rows].sum(axis=0)
    nz = np.nonzero(h)[0]
    if nz.size == 0:
        return None, None
    lo_v, hi_v = np.nanmin(b.mins[rows]), np.nanmax(b.maxs[rows])
    p50, p95 = quantiles(nz + b.lo, h[nz].astype(np.int64), (0.5, 0.95), lo_v, hi_v)
    return (
        None if p50 is None else p50 / NS_PER_MS,
        None if p95 is None else p95 / NS_PER_MS,
    )


def _worst(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def mode_figures(
    mode: ModeScope, logon: Blocks, ping: Blocks, start: datetime, end: datetime
) -> ModeFigures:
    """One mode's figures over ``[start, end)`` (blocks starting in it)."""
    n = ok = failed = skipped = 0
    p50s: list[float | None] = []
    p95s: list[float | None] = []
    ping95: list[float | None] = []
    for sid in mode.series_ids:
        rows = logon.rows(sid, start, end)
        if rows.size:
            c = logon.counts[rows].sum(axis=0)
            n, ok = n + int(c[0]), ok + int(c[1])
            failed, skipped = failed + int(c[2] + c[3]), skipped + int(c[4])
        p50, p95 = _percentiles(logon, rows)
        p50s.append(p50)
        p95s.append(p95)
        ping95.append(_percentiles(ping, ping.rows(sid, start, end))[1])
    return ModeFigures(Counts(n, ok, failed, skipped), _worst(p50s), _worst(p95s), _worst(ping95))


@dataclass(slots=True)
class PeriodData:
    """The blocks of both timings over the period and the one before it."""

    period: Period
    previous: Period
    logon: Blocks
    ping: Blocks

    def figures(self, mode: ModeScope) -> tuple[ModeFigures, ModeFigures]:
        cur = mode_figures(mode, self.logon, self.ping, self.period.start, self.period.end)
        prev = mode_figures(mode, self.logon, self.ping, self.previous.start, self.previous.end)
        return cur, prev


def read_period(conn: Connection, scope: Scope, period: Period) -> PeriodData:
    prev = period.previous()
    ids = scope.series_ids
    width = block_width(period)
    logon = read_blocks(conn, ids, prev.start, period.end, phase="logon", block=width)
    ping = read_blocks(conn, ids, prev.start, period.end, phase="ping", block=width)
    return PeriodData(period, prev, logon, ping)
