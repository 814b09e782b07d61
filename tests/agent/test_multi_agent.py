"""Past one machine (issue 16, item 5): four agents at two sites share 2,000 series; one is
killed (SIGKILL) and the other agent of its site takes its series over within two
intervals; no instant is probed twice and, apart from the killed agent's last moments,
none is missed.

Real processes (``python -m app.cli.main agent``), the Oracle Net simulator in its own
process (sessionping: kept sessions, one logon per series), a real PostgreSQL store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings
from app.demo.pgcluster import PgCluster
from app.oraclesim.tooling.runner import SimulatorProcess
from app.secrets import Vault
from tests.agent.conftest import gaps
from tests.agent.procs import KEY, AgentProcs, agent_stats, by_series, wait_for

SERIES_PER_SITE = 1000
INTERVAL_MS = 5000
TARGETS = 20
SITES = {"east": ("east-1", "east-2"), "west": ("west-1", "west-2")}


@pytest.fixture
def simulator(tmp_path: Path) -> Iterator[SimulatorProcess]:
    cfg = tmp_path / "sim.yaml"
    cfg.write_text("processes: 100000\n")  # 2,000 sessions: no ORA-00020
    with SimulatorProcess(cfg, no_latency=True) as sim:
        yield sim


def add_site_series(store: Engine, port: int, tmp_path: Path) -> dict[str, list[int]]:
    """20 Oracle targets; per site 1,000 sessionping series at 5 s (one mode each)."""
    token = Vault.from_settings(
        Settings(database_url="postgresql://unused/x", data_dir=tmp_path, secret_key=KEY)
    ).encrypt("tiger")
    out: dict[str, list[int]] = {}
    with store.begin() as conn:
        conn.execute(
            text(
                "insert into targets (name, kind, dsn, username, password_enc) "
                "select 'ma' || t, 'oracle', :dsn, 'scott', :p from generate_series(1, :n) t"
            ),
            {"dsn": f"127.0.0.1:{port}/FREEPDB1", "p": token, "n": TARGETS},
        )
        for site in SITES:
            conn.execute(
                text(
                    "insert into modes (target_id, name, kind) "
                    "select t.id, :site || '-' || i, 'dedicated' "
                    "from generate_series(0, :n - 1) i "
                    "join targets t on t.name = 'ma' || (1 + i % :t)"
                ),
                {"site": site, "n": SERIES_PER_SITE, "t": TARGETS},
            )
            out[site] = list(
                conn.execute(
                    text(
                        "insert into series (mode_id, probe, interval_ms, timeout_ms, site) "
                        "select id, 'sessionping', :i, 2000, :site from modes "
                        "where name like :site || '-%' order by id returning id"
                    ),
                    {"i": INTERVAL_MS, "site": site},
                ).scalars()
            )
    return out


@pytest.mark.slow
def test_four_agents_at_two_sites_share_2000_series_and_take_over_a_killed_one(
    store: Engine,
    pg_cluster: PgCluster,
    pg_database: str,
    agents: AgentProcs,
    simulator: SimulatorProcess,
    tmp_path: Path,
) -> None:
    ids = add_site_series(store, simulator.port, tmp_path)
    url = pg_cluster.url(pg_database)
    procs = {
        name: agents.start(url, name, site=site) for site, names in SITES.items() for name in names
    }

    def settled() -> bool:
        return all(agent_stats(store, n).get("series") == 500 for n in procs)

    wait_for(settled, 180, "each of the four agents to run 500 series")
    with store.connect() as conn:
        owners = dict(conn.execute(text("select series_id, agent from agent_assignments")).all())
    for site, names in SITES.items():  # a site's series stay with that site's agents
        assert {owners[sid] for sid in ids[site]} == set(names)
    victim = "east-1"
    taken = sorted(sid for sid in ids["east"] if owners[sid] == victim)
    assert len(taken) == 500

    time.sleep(INTERVAL_MS / 1000 + 1)  # a whole interval with everyone probing
    procs[victim].kill()
    procs[victim].wait(10)
    killed_at = datetime.now(UTC)
    wait_for(lambda: agent_stats(store, "east-2").get("series") == 1000, 60, "east-2 to take over")
    time.sleep(INTERVAL_MS / 1000 + 1)
    stopping_at = datetime.now(UTC)
    for name, proc in procs.items():
        if name != victim:
            proc.terminate()
    for name, proc in procs.items():
        if name != victim:
            assert proc.wait(60) == 0, name

    with store.connect() as conn:
        rows = conn.execute(
            text(
                "select series_id, scheduled_at, status, agent from samples "
                "where series_id = any(:ids) order by series_id, scheduled_at"
            ),
            {"ids": ids["east"] + ids["west"]},
        ).all()
    per = by_series(list(rows))
    assert set(per) == set(ids["east"] + ids["west"])  # every series was probed
    settled_at = killed_at - timedelta(milliseconds=INTERVAL_MS)
    late_flush = timedelta(seconds=3)  # the victim's last batch, in its log when it died
    takeover = timedelta(milliseconds=2 * INTERVAL_MS)
    for sid, rs in per.items():
        times = [r.scheduled_at for r in rs if r.scheduled_at >= settled_at]
        if sid in taken:
            before = [t for t in times if t < killed_at - late_flush]
            after = [r for r in rs if r.scheduled_at >= killed_at]
            assert gaps(before, INTERVAL_MS) == [], sid
            first = min(r.scheduled_at for r in after if r.agent == "east-2")
            assert first - killed_at <= takeover, (sid, first - killed_at)
            assert {r.agent for r in after} == {"east-2"}
            assert gaps([r.scheduled_at for r in after], INTERVAL_MS) == [], sid
        else:  # nobody else missed an instant while it happened
            assert gaps(times, INTERVAL_MS) == [], sid
            assert times and times[-1] >= stopping_at - timedelta(milliseconds=2 * INTERVAL_MS)
    # (statuses are not the subject: a starved machine's agents skip instants OVERLOAD)
    assert any(r.status == "ok" for r in rows)
    # no instant probed twice: every sample each survivor made was new to the store
    for name in ("east-2", "west-1", "west-2"):
        st = agent_stats(store, name)
        assert st["stopped"] is True and st["dropped"] == 0, name
        made = st["runs"] + st["skipped"] + st.get("config_errors", 0)
        assert st["written"] == made > 0, (name, st["written"], made)
