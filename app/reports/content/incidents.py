"""The period's incidents: outages (runs of failed probe runs) and latency spikes per mode.

From the store's ``outages()`` (at least 3 failed runs in a row; from raw samples where
they still exist, else stitched from 1-minute rollups) and ``spikes()`` (hours whose
logon p95 exceeded twice the median p95 of the same weekday and hour over the 4 weeks
before). No raw samples are read for context: a report only links to them. Each
incident carries the dashboard paths that show it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlencode

from sqlalchemy.engine import Connection

from app.reports.content.period import Period
from app.reports.content.scope import Scope
from app.store.read.incidents import outages, spikes

MAX_OUTAGES = 50
MAX_SPIKES = 20
SPIKE_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class Incident:
    kind: str  # "outage" or "spike"
    target: str
    mode: str
    start: datetime
    end: datetime
    failed: int  # outage: failed runs in a row; spike: 0
    codes: dict[str, int] = field(default_factory=dict)
    p95_ms: float | None = None  # spike: the hour's logon p95
    baseline_ms: float | None = None  # spike: median p95 of the same hour in earlier weeks
    link: str = ""  # dashboard path (relative) with the raw samples around it

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    @property
    def label(self) -> str:
        return f"{self.target}/{self.mode}"


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def samples_link(target: str, mode: str, start: datetime, end: datetime, *, failed: bool) -> str:
    pad = timedelta(minutes=5)
    q = {"target": target, "mode": mode, "from": _iso(start - pad), "to": _iso(end + pad)}
    if failed:
        q["status"] = "failed"
    return "/samples?" + urlencode(q)


def read_incidents(conn: Connection, scope: Scope, period: Period) -> list[Incident]:
    """Outages and spikes of the period, in time order."""
    owner = scope.owner()
    if not owner:
        return []
    ids = list(owner)
    out: list[Incident] = []
    for o in outages(conn, ids, period.start, period.end, max_results=MAX_OUTAGES, context_limit=0):
        m = owner[o.series_id]
        out.append(
            Incident(
                "outage", m.target, m.mode, o.start, o.end, o.failed, dict(o.codes),
                link=samples_link(m.target, m.mode, o.start, o.end, failed=True),
            )
        )  # fmt: skip
    for s in spikes(
        conn, ids, period.start, period.end, phase="logon", factor=SPIKE_FACTOR,
        max_results=MAX_SPIKES, context_limit=0,
    ):  # fmt: skip
        m = owner[s.series_id]
        out.append(
            Incident(
                "spike", m.target, m.mode, s.start, s.end, 0, {}, s.p95_ms, s.baseline_ms,
                link=samples_link(m.target, m.mode, s.start, s.end, failed=False),
            )
        )  # fmt: skip
    out.sort(key=lambda i: (i.start, i.label))
    return out
