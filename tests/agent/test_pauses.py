"""Maintenance windows with ``pause_probes``: the agent skips the covered series' runs while
the window is open (SKIPPED ``PAUSED`` naming the window), the others run on, and probing
resumes at the window's end with a fresh logon. A real window row, a real agent, real
PostgreSQL as store and target."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.engine import Engine

from app.agent.scheduling.pauses import PauseBook, compute_spans
from app.alerts.mute.maintenance import Schedule, WindowSpec, upsert_window
from app.demo.pgcluster import PgCluster
from app.targets.selector import Selector
from tests.agent.conftest import gaps, make_settings, pg_target_series, run_agent, samples_of
from tests.agent.procs import by_series

INTERVAL_MS = 500


def window(name: str, start_utc: datetime, *, tz: str, pause: bool = True) -> WindowSpec:
    """A one-off window of 60 s (the shortest there is) given in local time of ``tz``."""
    local = start_utc.astimezone(ZoneInfo(tz)).replace(tzinfo=None)
    return WindowSpec(
        name=name,
        selector=Selector(targets=["paused*"]),
        schedule=Schedule(once=local),
        timezone=tz,
        duration="60s",  # type: ignore[arg-type]
        pause_probes=pause,
    )


def test_a_pausing_window_skips_its_series_and_probing_resumes_at_its_end(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    paused = pg_target_series(
        store, pg_cluster, pg_database, 1, interval_ms=INTERVAL_MS, probe="sessionping",
        name="paused-db",
    )  # fmt: skip
    others = pg_target_series(
        store, pg_cluster, pg_database, 1, interval_ms=INTERVAL_MS, probe="sessionping",
        name="other-db",
    )  # fmt: skip
    marks: dict[str, datetime] = {}

    async def during(agent: Any) -> None:
        await asyncio.sleep(2.0)  # probing, sessions kept
        with store.begin() as conn:
            # a window that opened 55 s ago in Paris time and ends 5 s from now, and one
            # without pause_probes over the same span (alerts only: probes go on)
            start = (datetime.now(UTC) - timedelta(seconds=55)).replace(microsecond=0)
            upsert_window(conn, window("patch-night", start, tz="Europe/Paris"))
            upsert_window(conn, window("mute-only", start, tz="UTC", pause=False))
        marks["created"], marks["end"] = datetime.now(UTC), start + timedelta(seconds=60)
        while datetime.now(UTC) < marks["end"] + timedelta(seconds=2.5):
            await asyncio.sleep(0.2)

    agent = run_agent(store, make_settings(tmp_path, "postgresql://unused/x"), 0, during=during)
    rows = by_series(samples_of(store, paused + others))
    created, end = marks["created"], marks["end"]

    mine = rows[paused[0]]
    assert gaps([r.scheduled_at for r in mine], INTERVAL_MS) == []  # one sample per instant
    skipped = [r for r in mine if r.error_code == "PAUSED"]
    assert skipped and all(r.status == "skipped" for r in skipped)
    assert all(created - timedelta(seconds=1) <= r.scheduled_at < end for r in skipped)
    # in effect within a coordination tick or two (margin: seconds), to the window's end
    assert min(r.scheduled_at for r in skipped) - created <= timedelta(seconds=3)
    assert [r for r in mine if created + timedelta(seconds=3) <= r.scheduled_at < end] == [
        r for r in skipped if r.scheduled_at >= created + timedelta(seconds=3)
    ]
    after = [r for r in mine if r.scheduled_at >= end]
    # resumed at the end, logged on afresh (a loaded machine may skip an instant LATE)
    assert sum(r.status == "ok" for r in after) >= 3, [(r.status, r.error_code) for r in after]
    assert after[0].scheduled_at - end < timedelta(milliseconds=INTERVAL_MS)
    assert any(r.status == "ok" for r in mine if r.scheduled_at < created)

    theirs = rows[others[0]]  # not selected: probed throughout
    assert [r for r in theirs if r.error_code == "PAUSED"] == []
    assert sum(1 for r in theirs if created <= r.scheduled_at < end and r.status == "ok") >= 6

    assert agent.stats.skipped_by["PAUSED"] == len(skipped)


def test_a_weekly_window_pauses_from_its_local_start_to_its_end_exactly(
    store: Engine, pg_cluster: PgCluster, pg_database: str
) -> None:
    """Saturday 02:00 Paris time for an hour = 01:00-02:00 UTC in November; the book
    computed 5 minutes before covers exactly that, for the selected series only."""
    sel = pg_target_series(store, pg_cluster, pg_database, 1, name="paused-weekly")
    other = pg_target_series(store, pg_cluster, pg_database, 1, name="kept-weekly")
    spec = WindowSpec(
        name="saturday-patch",
        selector=Selector(targets=["paused*"]),
        schedule=Schedule(weekly={"days": ["sat"], "at": "02:00"}),
        timezone="Europe/Paris",
        duration="1h",  # type: ignore[arg-type]
        pause_probes=True,
    )
    with store.begin() as conn:
        upsert_window(conn, spec)
        now = datetime(2026, 11, 28, 0, 55, tzinfo=UTC)  # a Saturday
        spans = compute_spans(conn, frozenset(sel + other), now, 900)
    book = PauseBook()
    book.spans = spans
    assert set(spans) == set(sel)
    one = datetime(2026, 11, 28, 1, 0, tzinfo=UTC)
    assert book.at(sel[0], one - timedelta(milliseconds=1)) is None
    pause = book.at(sel[0], one)
    assert pause is not None and pause.window == "saturday-patch"
    assert book.at(sel[0], one + timedelta(minutes=59, seconds=59)) == pause
    assert book.at(sel[0], one + timedelta(hours=1)) is None
    assert book.at(other[0], one) is None
    assert pause.message() == (
        "probing paused by maintenance window 'saturday-patch' until 2026-11-28 02:00:00 UTC "
        "(planned, not an outage)"
    )
