"""Availability and the error breakdown of series over a range.

Counts come from rollups: 1-day rows when the range is longer than 60 days,
1-hour rows when longer than 2 days, else 1-minute rows; the range is widened to
whole rows of that table (``start``/``end`` of the result say exactly what was
counted). Availability is ok / (runs that measured the target): skipped runs (agent
overload) and probe-side errors (class PROBE, :class:`app.samples.ErrorClass`) are
left out; None when nothing measured. Probe-side errors are counted (``n_probe``)
and listed with their codes, marked as class PROBE.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.samples import ErrorClass, availability_ratio
from app.store.layout import DAY, HOUR, MINUTE, ORIGIN_SQL, Grain, no_jit
from app.store.resolution import ceil_to, check_range, floor_to


@dataclass(frozen=True, slots=True)
class ErrorCount:
    error_class: str
    code: str
    count: int


@dataclass(frozen=True, slots=True)
class SeriesAvailability:
    series_id: int
    n: int
    n_ok: int
    n_error: int
    n_timeout: int
    n_skipped: int
    availability: float | None
    errors: list[ErrorCount] = field(default_factory=list)  # most frequent first
    n_probe: int = 0  # probe-side errors: neither ok nor failed, not in availability

    @property
    def target_errors(self) -> list[ErrorCount]:
        """The errors that were the target's (probe-side ones left out)."""
        return [e for e in self.errors if e.error_class != ErrorClass.PROBE]


@dataclass(frozen=True, slots=True)
class AvailabilityResult:
    start: datetime
    end: datetime
    source: str
    series: list[SeriesAvailability]
    total: SeriesAvailability  # all series together (series_id 0)


def _grain(span: timedelta) -> Grain:
    if span > timedelta(days=60):
        return DAY
    if span > timedelta(days=2):
        return HOUR
    return MINUTE


_CLASSES = {c.value for c in ErrorClass}


def code_class(code: str) -> str:
    """The class of an error code: its prefix (``TNS-12520`` -> ``TNS``, ``PROBE-CONFIG``
    -> ``PROBE``), else ``OTHER``."""
    prefix = code.split("-", 1)[0]
    return prefix if prefix in _CLASSES else ErrorClass.OTHER.value


def _by_count(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def availability(
    conn: Connection, series_ids: Sequence[int], start: datetime, end: datetime
) -> AvailabilityResult:
    check_range(start, end)
    no_jit(conn)
    g = _grain(end - start)
    a, b = floor_to(start, g.width), ceil_to(end, g.width)
    params = {"ids": list(series_ids), "a": a, "b": b}
    where = "series_id = any(:ids) and bucket >= :a and bucket < :b"
    counts = conn.execute(
        text(
            "select series_id, sum(n)::int, sum(n_ok)::int, sum(n_error)::int, "
            f"sum(n_timeout)::int, sum(n_skipped)::int, sum(n_probe)::int "
            f"from {g.table} where {where} "
            "group by 1 order by 1"
        ),
        params,
    ).all()
    errs: dict[int, list[ErrorCount]] = {}
    for sid, code, cnt in conn.execute(
        text(
            "select series_id, e.key, sum(e.value::int)::int as c "
            f"from {g.table}, jsonb_each_text(err_code) e where {where} and err_code is not null "
            "group by 1, 2 order by 1, c desc, 2"
        ),
        params,
    ):
        errs.setdefault(sid, []).append(ErrorCount(code_class(code), code, cnt))

    out = [
        SeriesAvailability(
            r[0], r[1], r[2], r[3], r[4], r[5], availability_ratio(r[2], r[1], r[5], r[6]),
            errs.get(r[0], []), r[6],
        )
        for r in counts
    ]  # fmt: skip
    tot_err: dict[str, int] = {}
    for lst in errs.values():
        for e in lst:
            tot_err[e.code] = tot_err.get(e.code, 0) + e.count
    n, ok, er, to, sk, pr = (
        sum(getattr(s, f) for s in out)
        for f in ("n", "n_ok", "n_error", "n_timeout", "n_skipped", "n_probe")
    )
    total = SeriesAvailability(
        0, n, ok, er, to, sk, availability_ratio(ok, n, sk, pr),
        [ErrorCount(code_class(c), c, k) for c, k in sorted(tot_err.items(), key=_by_count)],
        pr,
    )  # fmt: skip
    return AvailabilityResult(a, b, g.name, out, total)


def failure_codes(
    conn: Connection,
    series_ids: Sequence[int],
    start: datetime,
    end: datetime,
    step: timedelta,
) -> dict[tuple[int, datetime], dict[str, int]]:
    """Error codes and their counts per (series, bucket of ``step``) from the rollups.

    For chart error markers over ranges whose raw samples may be compacted or gone:
    the rollup rows that had failures (1-day, 1-hour or 1-minute, the coarsest whose
    width divides ``step``; ``step`` must be a whole number of minutes) are summed per
    bucket, aligned like every bucket of the store. Only failures that recorded a code
    are listed (a timeout without one is counted by the chart, not named here).
    Probe-side errors are listed too, under their ``PROBE-`` codes (the caller tells
    them apart: :func:`app.samples.is_probe_side` of :func:`code_class`).
    """
    check_range(start, end)
    if step < MINUTE.width or step % MINUTE.width:
        raise ValueError("failure_codes needs a step of whole minutes")
    grain = next(g for g in (DAY, HOUR, MINUTE) if step % g.width == timedelta(0))
    no_jit(conn)
    rows = conn.execute(
        text(
            f"select series_id, date_bin(:step, bucket, {ORIGIN_SQL}) as b, e.key, "
            f"sum(e.value::int)::int from {grain.table}, jsonb_each_text(err_code) e "
            "where series_id = any(:ids) and bucket >= :a and bucket < :b "
            "and n_error + n_timeout + n_probe > 0 and err_code is not null group by 1, 2, 3"
        ),
        {
            "ids": list(series_ids),
            "a": floor_to(start, grain.width),
            "b": ceil_to(end, grain.width),
            "step": step,
        },
    )
    out: dict[tuple[int, datetime], dict[str, int]] = {}
    for sid, bucket, code, count in rows:
        out.setdefault((sid, bucket), {})[code] = count
    return out
