"""Every metric family ``/metrics`` exposes, in one place, and the text format writer.

A family is declared once here (name, Prometheus type, help, labels) and filled by a
collector (:mod:`app.metrics.collect`); :class:`Exposition` refuses a sample of an
undeclared family and writes families in the order declared here, each with its
``# HELP`` and ``# TYPE`` once, so the text is what ``promtool check metrics`` accepts
(tests run it). To add a metric: add a :class:`Family` to :data:`FAMILIES` (snake_case,
base units in the name: ``_seconds``, ``_bytes``, ``_ratio``; counters end in
``_total``; no ``quantile`` or ``le`` labels outside summaries and histograms), fill it
in a collector, and document it in docs/web.md ("/metrics").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from app.store.read.agents import label_value

TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"
SERIES_LABELS = ("target", "mode", "probe", "site")  # one probe series
MODE_LABELS = ("target", "mode")  # one mode, all its sites (the overview's view)
AGENT_LABELS = ("agent", "site")


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    type: str  # counter, gauge, histogram
    help: str
    labels: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    # --- per probe series, cumulative, counted by the store (app.store.read.totals) -----
    Family(
        "connwatch_samples_total",
        "counter",
        "Samples stored for the series since its first, by outcome: ok, error (the "
        "target's), timeout, skipped (the agent could not start the run), probe_error "
        "(probe-side: connwatch's own trouble, not the target's)",
        (*SERIES_LABELS, "outcome"),
    ),
    Family(
        "connwatch_logon_duration_seconds",
        "histogram",
        "Logon time of the series' successful samples since its first (cumulative; bounds "
        "are the store's bucket edges, 1.265x apart)",
        SERIES_LABELS,
    ),
    Family(
        "connwatch_ping_duration_seconds",
        "histogram",
        "Ping (one round trip) time of the series' successful samples since its first "
        "(cumulative; bounds are the store's bucket edges, 1.265x apart)",
        SERIES_LABELS,
    ),
    # --- per mode, now: the overview's view (each mode's overview probe, all sites) -----
    Family(
        "connwatch_mode_info",
        "gauge",
        "1 per monitored mode, with its kind (dedicated, shared, pooled, direct, ...) and "
        "database (oracle, postgres); join on target and mode",
        (*MODE_LABELS, "kind", "db", "probe"),
    ),
    Family(
        "connwatch_mode_state",
        "gauge",
        "The overview's state of the mode: 1 for the current state, 0 for the others "
        "(ok, degraded, down, probe-error, stale, unknown)",
        (*MODE_LABELS, "state"),
    ),
    Family(
        "connwatch_up",
        "gauge",
        "1 when the mode answers (ok or degraded), 0 when down or stale; absent while no "
        "recent run measured it (probe-error) or it has no series",
        MODE_LABELS,
    ),
    Family(
        "connwatch_last_sample_timestamp_seconds",
        "gauge",
        "Scheduled time of the mode's newest sample (Unix seconds)",
        MODE_LABELS,
    ),
    Family(
        "connwatch_logon_p50_seconds",
        "gauge",
        "The overview's current logon p50: the latest aligned 15-minute bucket with "
        "successful samples (exact, from the store)",
        MODE_LABELS,
    ),
    Family(
        "connwatch_logon_p95_seconds",
        "gauge",
        "The overview's current logon p95 (latest 15-minute bucket with successful samples)",
        MODE_LABELS,
    ),
    Family(
        "connwatch_ping_p50_seconds",
        "gauge",
        "The overview's current ping p50 (latest 15-minute bucket with successful samples)",
        MODE_LABELS,
    ),
    Family(
        "connwatch_ping_p95_seconds",
        "gauge",
        "The overview's current ping p95 (latest 15-minute bucket with successful samples)",
        MODE_LABELS,
    ),
)
# Per agent, from its heartbeat (app.store.read.agents): (name, type, help, where in the
# agent's stats, divisor to base units). Counters restart with the agent (a reset to
# Prometheus, which rate() handles).
AGENT_FAMILIES: tuple[tuple[str, str, str, str, int], ...] = (
    ("up", "gauge", "1 if the agent sent a heartbeat in the last 10 s", "alive", 1),
    ("heartbeat_age_seconds", "gauge", "Seconds since its last heartbeat", "heartbeat_age_s", 1),
    ("series", "gauge", "Series the agent runs", "stats.series", 1),
    ("in_flight", "gauge", "Probe runs executing now", "stats.in_flight", 1),
    ("lag_p50_seconds", "gauge", "Start lag p50 over the last minute", "stats.lag_ms.p50", 1000),
    ("lag_p95_seconds", "gauge", "Start lag p95 over the last minute", "stats.lag_ms.p95", 1000),
    ("lag_p99_seconds", "gauge", "Start lag p99 over the last minute", "stats.lag_ms.p99", 1000),
    ("runs_total", "counter", "Probe runs executed since it started", "stats.runs", 1),
    ("runs_failed_total", "counter", "Runs ended in error or timeout", "stats.runs_failed", 1),
    ("skipped_total", "counter", "Runs recorded as skipped", "stats.skipped", 1),
    ("spool_samples", "gauge", "Samples waiting in its local spool", "stats.spool_samples", 1),
    ("spool_bytes", "gauge", "Bytes in its local spool", "stats.spool_bytes", 1),
    ("spool_fill_ratio", "gauge", "Spool fill, 0..1 of its bound", "stats.spool_fill", 1),
    ("samples_written_total", "counter", "Samples it stored", "stats.written", 1),
    ("samples_dropped_total", "counter", "Samples it lost (spool full)", "stats.dropped", 1),
    ("cpu_ratio", "gauge", "Process CPU seconds per second (1: a core)", "stats.cpu_percent", 100),
    ("cpu_seconds_per_run", "gauge", "CPU time per probe run", "stats.cpu_ms_per_run", 1000),
    # overload (docs/agent.md, "Overload"): when and by how much the agent cannot keep up
    ("overloaded", "gauge", "1 while more runs are due than the agent can start on time "
     "(it starts a share of every series' instants and records the rest as skipped "
     "OVERLOAD)", "stats.overload.active", 1),
    ("overload_factor", "gauge", "Runs due per second over the runs per second the agent "
     "can start on time; above 1 the agent is overloaded by that much",
     "stats.overload.factor", 1),
    ("run_share_ratio", "gauge", "Share of due runs the agent starts (1 unless overloaded)",
     "stats.overload.share", 1),
    ("runs_due_per_second", "gauge", "Instants due per second, all series of the agent",
     "stats.overload.demand_per_s", 1),
    ("capacity_runs_per_second", "gauge", "Runs per second the agent's workers start on "
     "time at their target utilisation (measured)", "stats.overload.capacity_per_s", 1),
    ("loop_busy_ratio", "gauge", "The busiest worker's event loop: share of time it was not "
     "idle", "stats.overload.busy", 1),
    ("overload_skipped_total", "counter", "Instants recorded as skipped OVERLOAD since start",
     "stats.overload.skipped", 1),
    ("workers", "gauge", "Worker processes the agent runs (configured)",
     "stats.workers_configured", 1),
    ("workers_alive", "gauge", "Worker processes alive", "stats.workers_alive", 1),
    ("wal_pending_samples", "gauge", "Samples in the write-ahead log not yet stored or "
     "spooled", "stats.wal_pending", 1),
)  # fmt: skip
# Per worker process of an alive agent (label ``worker``), from ``stats.workers[i]``:
# (name, type, help, where in the worker's document, divisor to base units).
WORKER_LABELS = (*AGENT_LABELS, "worker")
WORKER_FAMILIES: tuple[tuple[str, str, str, str, int], ...] = (
    ("worker_series", "gauge", "Series this worker runs", "series", 1),
    ("worker_loop_busy_ratio", "gauge", "Share of time this worker's event loop was not idle",
     "overload.busy", 1),
    ("worker_run_share_ratio", "gauge", "Share of due runs this worker starts",
     "overload.share", 1),
    ("worker_lag_p99_seconds", "gauge", "Start lag p99 of this worker's runs, last minute",
     "lag_p99_ms", 1000),
)  # fmt: skip
FAMILIES += tuple(
    Family(f"connwatch_agent_{name}", kind, help_text, AGENT_LABELS)
    for name, kind, help_text, _, _ in AGENT_FAMILIES
) + tuple(
    Family(f"connwatch_agent_{name}", kind, help_text, WORKER_LABELS)
    for name, kind, help_text, _, _ in WORKER_FAMILIES
)
BY_NAME: dict[str, Family] = {f.name: f for f in FAMILIES}
SIGNIFICANT = 12  # digits a non-integer sample value is printed with, at most
TIMESTAMP_FROM = 1e9  # values this large are Unix times: printed to the millisecond


def to_base(value: float, divisor: int) -> float:
    """``value`` (e.g. milliseconds) in base units (seconds: ``divisor`` 1000), shifted in
    decimal: 1.531247 ms is 0.001531247 s, not ``1.531247 / 1000.0`` =
    0.0015312470000000001 (binary division adds digits the measurement never had)."""
    if divisor == 1 or not math.isfinite(value):
        return float(value)
    return float(Decimal(repr(float(value))) / Decimal(divisor))


def ns_to_seconds(ns: float) -> float:
    """Nanoseconds (rounded to whole ones) in seconds: the double nearest the exact decimal
    ``ns`` / 1e9 (one correctly rounded division of two exact numbers)."""
    return round(ns) / 1e9


def number(v: float) -> str:
    """A sample value as text: integers in full (counters stay exact); Unix times to the
    millisecond; anything else with at most :data:`SIGNIFICANT` significant digits, the
    shortest text that reads back as that value (no binary float noise such as
    0.0015312470000000001)."""
    v = float(v)
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "+Inf" if v > 0 else "-Inf"
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    if abs(v) >= TIMESTAMP_FROM:
        return f"{v:.3f}".rstrip("0").rstrip(".")
    return repr(float(f"{v:.{SIGNIFICANT}g}"))


def labels(pairs: Iterable[tuple[str, str]]) -> str:
    body = ",".join(f'{k}="{label_value(str(v))}"' for k, v in pairs)
    return "{" + body + "}" if body else ""


class Exposition:
    """Samples of declared families, written in the text format 0.0.4."""

    def __init__(self, families: Sequence[Family] = FAMILIES) -> None:
        self._families = {f.name: f for f in families}
        self._samples: dict[str, list[str]] = {f.name: [] for f in families}

    def add(self, family: str, label_values: Sequence[str], value: float) -> None:
        """One sample of a gauge or counter; ``label_values`` in the family's label order."""
        f = self._family(family, ("gauge", "counter"))
        self._samples[family].append(
            f"{family}{labels(zip(f.labels, label_values, strict=True))} {number(value)}"
        )

    def histogram(
        self,
        family: str,
        label_values: Sequence[str],
        bounds: Sequence[str],
        cumulative: Sequence[int],
        count: int,
        total: float,
    ) -> None:
        """One histogram: ``cumulative[i]`` samples <= ``bounds[i]`` (an ``le`` text),
        then ``+Inf`` (= ``count``), ``_sum`` and ``_count``."""
        f = self._family(family, ("histogram",))
        base = list(zip(f.labels, label_values, strict=True))
        out = self._samples[family]
        for le, c in zip(bounds, cumulative, strict=True):
            out.append(f"{family}_bucket{labels([*base, ('le', le)])} {number(c)}")
        out.append(f"{family}_bucket{labels([*base, ('le', '+Inf')])} {number(count)}")
        out.append(f"{family}_sum{labels(base)} {number(total)}")
        out.append(f"{family}_count{labels(base)} {number(count)}")

    def _family(self, name: str, kinds: tuple[str, ...]) -> Family:
        f = self._families.get(name)
        if f is None:
            raise KeyError(f"metric family {name!r} is not declared in app.metrics.registry")
        if f.type not in kinds:
            raise ValueError(f"{name} is a {f.type}")
        return f

    def text(self) -> str:
        """The families that have samples, each with HELP and TYPE once, in declared order."""
        lines: list[str] = []
        for name, f in self._families.items():
            samples = self._samples[name]
            if samples:
                lines += [f"# HELP {name} {f.help}", f"# TYPE {name} {f.type}", *samples]
        return "\n".join(lines) + "\n" if lines else ""
