"""The Spikes page's data: the store's spikes and outages, named by target and mode.

Each incident links to the Samples page for the raw samples around it (the store
also returns those samples; the page shows them on demand).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection, Engine

from app.explain import explain
from app.samples import Sample
from app.store.read.incidents import Outage, Spike, outages, spikes
from app.store.read.recent import activity
from app.web.views.lookups import TargetInfo

SPIKE_CONTEXT = timedelta(minutes=5)
OUTAGE_CONTEXT = timedelta(minutes=2)


class SampleOut(BaseModel):
    target: str
    mode: str
    probe: str = Field(description="connping, sessionping, commit, poolacquire or sweep")
    series_id: int
    scheduled_at: datetime
    started_at: datetime
    status: str
    total_ms: float | None
    logon_ms: float | None
    ping_ms: float | None
    query_ms: float | None
    logoff_ms: float | None
    commit_ms: float | None
    acquire_ms: float | None
    round_trips: int | None
    logon_phases_ms: dict[str, float] | None
    error_class: str | None
    error_code: str | None
    error_phase: str | None
    error_message: str | None
    sid: int | None
    serial: int | None
    instance: str | None
    service: str | None
    server_type: str | None
    agent: str | None
    site: str | None
    agent_overload: float | None = Field(
        None,
        description="set when the agent was overloaded as it took this sample: the share of "
        "due runs it started then (the others were skipped as OVERLOAD)",
    )


def _ms(v: int | None) -> float | None:
    return None if v is None else v / 1e6


def sample_out(s: Sample, names: dict[int, SeriesName]) -> SampleOut:
    sid = s.series_id or 0
    name = names.get(sid, UNKNOWN)
    return SampleOut(
        target=name.target,
        mode=name.mode,
        probe=name.probe,
        series_id=sid,
        scheduled_at=s.scheduled_at,
        started_at=s.started_at,
        status=str(s.status),
        total_ms=_ms(s.total_ns),
        logon_ms=_ms(s.logon_ns),
        ping_ms=_ms(s.ping_ns),
        query_ms=_ms(s.query_ns),
        logoff_ms=_ms(s.logoff_ns),
        commit_ms=_ms(s.commit_ns),
        acquire_ms=_ms(s.acquire_ns),
        round_trips=s.round_trips,
        logon_phases_ms={k: v / 1e6 for k, v in s.logon_phases.items()} if s.logon_phases else None,
        error_class=str(s.error_class) if s.error_class is not None else None,
        error_code=s.error_code,
        error_phase=s.error_phase,
        error_message=s.error_message,
        sid=s.sid,
        serial=s.serial,
        instance=s.instance,
        service=s.service,
        server_type=s.server_type,
        agent=s.agent,
        site=s.site,
        agent_overload=(s.extra or {}).get("overload"),
    )


class SpikeOut(BaseModel):
    target: str
    mode: str
    probe: str
    series_id: int
    start: datetime
    end: datetime
    p95_ms: float
    baseline_ms: float = Field(description="median p95 of the same weekday and hour, prior weeks")
    factor: float = Field(description="severity: p95 / baseline")
    count: int
    samples_from: datetime
    samples_to: datetime
    samples: list[SampleOut]


class OutageOut(BaseModel):
    target: str
    mode: str
    probe: str
    series_id: int
    start: datetime
    end: datetime
    duration_s: float
    failed: int = Field(description="severity: failed runs in a row")
    ongoing: bool = Field(
        False, description="still running: the series' newest sample (now) is part of it"
    )
    codes: dict[str, int]
    meanings: dict[str, str] = Field(default_factory=dict, description="code -> what it means")
    source: str
    samples_from: datetime
    samples_to: datetime
    samples: list[SampleOut]


class IncidentsOut(BaseModel):
    start: datetime
    end: datetime
    phase: str
    factor: float
    spikes: list[SpikeOut]
    outages: list[OutageOut]


class SeriesName(NamedTuple):
    target: str
    mode: str
    probe: str


UNKNOWN = SeriesName("?", "?", "?")


def series_names(
    targets: list[TargetInfo], probes: tuple[str, ...] | None = None
) -> dict[int, SeriesName]:
    """series id -> (target, mode, probe), for every series (or those of ``probes``)."""
    return {
        s.id: SeriesName(t.name, m.name, s.probe)
        for t in targets
        for m in t.modes
        for s in m.series
        if probes is None or s.probe in probes
    }


def _outages(
    engine: Engine, ids: list[int], start: datetime, end: datetime, limit: int
) -> list[Outage]:
    with engine.connect() as conn:
        return outages(conn, ids, start, end, context_limit=limit)


def incidents(
    conn: Connection,
    targets: list[TargetInfo],
    start: datetime,
    end: datetime,
    *,
    phase: str,
    factor: float,
    with_samples: bool,
) -> IncidentsOut:
    names = series_names(targets, ("connping", "sessionping", "commit", "poolacquire"))
    ids = list(names)
    limit = 200 if with_samples else 0  # 0: the store reads no raw samples around them
    found_spikes: list[Spike] = []
    found_outages: list[Outage] = []
    if ids:
        # Spikes read rollups, outages raw failures: independent reads, so outages run
        # on a second pooled connection meanwhile (the page waits for the slower one,
        # not for their sum).
        with ThreadPoolExecutor(max_workers=1) as pool:
            later = pool.submit(_outages, conn.engine, ids, start, end, limit)
            found_spikes = spikes(
                conn, ids, start, end, phase=phase, factor=factor, context_limit=limit
            )
            found_outages = later.result()
    sp = [
        SpikeOut(
            target=names[x.series_id].target,
            mode=names[x.series_id].mode,
            probe=names[x.series_id].probe,
            series_id=x.series_id,
            start=x.start,
            end=x.end,
            p95_ms=x.p95_ms,
            baseline_ms=x.baseline_ms,
            factor=x.factor,
            count=x.count,
            samples_from=x.start - SPIKE_CONTEXT,
            samples_to=x.end + SPIKE_CONTEXT,
            samples=[sample_out(s, names) for s in x.samples] if with_samples else [],
        )
        for x in found_spikes
    ]
    newest = activity(conn, list({x.series_id for x in found_outages}), datetime.now(UTC))
    out = [
        OutageOut(
            target=names[x.series_id].target,
            mode=names[x.series_id].mode,
            probe=names[x.series_id].probe,
            series_id=x.series_id,
            start=x.start,
            end=x.end,
            duration_s=(x.end - x.start).total_seconds(),
            failed=x.failed,
            ongoing=x.series_id in newest and newest[x.series_id].last_at <= x.end,
            codes=x.codes,
            meanings={c: f.meaning for c in x.codes if (f := explain(c))},
            source=x.source,
            samples_from=x.start - OUTAGE_CONTEXT,
            samples_to=x.end + OUTAGE_CONTEXT + timedelta(seconds=1),
            samples=[sample_out(s, names) for s in x.samples] if with_samples else [],
        )
        for x in found_outages
    ]
    return IncidentsOut(start=start, end=end, phase=phase, factor=factor, spikes=sp, outages=out)
