"""Prometheus ``/metrics`` in the text exposition format 0.0.4 (written here, no client lib).

Per mode's connping series (labels ``target``, ``mode``, ``kind``, ``site``), from the
store's query functions:

- ``connwatch_logon_seconds{quantile="0.5"|"0.95"}``, ``connwatch_ping_seconds{...}``:
  the latest 15-minute bucket with successful samples (the overview's "current");
- ``connwatch_samples_15m``, ``connwatch_failures_15m``: samples and failed samples
  (error or timeout) in the last 15 minutes;
- ``connwatch_last_sample_timestamp_seconds``: end of the newest bucket with a sample;
- ``connwatch_up``: 1 when the overview state is ok or degraded, 0 when down or stale;
- ``connwatch_logon_duration_seconds``: a histogram (cumulative ``le`` buckets, ``_sum``,
  ``_count``) of the last hour's successful logons per target and mode, from the
  store's merged log-bucket histograms of the same series (:func:`app.store.read.window_histograms`,
  one query over the 1-minute rollups).

Alerts (app/alerts/queries.py): ``ALERTS{alertname, alertstate, severity, target, mode,
probe, ...}`` 1 per pending or firing instance and ``ALERTS_FOR_STATE`` (when its condition
started), as Prometheus exports its own; ``connwatch_notifications{status}``.

Every value comes from the overview's data plus that one query: the cost does not grow
with a store call per target. Each mode is read from one probe kind (connping where it
has one), as on the overview.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from sqlalchemy.engine import Connection

from app.alerts.queries import prometheus_text as alerts_text
from app.store.read.agents import agent_status, label_value, number, prometheus_text
from app.store.read.window_histograms import Histogram, histograms
from app.web.deps import ConnDep
from app.web.views.lookups import TargetInfo, load_targets
from app.web.views.overview import build_rows
from app.web.views.readers import overview_ids, overview_stats

router = APIRouter()
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LE_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def labels(**kv: str) -> str:
    return "{" + ",".join(f'{k}="{label_value(v)}"' for k, v in kv.items()) + "}"


class Exposition:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self._declared: set[str] = set()

    def declare(self, name: str, kind: str, help_text: str) -> None:
        if name not in self._declared:
            self._declared.add(name)
            self.lines.append(f"# HELP {name} {help_text}")
            self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, lbl: str, value: float) -> None:
        self.lines.append(f"{name}{lbl} {number(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    tags=["metrics"],
    summary="Prometheus text exposition: latest values and logon histograms per mode",
)
def prometheus(conn: ConnDep) -> PlainTextResponse:
    now = datetime.now(UTC)
    targets = load_targets(conn)
    stats = overview_stats(conn, targets, now)
    rows = build_rows(targets, stats, now)
    out = Exposition()
    site_of = {
        m.name + "\0" + t.name: ",".join(sorted({s.site for s in m.series})) or "default"
        for t in targets
        for m in t.modes
    }
    for r in rows:
        if r.state == "disabled":
            continue
        base = {"target": r.target, "mode": r.mode, "kind": r.mode_kind}
        base["site"] = site_of.get(r.mode + "\0" + r.target, "default")
        for phase in ("logon", "ping"):
            name = f"connwatch_{phase}_seconds"
            out.declare(name, "gauge", f"Current {phase} time quantiles (latest 15-minute bucket)")
            for q, v in (
                ("0.5", getattr(r.stats, f"{phase}_p50")),
                ("0.95", getattr(r.stats, f"{phase}_p95")),
            ):
                if v is not None:
                    out.sample(name, labels(**base, quantile=q), v / 1000.0)
        out.declare("connwatch_samples_15m", "gauge", "Samples in the last 15 minutes")
        out.sample("connwatch_samples_15m", labels(**base), r.stats.n_15m)
        out.declare("connwatch_failures_15m", "gauge", "Failed samples in the last 15 minutes")
        out.sample("connwatch_failures_15m", labels(**base), r.stats.failed_15m)
        if r.stats.last_at is not None:
            out.declare(
                "connwatch_last_sample_timestamp_seconds",
                "gauge",
                "End of the newest sample bucket",
            )
            out.sample(
                "connwatch_last_sample_timestamp_seconds",
                labels(**base),
                r.stats.last_at.timestamp(),
            )
        out.declare("connwatch_up", "gauge", "1 when the mode answers (ok or degraded), else 0")
        out.sample("connwatch_up", labels(**base), 1.0 if r.state in ("ok", "degraded") else 0.0)
    logon_histograms(
        out, conn, targets, {(r.target, r.mode) for r in rows if r.state != "disabled"}, now
    )
    body = out.text() + prometheus_text(agent_status(conn, now=now)) + alerts_text(conn)
    return PlainTextResponse(body, media_type=CONTENT_TYPE)


def logon_histograms(
    out: Exposition,
    conn: Connection,
    targets: list[TargetInfo],
    exported: set[tuple[str, str]],
    now: datetime,
) -> None:
    """``connwatch_logon_duration_seconds`` per exported (target, mode): the last hour."""
    modes = [(t, m) for t in targets for m in t.modes if (t.name, m.name) in exported]
    owner = overview_ids(m for _, m in modes)
    per_series = histograms(conn, list(owner), now - timedelta(hours=1), now, phase="logon")
    name = "connwatch_logon_duration_seconds"
    merged: dict[int, Histogram] = {}
    for sid, h in per_series.items():
        into = merged.setdefault(owner[sid], Histogram())
        into.count += h.count
        into.sum_ms += h.sum_ms
        into.buckets += h.buckets
    for t, m in modes:
        mh = merged.get(m.id)
        if mh is None or not mh.count:
            continue
        out.declare(name, "histogram", "Successful logons of the last hour")
        base = {"target": t.name, "mode": m.name, "kind": m.kind}
        values = sorted(mh.buckets)
        cum = i = 0
        for le in LE_SECONDS:
            while i < len(values) and values[i][0] / 1000.0 <= le:
                cum += values[i][1]
                i += 1
            out.sample(f"{name}_bucket", labels(**base, le=number(le)), cum)
        out.sample(f"{name}_bucket", labels(**base, le="+Inf"), mh.count)
        out.sample(f"{name}_sum", labels(**base), mh.sum_ms / 1000.0)
        out.sample(f"{name}_count", labels(**base), mh.count)
