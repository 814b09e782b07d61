"""The Samples page and API: the store's raw-sample reads with filters, one keyset page at a time,
and its streaming CSV export."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from fastapi import HTTPException
from pydantic import BaseModel
from sqlalchemy.engine import Connection, Engine

from app.store.read.samples import export_csv, read_samples
from app.web.views.incidents import SampleOut, sample_out, series_names
from app.web.views.lookups import TargetInfo, load_targets

# "failed": the target's errors and timeouts; "error": the target's errors;
# "probe-error": probe-side errors (class PROBE, connwatch's own trouble, not the target's)
STATUS_CHOICES = ("ok", "error", "timeout", "skipped", "failed", "probe-error")


@dataclass(frozen=True, slots=True)
class SampleFilter:
    target: str | None
    mode: str | None
    status: str | None
    code: str | None
    probe: str | None = None

    def statuses(self) -> list[str] | None:
        if self.status is None:
            return None
        if self.status == "failed":
            return ["error", "timeout"]
        if self.status == "probe-error":
            return ["error"]
        return [self.status]

    def probe_side(self) -> bool | None:
        """True: only probe-side errors; False: none (the target's failures); None: any."""
        if self.status == "probe-error":
            return True
        if self.status in ("error", "failed"):
            return False
        return None


class SamplesOut(BaseModel):
    start: datetime
    end: datetime
    samples: list[SampleOut]
    next: str | None


def scope(targets: list[TargetInfo], f: SampleFilter) -> list[int] | None:
    """The series ids the filter selects, None for all (404/422 on unknown names)."""
    if f.mode and not f.target:
        raise HTTPException(422, "mode: give target too (mode names repeat across targets)")
    if not (f.target or f.probe):
        return None
    chosen = targets
    if f.target:
        chosen = [t for t in targets if t.name == f.target]
        if not chosen:
            raise HTTPException(404, f"no target named {f.target!r}")
    modes = [m for t in chosen for m in t.modes]
    if f.mode:
        modes = [m for m in modes if m.name == f.mode]
        if not modes:
            raise HTTPException(422, f"mode: target {f.target!r} has no mode {f.mode!r}")
    return [s.id for m in modes for s in m.series if f.probe is None or s.probe == f.probe]


def page(
    conn: Connection,
    f: SampleFilter,
    start: datetime,
    end: datetime,
    *,
    after: str | None,
    limit: int,
    newest_first: bool,
    targets: list[TargetInfo] | None = None,
) -> SamplesOut:
    """A page of samples; ``targets`` when the caller has already loaded them."""
    targets = load_targets(conn) if targets is None else targets
    try:
        res = read_samples(
            conn,
            series_ids=scope(targets, f),
            statuses=f.statuses(),
            error_code=f.code,
            probe_side=f.probe_side(),
            start=start,
            end=end,
            after=after,
            limit=limit,
            newest_first=newest_first,
        )
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    names = series_names(targets)
    return SamplesOut(
        start=start,
        end=end,
        samples=[sample_out(s, names) for s in res.samples],
        next=res.next_cursor,
    )


def csv_stream(
    engine: Engine, conn: Connection, f: SampleFilter, start: datetime, end: datetime
) -> Iterator[bytes]:
    ids = scope(load_targets(conn), f)
    try:
        return export_csv(
            engine,
            series_ids=ids,
            statuses=f.statuses(),
            error_code=f.code,
            probe_side=f.probe_side(),
            start=start,
            end=end,
        )
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
