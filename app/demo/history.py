"""``connwatch demo --history``: a year of synthetic history that meets the live samples.

The dashboard and the agent start first; this loads behind them (a thread, with a
progress line per step) once every demo series has a few live samples, so that the
history is drawn around what the live simulators and PostgreSQL really measure (each
phase's live median, the instances the live samples name) and ends just before the
first live sample: no step and no instance that exists only in history.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import typer
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings

if TYPE_CHECKING:
    from app.store.write.synthetic import HistorySeries

log = logging.getLogger(__name__)

# raw samples at each series' own interval for this many days; hour/day rollups for the year
HISTORY_RAW_DAYS = 7
HISTORY_DAYS = 365
# without live samples to calibrate on: one database a little slower than the other
_HISTORY_FACTOR = {"sales-sim": 1.0, "hr-sim": 1.12}
LIVE_SAMPLES = 5  # ok live samples per series before calibrating on them
LIVE_WAIT_S = 90.0  # ... waited for at most this long
_PHASES = ("logon", "ping", "query", "logoff", "commit", "acquire")


def live_shape(
    engine: Engine, series_ids: list[int]
) -> dict[int, tuple[tuple[tuple[str, float], ...], tuple[str, ...], int]]:
    """Per series: the median ms of each phase of its live (not synthetic) ok samples,
    the instances they name, and how many there are."""
    if not series_ids:
        return {}
    medians = ", ".join(
        f"percentile_cont(0.5) within group (order by {p}_ns) filter (where {p}_ns is not null)"
        for p in _PHASES
    )
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                f"select series_id, count(*)::int, {medians}, "
                "array_agg(distinct instance) filter (where instance is not null) "
                "from samples where series_id = any(:ids) and status = 'ok' "
                "and agent is distinct from 'synthetic' group by series_id"
            ),
            {"ids": series_ids},
        ).all()
    out = {}
    for r in rows:
        meds = tuple((p, float(v) / 1e6) for p, v in zip(_PHASES, r[2:8], strict=True) if v)
        out[r[0]] = (meds, tuple(sorted(r[8] or ())), r[1])
    return out


def history_series(engine: Engine, *, calibrate: bool = False) -> list[HistorySeries]:
    """The enabled series of the demo's targets, described for the history generator;
    ``calibrate``: with the live samples' medians and instances where there are some."""
    from app.agent.scheduling.phase import phase_offset_ms
    from app.store.write.synthetic import HistorySeries

    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "select s.id, s.probe, s.interval_ms, s.site, m.kind as mode, m.params, "
                "t.name, t.kind, t.dsn from series s join modes m on m.id = s.mode_id "
                "join targets t on t.id = m.target_id where s.enabled and m.enabled "
                "and t.enabled and t.labels ->> 'demo' = 'true' "
                "and s.probe <> 'serverstats' order by s.id"  # server stats: live only
            )
        ).all()
    live = live_shape(engine, [r.id for r in rows]) if calibrate else {}
    out: list[HistorySeries] = []
    for r in rows:
        address, _, service = str(r.dsn).partition("/")
        if r.kind == "oracle":
            instances: tuple[str, ...] = (f"{r.name.removesuffix('-sim')}1".upper(),)
        else:  # what app.drivers.postgres reports: host (or socket directory) and port
            host, _, port = address.rpartition(":")
            instances = (f"{r.params.get('host', host)}:{r.params.get('port', port)}",)
        medians, seen, _ = live.get(r.id, ((), (), 0))
        out.append(
            HistorySeries(
                id=r.id,
                probe=r.probe,
                mode=r.mode,
                target_kind=r.kind,
                interval_ms=r.interval_ms,
                offset_ms=phase_offset_ms(r.id, r.interval_ms),
                factor=1.0 if medians else _HISTORY_FACTOR.get(r.name, 1.0),
                instances=seen or instances,
                service=service.upper() if r.kind == "oracle" else service,
                site=r.site,
                medians_ms=medians,
            )
        )
    return out


def load_history(
    engine: Engine,
    settings: Settings,
    *,
    raw_days: int = HISTORY_RAW_DAYS,
    days: int = HISTORY_DAYS,
    calibrate: bool = False,
) -> None:
    """A year of synthetic history for every enabled demo series, ending just before
    its first live sample (or now); then the closed raw days are compacted.

    Samples carry ``agent = 'synthetic'``. A series that already has older data is
    left alone, so a second ``demo --history`` adds nothing.
    """
    from app.store.write import synthetic
    from app.store.write.packed import compact_pending

    def say(msg: str) -> None:
        typer.echo(f"  synthetic history: {msg}")

    t0 = time.perf_counter()
    series = history_series(engine, calibrate=calibrate)
    rep = synthetic.backfill(engine, series, raw_days=raw_days, rollup_days=days, progress=say)
    if not rep.series_ids:
        typer.echo("  synthetic history already loaded")
        return
    say(f"compacting the closed days older than {settings.compact_after_days} days")
    packed = compact_pending(engine, after_days=settings.compact_after_days, max_days=raw_days)
    typer.echo(
        f"  synthetic history: done: {rep.raw_samples} raw samples (agent 'synthetic'), "
        f"{rep.rollup_rows} older rollup rows, {len(packed)} days packed, "
        f"{time.perf_counter() - t0:.0f} s in all"
    )


def wait_for_live_samples(engine: Engine, *, enough: int, timeout_s: float) -> None:
    """Until every enabled demo series has ``enough`` live ok samples (or the timeout)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ids = [s.id for s in history_series(engine)]
        shape = live_shape(engine, ids)
        if ids and all(shape.get(i, ((), (), 0))[2] >= enough for i in ids):
            return
        time.sleep(2.0)


def load_history_in_background(engine: Engine, settings: Settings) -> threading.Thread:
    """Load the history in a daemon thread once the live samples have started, so the
    dashboard is up at once; each step prints a progress line."""

    def work() -> None:
        try:
            typer.echo(
                "  synthetic history: loading behind the dashboard (a few minutes on 2 "
                "cores); first a few live samples to match"
            )
            wait_for_live_samples(engine, enough=LIVE_SAMPLES, timeout_s=LIVE_WAIT_S)
            load_history(engine, settings, calibrate=True)
        except Exception:  # the demo goes on without history; say why
            log.exception("synthetic history could not be loaded")

    thread = threading.Thread(target=work, name="demo-history", daemon=True)
    thread.start()
    return thread
