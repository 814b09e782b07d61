"""Builds the SQL that merges samples or rollup rows into coarser rollup rows.

One builder serves maintenance (raw -> 1 minute -> 1 hour -> 1 day) and the read
queries (any set of rows -> one row per chart bucket, mode, weekday-hour cell...).
The caller supplies ``src``: a SELECT whose rows carry the grouping ``keys`` plus
either raw sample columns (``raw=True``: ``status``, ``error_class``,
``error_code``, ``<phase>_ns``) or rollup columns (``n``, ``n_ok``, ...,
``<phase>_n/_min/_max/_sum/_hi/_hc``). The result has the keys and the rollup
columns (see :mod:`app.store.layout`), percentiles included. Timings are only
taken from samples whose status is ``ok``.

Raw input is aggregated in one pass with exact percentiles; rollup input is merged
by adding histogram counts per bucket index and reading percentiles off the
cumulative counts (nearest rank), clamped to the exact min/max.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.histogram.buckets import SQL_INDEX, SQL_VALUE
from app.store.layout import COUNT_COLUMNS, PHASES, probe_side_sql, target_error_sql

_Q = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def merged_sql(
    src: str,
    keys: Sequence[str],
    *,
    raw: bool,
    phases: Sequence[str] = PHASES,
    errors: bool = True,
    hist: bool = True,
    single: bool = False,
    counts: Sequence[str] = COUNT_COLUMNS,
) -> str:
    """``WITH ... SELECT`` producing one merged row per distinct ``keys``.

    ``single=True`` (rollup input whose ``src`` also selects ``<phase>_p50/_p95/_p99``):
    a group made of one row keeps that row's stored percentiles and its histogram is not
    unnested, which makes merges where most groups hold a single row nearly free.
    """
    if not keys:
        raise ValueError("merged_sql needs at least one grouping key")
    if raw:
        return _raw_sql(src, keys, phases, errors)
    k = ", ".join(keys)
    ctes = [f"src as materialized ({src})"]
    base_cols = [f"sum({c})::int as {c}" for c in counts] + ["count(*) as _rows"]
    for p in phases:
        base_cols += [
            f"sum({p}_n)::int as {p}_n",
            f"min({p}_min) as {p}_min",
            f"max({p}_max) as {p}_max",
            f"sum({p}_sum)::bigint as {p}_sum",
        ]
        if single:
            base_cols += [f"min({p}_{q}) as {p}_{q}_1" for q in _Q]
            if hist:
                base_cols += [f"min({p}_hi) as {p}_hi_1", f"min({p}_hc) as {p}_hc_1"]
    ctes.append(f"base as (select {k}, {', '.join(base_cols)} from src group by {k})")
    if errors:
        ctes += [_error_cte(col, k, raw=False) for col in ("err_class", "err_code")]
    for p in phases:
        entries = (
            f"select {k}, u.i, u.c from src, unnest(src.{p}_hi, src.{p}_hc) as u(i, c) "
            f"where src.{p}_hi is not null"
        )
        if single:
            entries = (
                f"select {k}, u.i, u.c from src join base using ({k}), "
                f"unnest(src.{p}_hi, src.{p}_hc) as u(i, c) "
                f"where src.{p}_hi is not null and base._rows > 1"
            )
        ctes.append(
            f"h_{p} as (select {k}, i, sum(c)::int as c from ({entries}) e group by {k}, i)"
        )
        qcols = [
            f"min(i) filter (where cum >= ceil({q} * tot - 1e-9)) as {name}"
            for name, q in _Q.items()
        ]
        if hist:
            qcols += ["array_agg(i order by i) as hi", "array_agg(c order by i) as hc"]
        ctes.append(
            f"q_{p} as (select {k}, {', '.join(qcols)} from ("
            f"select {k}, i, c, sum(c) over (partition by {k} order by i) as cum, "
            f"sum(c) over (partition by {k}) as tot from h_{p}) w group by {k})"
        )

    out, joins = _leading_columns(keys, errors, counts)
    for p in phases:
        out += [f"base.{p}_n", f"base.{p}_min", f"base.{p}_max", f"base.{p}_sum"]
        for name in _Q:
            v = SQL_VALUE.format(i=f"q_{p}.{name}")
            merged = f"least(greatest({v}, base.{p}_min), base.{p}_max)::real"
            if single:
                merged = f"case when base._rows = 1 then base.{p}_{name}_1 else {merged} end"
            out.append(f"{merged} as {p}_{name}")
        if hist and single:
            out += [
                f"case when base._rows = 1 then base.{p}_hi_1 else q_{p}.hi::smallint[] end "
                f"as {p}_hi",
                f"case when base._rows = 1 then base.{p}_hc_1 else q_{p}.hc end as {p}_hc",
            ]
        elif hist:
            out += [f"q_{p}.hi::smallint[] as {p}_hi", f"q_{p}.hc as {p}_hc"]
        joins.append(f"left join q_{p} using ({k})")
    return _assemble(ctes, out, joins)


def _leading_columns(
    keys: Sequence[str], errors: bool, counts: Sequence[str] = COUNT_COLUMNS
) -> tuple[list[str], list[str]]:
    """Output columns and joins every merged row starts with: keys, counts, error maps."""
    out = [f"base.{key}" for key in keys]
    out += [f"base.{c}" for c in counts]
    joins = []
    if errors:
        k = ", ".join(keys)
        out += ["err_class.err_class", "err_code.err_code"]
        joins += [f"left join err_class using ({k})", f"left join err_code using ({k})"]
    return out, joins


def _assemble(ctes: Sequence[str], out: Sequence[str], joins: Sequence[str]) -> str:
    return "with " + ",\n".join(ctes) + f"\nselect {', '.join(out)}\nfrom base {' '.join(joins)}"


def _error_cte(col: str, k: str, *, raw: bool) -> str:
    if raw:
        field = "error_class" if col == "err_class" else "error_code"
        inner = (
            f"select {k}, {field}::text as ek, count(*)::int as ev from src "
            f"where {field} is not null and status <> 'ok' group by {k}, {field}"
        )
    else:
        inner = (
            f"select {k}, e.key as ek, sum(e.value::int)::int as ev "
            f"from src, jsonb_each_text(src.{col}) e group by {k}, e.key"
        )
    return f"{col} as (select {k}, jsonb_object_agg(ek, ev) as {col} from ({inner}) x group by {k})"


def _raw_sql(src: str, keys: Sequence[str], phases: Sequence[str], errors: bool) -> str:
    """Raw samples -> rollup rows in one aggregation pass.

    Percentiles of a row built from raw samples are exact (``percentile_disc``). Its
    histogram lists one bucket index per sample (sorted; repeats allowed, counts 1):
    merging adds counts per index, so repeats cost a few bytes and nothing else.
    """
    k = ", ".join(keys)
    ok = "filter (where status = 'ok')"
    cols = [
        "count(*)::int as n",
        f"(count(*) {ok})::int as n_ok",
        f"(count(*) filter (where {target_error_sql()}))::int as n_error",
        "(count(*) filter (where status = 'timeout'))::int as n_timeout",
        "(count(*) filter (where status = 'skipped'))::int as n_skipped",
        f"(count(*) filter (where {probe_side_sql()}))::int as n_probe",
    ]
    for p in phases:
        v = f"{p}_ns"
        cols += [
            f"nullif(count({v}) {ok}, 0)::int as {p}_n",
            f"min({v}) {ok} as {p}_min",
            f"max({v}) {ok} as {p}_max",
            f"(sum({v}) {ok})::bigint as {p}_sum",
            f"percentile_disc(array[0.5, 0.95, 0.99]) within group (order by {v}) {ok} as {p}_q",
            f"array_agg({SQL_INDEX.format(v=v)} order by {v}) "
            f"filter (where status = 'ok' and {v} is not null) as {p}_hi",
        ]
    ctes = [
        f"src as materialized ({src})",
        f"base as (select {k}, {', '.join(cols)} from src group by {k})",
    ]
    if errors:
        ctes += [_error_cte(col, k, raw=True) for col in ("err_class", "err_code")]
    out, joins = _leading_columns(keys, errors)
    for p in phases:
        out += [f"base.{p}_n", f"base.{p}_min", f"base.{p}_max", f"base.{p}_sum"]
        out += [f"base.{p}_q[{j}]::real as {p}_{name}" for j, name in enumerate(_Q, 1)]
        out += [
            f"base.{p}_hi::smallint[] as {p}_hi",
            f"case when base.{p}_n > 0 then array_fill(1, array[base.{p}_n]) end as {p}_hc",
        ]
    return _assemble(ctes, out, joins)
