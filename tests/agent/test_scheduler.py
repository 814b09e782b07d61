"""The scheduler in a running agent: one sample per instant, skips recorded, no stalls."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app.agent.options import AgentOptions
from app.agent.scheduling.phase import from_ms, instant_at_or_before, phase_offset_ms
from app.agent.scheduling.scheduler import SLOT_MS, slot_of
from app.demo.pgcluster import PgCluster
from tests.agent.conftest import (
    add_mode,
    add_series,
    add_target,
    gaps,
    make_settings,
    pg_target_series,
    run_agent,
    samples_of,
)
from tests.probes.hanging import hanging_listener


def by_series(rows: list[Any]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for r in rows:
        out.setdefault(r.series_id, []).append(r)
    return out


def test_every_instant_gives_one_sample_on_its_phase(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 4, interval_ms=500)
    agent = run_agent(store, make_settings(tmp_path, "postgresql://unused/x"), 4.0)
    series = by_series(samples_of(store, ids))
    assert set(series) == set(ids)
    phases = set()
    for _sid, rows in series.items():
        assert len(rows) >= 5
        assert gaps([r.scheduled_at for r in rows], 500) == []
        assert all(r.status == "ok" and r.started_at >= r.scheduled_at for r in rows)
        assert all(r.agent == agent.name for r in rows)
        phases.add(rows[0].scheduled_at.microsecond // 1000 % 500)
    assert len(phases) == 4  # each series on its own phase, not a burst
    assert agent.stats.runs == sum(len(r) for r in series.values())
    assert agent.stats.skipped == 0


def test_hanging_target_does_not_delay_the_others(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    healthy = pg_target_series(store, pg_cluster, pg_database, 3, interval_ms=1000)
    with hanging_listener() as port:
        with store.begin() as conn:
            t = add_target(conn, "hangs", dsn=f"127.0.0.1:{port}/db")
            hanging = [
                add_series(conn, add_mode(conn, t, f"d{i}", "direct"), timeout_ms=900)
                for i in range(6)
            ]
        run_agent(store, make_settings(tmp_path, "postgresql://unused/x"), 5.0)
    good = by_series(samples_of(store, healthy))
    bad = by_series(samples_of(store, hanging))
    # every series produced samples (an empty result must not pass)
    assert set(good) == set(healthy) and set(bad) == set(hanging)
    for rows in good.values():
        assert len(rows) >= 4 and gaps([r.scheduled_at for r in rows], 1000) == []
        assert all(r.status == "ok" for r in rows)
        # a healthy run never waited behind a hanging one (those take 900 ms each)
        assert max((r.started_at - r.scheduled_at).total_seconds() for r in rows) < 0.6
    for rows in bad.values():
        assert len(rows) >= 4 and gaps([r.scheduled_at for r in rows], 1000) == []
        # each instant times out; on a loaded machine a hung run's cleanup may still be
        # running at the next instant, which is then recorded as skipped (OVERRUN)
        assert {r.status for r in rows} <= {"timeout", "skipped"}
        assert sum(r.status == "timeout" for r in rows) >= 3


def test_overrun_and_late_runs_are_recorded_as_skipped(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    healthy = pg_target_series(store, pg_cluster, pg_database, 2, interval_ms=500)
    with hanging_listener() as port:
        with store.begin() as conn:
            t = add_target(conn, "hangs", dsn=f"127.0.0.1:{port}/db")
            # timeout == interval: a hung run (plus its cleanup) overlaps the next instant
            overrun = add_series(
                conn, add_mode(conn, t, "d", "direct"), interval_ms=1000, timeout_ms=1000
            )

        marks: dict[str, datetime] = {}

        async def block_the_loop(agent: Any) -> None:
            await asyncio.sleep(2.5)
            marks["blocked"] = datetime.now(UTC)
            time.sleep(2.2)  # the event loop is stuck: instants pass unseen
            marks["unblocked"] = datetime.now(UTC)
            await asyncio.sleep(2.0)

        agent = run_agent(
            store, make_settings(tmp_path, "postgresql://unused/x"), 0, during=block_the_loop
        )
    rows = by_series(samples_of(store, [*healthy, overrun]))
    blocked, unblocked = marks["blocked"], marks["unblocked"]
    for sid in healthy:
        # 2.2 s blocked, 500 ms interval, 250 ms grace: at least 3 instants of the block
        # could not start in time: LATE, or OVERRUN if the block caught a run of the series
        # in flight; a run the block held past its deadline is the agent's stall
        # (OVERLOAD), never the target's TIMEOUT. Outside the block a loaded machine may
        # make the target itself slow: its own timeouts there are honest samples.
        near = [
            r
            for r in rows[sid]
            if blocked - timedelta(milliseconds=600) <= r.scheduled_at <= unblocked
        ]
        codes = Counter(r.error_code for r in near if r.status == "skipped")
        assert sum(codes.values()) >= 3 and set(codes) <= {"LATE", "OVERRUN", "OVERLOAD"}, codes
        assert {r.status for r in near} <= {"ok", "skipped"}, [
            (r.status, r.error_code) for r in near
        ]
        assert gaps([r.scheduled_at for r in rows[sid]], 500) == []
    o = rows[overrun]
    assert gaps([r.scheduled_at for r in o], 1000) == []
    assert any(r.error_code == "OVERRUN" for r in o)
    assert {r.status for r in o} <= {"timeout", "skipped"}
    assert agent.stats.skipped == sum(
        1 for rs in rows.values() for r in rs if r.status == "skipped"
    )


def test_unbuildable_series_gives_config_errors_not_a_crash(
    store: Engine,
    pg_cluster: PgCluster,
    pg_database: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = pg_target_series(store, pg_cluster, pg_database, 1, interval_ms=500)
    with store.begin() as conn:
        t = add_target(
            conn,
            "secretless",
            dsn=f"127.0.0.1:{pg_cluster.port}/{pg_database}",
            password_ref="env:CONNWATCH_TEST_NEVER_SET",
        )
        bad = add_series(conn, add_mode(conn, t, "direct"), interval_ms=500)
    run_agent(store, make_settings(tmp_path, "postgresql://unused/x"), 2.5)
    rows = by_series(samples_of(store, [*good, bad]))
    assert len(rows[bad]) >= 3 and {r.error_code for r in rows[bad]} == {"PROBE-CONFIG"}
    assert {r.status for r in rows[bad]} == {"error"}
    assert {r.status for r in rows[good[0]]} == {"ok"}
    said = [r.getMessage() for r in caplog.records if "cannot run" in r.getMessage()]
    assert len(said) == 1, said  # once, not every run
    assert said[0].count(f"series {bad} (") == 1, said  # its name once, not repeated


def test_rate_limit_skips_instead_of_storming(
    store: Engine, pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    ids = pg_target_series(store, pg_cluster, pg_database, 8, interval_ms=500)
    opts = AgentOptions(target_logons_per_s=4.0)  # 8 series x 2 logons/s = 16 wanted
    agent = run_agent(store, make_settings(tmp_path, "postgresql://unused/x"), 3.0, options=opts)
    rows = samples_of(store, ids)
    ok = [r for r in rows if r.status == "ok"]
    limited = [r for r in rows if r.error_code == "RATE_LIMIT"]
    assert limited and agent.stats.skipped_by["RATE_LIMIT"] == len(limited)
    span = (max(r.started_at for r in ok) - min(r.started_at for r in ok)).total_seconds()
    assert len(ok) <= 4 + 4 * span + 1  # burst + rate, never more
    for rows_of in by_series(rows).values():
        assert gaps([r.scheduled_at for r in rows_of], 500) == []


def test_a_run_past_its_grace_is_recorded_late_without_running(store: Engine) -> None:
    from datetime import UTC, datetime, timedelta

    from app.agent.scheduling.limits import Limiter
    from app.agent.scheduling.scheduler import SeriesScheduler
    from app.agent.scheduling.specs import load_series
    from app.agent.stats import AgentStats
    from app.samples import Sample

    with store.begin() as conn:
        t = add_target(conn, "never-contacted", dsn="192.0.2.1:5432/db")
        sid = add_series(conn, add_mode(conn, t, "direct"), interval_ms=1000)
        rows = load_series(conn, "default")
    got: list[Sample] = []
    built: list[int] = []

    def build(row: Any) -> Any:
        built.append(row.series_id)
        raise AssertionError("a late run must not build or run its probe")

    async def go() -> None:
        sched = SeriesScheduler(
            build=build,
            submit=got.append,
            limiter=Limiter(10, 10, 10),
            stats=AgentStats(),
            agent="a",
            site="default",
            max_grace_s=5.0,
        )
        sched.sync(rows)  # not started: only the run we call ourselves happens
        await sched._run(sid, datetime.now(UTC) - timedelta(seconds=2))
        await sched.stop(1.0)

    asyncio.run(go())
    assert built == []
    assert len(got) == 1
    late = got[0]
    assert (late.status, late.error_code, late.error_phase) == ("skipped", "LATE", "schedule")
    assert "grace of 0.5 s" in (late.error_message or "")


def test_slot_instants_are_each_series_own_phase() -> None:
    """A slot job fires on the slot's grid; each member's timer lands on its own phase."""
    for interval in (100, 1000, 1500, 10_000, 3_600_000):
        for sid in range(1, 400):
            off = phase_offset_ms(sid, interval)
            key = slot_of(interval, off)
            delta = off - key[1]
            assert key[0] == interval and 0 <= key[1] < interval and 0 <= delta < SLOT_MS
            for k in (0, 1, 7, 29_000_000):
                slot_instant = from_ms(k * interval + key[1])
                member = slot_instant + timedelta(milliseconds=delta)
                assert member == from_ms(k * interval + off)
                assert instant_at_or_before(sid, interval, member) == member
