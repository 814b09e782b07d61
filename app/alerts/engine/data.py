"""What rules read from the store, in bulk: one query per (kind of figure, phase, window)
for every series of every rule that needs it, cached for the evaluation cycle.

Series are read individually and, in the same query, pooled per group (``gid``: the mode
or target an instance stands for) with ``GROUPING SETS``, so a per-mode p95 is the p95 of
all its sites' samples, not an average of per-site p95s. Sources:

- latency percentiles: raw samples for windows up to 1 hour (exact), else the merged
  1-minute rollup histograms (within 1.96 %; the minute not yet rolled up is missing);
  one round trip of the logon (``auth2``: ``samples.logon_phases``) always raw (exact);
- failures: raw samples up to 1 hour, else 1-minute rollups' error-code maps;
- the last N runs and the newest sample: raw samples;
- baselines: the stored per-hour (``weeks``) or per-minute (``trailing``) percentiles.
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import LOGON_PHASE_ORDER
from app.slo.compute import NOT_THE_DATABASE
from app.store.histogram.buckets import bucket_value
from app.store.layout import ORIGIN_SQL, no_jit

RAW_UP_TO = timedelta(hours=1)
NS_PER_MS = 1e6


@dataclass(frozen=True, slots=True)
class Latency:
    count: int  # successful samples timing the phase
    p50: float  # ms
    p95: float
    p99: float

    def get(self, percentile: str) -> float:
        return float(getattr(self, percentile))


@dataclass(slots=True)
class Failures:
    ran: int = 0  # runs that count (not skipped, not probe-side failures)
    failed: int = 0  # failures matching the rule's codes/classes
    codes: dict[str, int] = field(default_factory=dict)


def _mapping(groups: Mapping[int, int]) -> tuple[list[int], list[int]]:
    sids = sorted(groups)
    return sids, [groups[s] for s in sids]


def _percentiles_from_counts(counts: dict[int, int]) -> tuple[int, float, float, float]:
    total = sum(counts.values())
    out: list[float] = []
    for q in (0.5, 0.95, 0.99):
        rank, cum = max(1, math.ceil(q * total)), 0
        for i in sorted(counts):
            cum += counts[i]
            if cum >= rank:
                out.append(float(bucket_value(i)) / NS_PER_MS)
                break
    return total, out[0], out[1], out[2]


def latency(
    conn: Connection,
    groups: Mapping[int, int],
    start: datetime,
    end: datetime,
    phase: str,
) -> tuple[dict[int, Latency], dict[int, Latency]]:
    """(per series, per group) percentiles of ``phase`` (a timing, or a logon round trip
    such as ``auth2``) over ``[start, end)``."""
    if not groups:
        return {}, {}
    no_jit(conn)
    # The samples function's row count is unknown to the planner: without this it joins
    # the id mapping by nested loop (1,000 series x 30,000 samples: seconds, not ms).
    conn.exec_driver_sql("set local enable_nestloop = off")
    sids, gids = _mapping(groups)
    params: dict[str, Any] = {"sids": sids, "gids": gids, "a": start, "b": end}
    m = "m(sid, gid) as (select * from unnest(cast(:sids as int[]), cast(:gids as int[])))"
    per_s: dict[int, Latency] = {}
    per_g: dict[int, Latency] = {}
    if phase in LOGON_PHASE_ORDER:  # one round trip: kept on raw samples only
        value, source = "(t.logon_phases ->> cast(:ph as text))::bigint", "connwatch_samples"
        params["ph"] = phase
    else:
        value, source = f"t.{phase}_ns", "connwatch_sample_timings"
    if phase in LOGON_PHASE_ORDER or end - start <= RAW_UP_TO:
        rows = conn.execute(
            text(
                f"with {m} select t.series_id, m.gid, count(*), percentile_disc("
                f"array[0.5, 0.95, 0.99]) within group (order by {value}) "
                f"from {source}(cast(:sids as int[]), :a, :b) t "
                f"join m on m.sid = t.series_id where t.status = 'ok' and {value} is not null "
                "group by grouping sets ((t.series_id), (m.gid))"
            ),
            params,
        ).all()
        for sid, gid, n, ps in rows:
            lat = Latency(int(n), *(float(p) / NS_PER_MS for p in ps))
            (per_s if sid is not None else per_g)[sid if sid is not None else gid] = lat
        return per_s, per_g
    rows = conn.execute(
        text(
            f"with {m}, r as (select r.series_id, m.gid, u.i, u.c from rollup_1m r "
            "join m on m.sid = r.series_id "
            f"cross join lateral unnest(r.{phase}_hi, r.{phase}_hc) u(i, c) "
            "where r.series_id = any(cast(:sids as int[])) "
            f"and r.bucket >= date_bin('1 minute', cast(:a as timestamptz), {ORIGIN_SQL}) "
            "and r.bucket < :b) select series_id, gid, i, sum(c)::bigint from r "
            "group by grouping sets ((series_id, i), (gid, i))"
        ),
        params,
    ).all()
    hs: dict[int, dict[int, int]] = defaultdict(dict)
    hg: dict[int, dict[int, int]] = defaultdict(dict)
    for sid, gid, i, c in rows:
        (hs[sid] if sid is not None else hg[gid])[int(i)] = int(c)
    per_s = {k: Latency(*_percentiles_from_counts(v)) for k, v in hs.items()}
    per_g = {k: Latency(*_percentiles_from_counts(v)) for k, v in hg.items()}
    return per_s, per_g


def _code_matches(code: str, cls: str, codes: Sequence[str], classes: Sequence[str]) -> bool:
    if not codes and not classes:
        return True
    if cls in classes:
        return True
    return any(fnmatch.fnmatchcase(code, c) for c in codes)


def failures(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
) -> dict[int, tuple[int, dict[tuple[str, str], int]]]:
    """series id -> (runs that count, {(class, code): failures}) over ``[start, end)``."""
    if not series_ids:
        return {}
    no_jit(conn)
    params = {"sids": list(series_ids), "a": start, "b": end, "excl": list(NOT_THE_DATABASE)}
    out: dict[int, tuple[int, dict[tuple[str, str], int]]] = {}
    if end - start <= RAW_UP_TO:
        rows = conn.execute(
            text(
                "select series_id, coalesce(error_class, ''), coalesce(error_code, ''), "
                "status <> 'ok', count(*) "
                "from connwatch_sample_timings(cast(:sids as int[]), :a, :b) "
                "where status <> 'skipped' "
                "and coalesce(error_class, '') <> all(cast(:excl as text[])) group by 1, 2, 3, 4"
            ),
            params,
        ).all()
        for sid, cls, code, bad, n in rows:
            ran, codes = out.setdefault(int(sid), (0, {}))
            if bad:
                key = (cls, code or cls or "UNKNOWN")
                codes[key] = codes.get(key, 0) + int(n)
            out[int(sid)] = (ran + int(n), codes)
        return out
    rows = conn.execute(
        text(
            "select series_id, sum(n - n_skipped)::bigint, "
            "jsonb_agg(err_class) filter (where err_class is not null), "
            "jsonb_agg(err_code) filter (where err_code is not null) from rollup_1m "
            "where series_id = any(cast(:sids as int[])) "
            f"and bucket >= date_bin('1 minute', cast(:a as timestamptz), {ORIGIN_SQL}) "
            "and bucket < :b group by 1"
        ),
        params,
    ).all()
    for sid, ran, class_maps, code_maps in rows:
        by_code: dict[tuple[str, str], int] = {}
        excluded = 0
        for cmap in class_maps or []:
            for cls, n in cmap.items():
                if cls in NOT_THE_DATABASE:
                    excluded += int(n)
        for cmap in code_maps or []:
            for code, n in cmap.items():
                cls = code.split("-", 1)[0] if "-" in code else code
                if cls in NOT_THE_DATABASE:
                    continue
                by_code[(cls, code)] = by_code.get((cls, code), 0) + int(n)
        out[int(sid)] = (int(ran or 0) - excluded, by_code)
    return out


def summarise_failures(
    per: Mapping[int, tuple[int, dict[tuple[str, str], int]]],
    ids: Sequence[int],
    codes: Sequence[str],
    classes: Sequence[str],
) -> Failures:
    f = Failures()
    for sid in ids:
        ran, by_code = per.get(sid, (0, {}))
        f.ran += ran
        for (cls, code), n in by_code.items():
            if _code_matches(code, cls, codes, classes):
                f.failed += n
                f.codes[code] = f.codes.get(code, 0) + n
    return f


def last_runs(
    conn: Connection, series_ids: Sequence[int], n: int, lookback: timedelta, now: datetime
) -> dict[int, list[tuple[datetime, bool, str, str]]]:
    """series id -> its last ``n`` runs (newest first): (scheduled, failed, class, code)."""
    if not series_ids:
        return {}
    rows = conn.execute(
        text(
            "select series_id, scheduled_at, status <> 'ok', coalesce(error_class, ''), "
            "coalesce(error_code, '') from (select series_id, scheduled_at, status, error_class, "
            "error_code, "
            "row_number() over (partition by series_id order by scheduled_at desc) rn "
            "from connwatch_sample_timings(cast(:sids as int[]), :a, :b) "
            "where status <> 'skipped' and coalesce(error_class, '') <> all(cast(:excl as text[]))"
            ") x where rn <= :n order by series_id, rn"
        ),
        {
            "sids": list(series_ids),
            "a": now - lookback,
            "b": now + timedelta(microseconds=1),
            "n": n,
            "excl": list(NOT_THE_DATABASE),
        },
    ).all()
    out: dict[int, list[tuple[datetime, bool, str, str]]] = defaultdict(list)
    for sid, at, bad, cls, code in rows:
        out[int(sid)].append((at, bool(bad), str(cls), str(code)))
    return dict(out)


def newest_sample(
    conn: Connection, series_ids: Sequence[int], lookback: timedelta, now: datetime
) -> dict[int, datetime]:
    """series id -> scheduled time of its newest sample within ``lookback`` (else absent)."""
    if not series_ids:
        return {}
    rows = conn.execute(
        text(
            "select series_id, max(scheduled_at) from connwatch_sample_timings("
            "cast(:sids as int[]), :a, :b) group by 1"
        ),
        {"sids": list(series_ids), "a": now - lookback, "b": now + timedelta(microseconds=1)},
    ).all()
    return {int(s): t for s, t in rows}


def agent_heartbeats(conn: Connection) -> list[tuple[str, str, datetime]]:
    rows = conn.execute(text("select name, site, heartbeat_at from agents order by name")).all()
    return [(str(n), str(s), t) for n, s, t in rows]


def baseline(
    conn: Connection,
    groups: Mapping[int, int],
    now: datetime,
    *,
    phase: str,
    percentile: str,
    weeks: int | None,
    trailing: timedelta | None,
) -> tuple[dict[int, float], dict[int, float]]:
    """(per series, per group) baseline of the stored percentile: the median of the same
    hour of the previous ``weeks`` weeks (1-hour rollups), or of the 1-minute percentiles
    over ``trailing`` before now."""
    if not groups:
        return {}, {}
    sids, gids = _mapping(groups)
    col = f"{phase}_{percentile}"
    m = "m(sid, gid) as (select * from unnest(cast(:sids as int[]), cast(:gids as int[])))"
    params: dict[str, Any] = {"sids": sids, "gids": gids}
    if weeks:
        hour = now.replace(minute=0, second=0, microsecond=0)
        params["hours"] = [hour - timedelta(weeks=k) for k in range(1, weeks + 1)]
        where = "r.bucket = any(cast(:hours as timestamptz[]))"
        table = "rollup_1h"
    else:
        assert trailing is not None
        params.update(a=now - trailing, b=now)
        where = "r.bucket >= :a and r.bucket < :b"
        table = "rollup_1m"
    rows = conn.execute(
        text(
            f"with {m} select r.series_id, m.gid, percentile_cont(0.5) within group "
            f"(order by r.{col}), count(*) from {table} r join m on m.sid = r.series_id "
            f"where r.series_id = any(cast(:sids as int[])) and {where} and r.{col} is not null "
            "group by grouping sets ((r.series_id), (m.gid))"
        ),
        params,
    ).all()
    per_s: dict[int, float] = {}
    per_g: dict[int, float] = {}
    need = 2 if weeks else 30  # two earlier weeks, or half an hour of minutes
    for sid, gid, med, n in rows:
        if int(n) < min(need, weeks or need):
            continue
        if sid is not None:
            per_s[int(sid)] = float(med) / NS_PER_MS
        else:
            per_g[int(gid)] = float(med) / NS_PER_MS
    return per_s, per_g
