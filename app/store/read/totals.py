"""Cumulative figures per series since its first sample: what ``/metrics`` exports as
Prometheus counters and cumulative histograms.

Counted by the store from the samples written, so every web process, before and after
any restart, reads the same numbers: the sum of the series' weekly rollup rows
(``rollup_1w``) and of its ``rollup_retired`` row (weeks retention deleted, folded in by
the same transaction: :func:`app.store.write.partitions.retire_weeks`). The rollup pass
updates the current week's row in the same transaction as the minute it recomputes, so
a total only grows as samples are written (a sample reaches it with the next maintenance
pass, every ~10 s). It could only shrink if samples older than the raw retention were
written again (their minute is then recomputed from what is left), which Prometheus
would see as a counter reset.

Histograms use the store's own log buckets (bucket ``i`` holds ``(1.04^(i-1), 1.04^i]``
ns, :mod:`app.store.histogram.buckets`) grouped ``EXPORT_GROUP`` at a time, so each
exported upper bound ``le`` is exactly a store bucket edge and the cumulative count at
``le`` is exact: no sample is moved across a boundary. ``EXPORT_GROUP = 6`` gives bounds
1.265x apart, from ~0.10 ms to ~107 s (60 bounds); faster values count in the first,
slower ones only in ``+Inf``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.store.histogram.buckets import GAMMA
from app.store.layout import COUNT_COLUMNS, check_phase

EXPORT_GROUP = 6  # store buckets per exported histogram bucket (1.04^6 = 1.265)
FIRST_GROUP = 49  # le = 1.04^(6*49) ns = 0.1017 ms
LAST_GROUP = 108  # le = 1.04^(6*108) ns = 106.9 s


def _all_time(phases: Sequence[str]) -> str:
    """Every rollup row of the series, once: its weeks, and what retention folded away."""
    cols = ", ".join(
        [
            "series_id",
            *COUNT_COLUMNS,
            *(f"{p}_{c}" for p in phases for c in ("n", "sum", "hi", "hc")),
        ]
    )
    return (
        f"(select {cols} from rollup_1w where series_id = any(:ids) union all "
        f"select {cols} from rollup_retired where series_id = any(:ids)) w"
    )


def export_bounds_ns() -> list[float]:
    """The exported histograms' upper bounds ``le`` in nanoseconds, ascending."""
    return [GAMMA ** (EXPORT_GROUP * j) for j in range(FIRST_GROUP, LAST_GROUP + 1)]


@dataclass(slots=True)
class PhaseTotals:
    """One timing of one series, all time: successful samples that timed it."""

    count: int = 0
    sum_ns: float = 0.0
    # cumulative counts at each export_bounds_ns() bound (same length, non-decreasing)
    cumulative: list[int] = field(default_factory=list)


@dataclass(slots=True)
class SeriesTotals:
    """Samples of one series since its first, by outcome, and its timing histograms."""

    counts: dict[str, int]  # COUNT_COLUMNS -> value (n, n_ok, n_error, ...)
    phases: dict[str, PhaseTotals] = field(default_factory=dict)


def totals(
    conn: Connection, series_ids: Sequence[int], phases: Sequence[str] = ("logon", "ping")
) -> dict[int, SeriesTotals]:
    """series id -> its cumulative counts and histograms (series without samples absent).

    Two grouped reads of the weekly rollups: the counts and timing sums, then every
    phase's histogram entries folded into export buckets in SQL.
    """
    for p in phases:
        check_phase(p)
    if not series_ids:
        return {}
    ids = {"ids": list(series_ids)}
    sums = [f"sum({c})::bigint" for c in COUNT_COLUMNS]
    sums += [f"sum({p}_n)::bigint, sum({p}_sum)::float8" for p in phases]
    rows = conn.execute(
        text(f"select series_id, {', '.join(sums)} from {_all_time(phases)} group by 1"), ids
    ).all()
    out: dict[int, SeriesTotals] = {}
    k = len(COUNT_COLUMNS)
    bounds = LAST_GROUP - FIRST_GROUP + 1
    for r in rows:
        t = SeriesTotals({c: int(r[1 + i] or 0) for i, c in enumerate(COUNT_COLUMNS)})
        for j, p in enumerate(phases):
            t.phases[p] = PhaseTotals(int(r[1 + k + 2 * j] or 0), float(r[2 + k + 2 * j] or 0.0))
        out[int(r[0])] = t
    if not out:
        return out
    unions = " union all ".join(
        f"select series_id, {j} as p, ceil(u.i::float8 / {EXPORT_GROUP})::int as g, "
        f"sum(u.c)::bigint as c from {_all_time(phases)}, unnest({p}_hi, {p}_hc) as u(i, c) "
        f"where {p}_hi is not null group by 1, 2, 3"
        for j, p in enumerate(phases)
    )
    per: dict[tuple[int, int], list[int]] = {}
    for sid, j, group, count in conn.execute(text(unions), ids):
        slot = min(max(int(group), FIRST_GROUP), LAST_GROUP + 1) - FIRST_GROUP
        counts = per.setdefault((int(sid), int(j)), [0] * (bounds + 1))
        counts[slot] += int(count)  # slot ``bounds``: above the last bound (+Inf only)
    for (sid, j), counts in per.items():
        if sid in out:
            out[sid].phases[phases[j]].cumulative = list(_running(counts[:bounds]))
    for t in out.values():
        for pt in t.phases.values():
            if not pt.cumulative:
                pt.cumulative = [0] * bounds
    return out


def _running(values: list[int]) -> list[int]:
    total, acc = 0, []
    for v in values:
        total += v
        acc.append(total)
    return acc


def bound_label(ns: float) -> str:
    """An ``le`` label in seconds: 6 significant digits, rounded up, so the printed bound
    is never below the exact store edge (every counted value is <= it)."""
    seconds = ns / 1e9
    exp = math.floor(math.log10(seconds)) - 5
    scaled = math.ceil(round(seconds / 10.0**exp, 6))
    return f"{scaled * 10.0**exp:.6g}"
