"""The report's sentences (what a manager reads first) and its "what the numbers mean"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.reports.content.change import MIN_BLOCKS, MIN_HISTORY, N_BOOT, NOISE_K, RESOLUTION
from app.reports.content.period import Period

if TYPE_CHECKING:
    from app.reports.content.build import IncidentOut, ReportRow
    from app.reports.content.events import EventOut
    from app.reports.content.objectives import SloRow

DEFINITIONS: dict[str, str] = {
    "period": "an ISO week, Monday 00:00 to Monday 00:00 UTC (or a calendar month, UTC); "
    "a period still running is compared with the whole period before it",
    "probe": "each mode is read from one probe kind: connping where it runs it (else the "
    "first of sessionping, commit, poolacquire), never a mix",
    "availability": "ok runs / runs that ran, in percent, floored to 0.01 (only a period "
    "without failures shows 100.00): errors and timeouts count as unavailable; skipped runs "
    "(the monitoring agent could not start them in time: its trouble, not the database's) "
    "and probe-side errors (class PROBE: the measurement itself failed on connwatch's side) "
    "are not counted at all",
    "latency": "logon and ping p50/p95 of the ok runs, in ms, from merged histograms, each "
    "within 1.96 % of the exact percentile; a mode measured from several sites shows its "
    "worst site",
    "slower or faster": f"a p95 change is called slower or faster only when it exceeds (1) "
    f"the store's resolution: {RESOLUTION * 100:.0f} %, since two percentiles each within "
    f"1.96 % can differ by that with nothing changed; (2) sampling noise: the 95 % interval "
    f"of the ratio, from {N_BOOT} block-bootstrap resamples of each period cut into 6-hour "
    f"blocks (days for a month), excludes no change (with fewer than {MIN_BLOCKS} blocks "
    f"there is too little data to tell); and (3) week-to-week noise: the change is larger "
    f"than {NOISE_K:g} x the typical size (a standard deviation: 1.2533 x the mean absolute "
    f"change, the largest left out) of the earlier week-to-week changes of the 12-week "
    f"trend, where at least {MIN_HISTORY} are known. "
    "Anything else is 'no clear change', whatever its sign",
    "availability change": "in percentage points; availability is what happened, not an "
    "estimate, so any change of 0.01 points or more is called lower or higher",
    "trend": "the 12 weeks ending with this one, each a whole week (the current one so far) "
    "from the weekly rollups; weeks without samples are gaps, never interpolated",
    "incidents": "outages are 3 or more failed runs in a row; spikes are hours whose logon "
    "p95 exceeded twice the median p95 of the same weekday and hour over the 4 weeks before",
    "slo": "an objective such as '99.9 % of logons succeed within 250 ms' (SLOs are defined "
    "with the alerts): attainment = good runs / runs that count, this period and month to "
    "date; error budget left over the SLO's own window ending with the period (100 % "
    "untouched, below 0 overspent); burn = (1 - attainment) / (1 - objective) over the "
    "period, 1.0 spends exactly the budget. Skipped runs and failures the monitor caused "
    "itself never count",
    "mode comparison": "median logon of each mode against the baseline mode (dedicated "
    "server for Oracle, direct for PostgreSQL) over the period, with a 95 % block-bootstrap "
    "interval; an interval that includes no difference is 'not a clear difference'",
}


MAX_NAMED = 6  # a summary names the worst few; the table has the rest


def _names(rows: Sequence[ReportRow], fmt: str) -> str:
    named = ", ".join(fmt.format(r=r) for r in rows[:MAX_NAMED])
    rest = len(rows) - MAX_NAMED
    return named + (f" and {rest} more (see the table)" if rest > 0 else "")


def summarise(
    rows: Sequence[ReportRow],
    period: Period,
    incidents: Sequence[IncidentOut] = (),
    slos: Sequence[SloRow] = (),
    events: Sequence[EventOut] = (),
) -> list[str]:
    out: list[str] = []
    noun = period.noun
    compared = [r for r in rows if r.logon_change.change is not None]
    slower = sorted(
        (r for r in compared if r.logon_change.word == "slower"),
        key=lambda r: -(r.logon_change.change or 0.0),
    )
    faster = sorted(
        (r for r in compared if r.logon_change.word == "faster"),
        key=lambda r: r.logon_change.change or 0.0,
    )
    if not compared:
        out.append(f"No mode has logon p95 figures for both {noun}s: no {noun}-over-{noun} "
                   "comparison.")  # fmt: skip
    elif not slower and not faster:
        out.append(
            f"No clear change in logon p95 {noun} over {noun} in any of the {len(compared)} "
            "modes (no change beyond the store's resolution and the usual noise)."
        )
    else:
        if slower:
            out.append(
                f"{len(slower)} of {len(compared)} modes got slower {noun} over {noun} "
                f"(logon p95, beyond resolution and noise): "
                + _names(slower, "{r.target}/{r.mode} (+{r.logon_change.change:.0f} %)")
                + "."
            )
        if faster:
            out.append(
                f"{len(faster)} of {len(compared)} modes got faster: "
                + _names(faster, "{r.target}/{r.mode} ({r.logon_change.change:.0f} %)")
                + "."
            )
        rest = len(compared) - len(slower) - len(faster)
        if rest:
            out.append(f"The other {rest} showed no clear change.")
    ran = sum(r.samples - r.skipped for r in rows)
    if ran:
        ok = sum(r.ok for r in rows)
        failed = sum(r.failed for r in rows)
        skipped = sum(r.skipped for r in rows)
        total = int(100.0 * ok / ran * 100.0 + 1e-9) / 100.0
        out.append(
            f"Availability over all modes: {total:.2f} % ({failed:,} failed of {ran:,} runs"
            + (f"; {skipped:,} skipped runs not counted" if skipped else "")
            + ")."
        )
    lower = sorted(
        (r for r in rows if r.availability_change.word == "lower"),
        key=lambda r: r.availability_change.change or 0.0,
    )
    if lower:
        out.append(
            f"{len(lower)} {'mode' if len(lower) == 1 else 'modes'} had lower availability "
            f"than the {noun} before: "
            + _names(lower, "{r.target}/{r.mode} ({r.availability_change.change:+.2f} pts)")
            + "."
        )
    for s in slos:
        if s.target or s.attainment_period is None:
            continue
        verdict = "met" if s.met_period else "missed"
        budget = (
            f"; error budget left over {s.window_days} days: {s.budget_left_pct:.0f} %"
            if s.budget_left_pct is not None
            else ""
        )
        out.append(
            f"SLO {s.slo} ({s.objective:g} %): {s.attainment_period:.3f} % this {noun}, "
            f"{verdict}{budget}."
        )
    outages = [i for i in incidents if i.kind == "outage"]
    spikes = [i for i in incidents if i.kind == "spike"]
    if outages or spikes:

        def count(n: int, what: str) -> str:
            return f"{n or 'no'} {what}{'s' if n != 1 else ''}"

        text = f"{count(len(outages), 'outage')} and {count(len(spikes), 'latency spike')}"
        text = text[0].upper() + text[1:]
        if outages:
            worst = max(outages, key=lambda i: i.duration_s)
            codes = ", ".join(sorted(worst.codes, key=lambda c: -worst.codes[c])[:2])
            text += (
                f"; the longest outage: {worst.target}/{worst.mode}, "
                f"{duration_words(worst.duration_s)}" + (f" ({codes})" if codes else "")
            )
        out.append(text + ".")
    elif rows:
        out.append(f"No outages or latency spikes this {noun}.")
    kinds = [("firing", "alert firing", "alert firings"),
             ("maintenance", "maintenance window", "maintenance windows"),
             ("annotation", "annotation", "annotations")]  # fmt: skip
    counted = [(sum(e.kind == k for e in events), one, many) for k, one, many in kinds]
    if any(n for n, _, _ in counted):
        out.append(
            "Also this "
            + noun
            + ": "
            + ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counted if n)
            + "."
        )
    return out


def duration_words(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s % 60 and s < 600 else "")
    h, m = divmod(s // 60, 60)
    if h < 48:
        return f"{h} h" + (f" {m} min" if m else "")
    return f"{h // 24} days {h % 24} h"
