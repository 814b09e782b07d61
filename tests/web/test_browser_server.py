"""The issue's "done when", end to end: the simulator, a real agent probing it (connping,
sessionping, serverstats) into a real store, and the pages in headless Chromium.

- DRCP pool exhaustion switched on in the simulator: on the target page the pooled
  logon chart spikes and the server chart's pool waits rise in the same buckets.
- A two-instance (RAC) target: the instance breakdown shows both instances; with one
  instance down, failures are counted under that instance only.

Screenshots at desktop and phone size go to test-artifacts/.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from app.config import Settings
from app.demo.pgcluster import PgCluster
from app.oraclesim import SimConfig
from app.oraclesim.config import InstanceConfig
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from tests.fixtures.browser import ARTIFACTS, LiveServer, migrated_database, serve_app
from tests.fixtures.oraclesim import OracleSimHandle

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
BEFORE_S, FAULT_S, AFTER_S = 10.0, 14.0, 8.0
POOL_DELAY_MS = 400


@dataclass
class Run:
    server: LiveServer
    start: datetime
    fault_start: datetime
    fault_end: datetime
    end: datetime

    def window(self) -> dict[str, str]:
        return {
            "from": (self.start - timedelta(seconds=20)).isoformat(),
            "to": (self.end + timedelta(seconds=20)).isoformat(),
        }


def _targets(drcp: OracleSimHandle, rac: OracleSimHandle) -> str:
    return f"""
targets:
  - name: drcp
    kind: oracle
    dsn: 127.0.0.1:{drcp.port}/FREEPDB1
    username: scott
    password: tiger
    modes:
      - name: pooled
        params: {{cclass: CW}}
        probes: [{{probe: connping, interval: 1s, timeout: 900ms}}]
      - name: dedicated
        probes: [{{probe: serverstats, interval: 2s, timeout: 1500ms}}]
  - name: rac
    kind: oracle
    dsn: 127.0.0.1:{rac.port}/FREEPDB1
    username: scott
    password: tiger
    modes:
      - name: dedicated
        probes:
          - {{probe: connping, interval: 1s, timeout: 900ms}}
          - {{probe: sessionping, interval: 1s, timeout: 900ms}}
          - {{probe: serverstats, interval: 2s, timeout: 1500ms}}
      - name: node2
        kind: dedicated
        params: {{instance_name: SALES2}}
        probes: [{{probe: connping, interval: 1s, timeout: 900ms}}]
"""


async def _drive(agent_engine: Any, settings: Settings, faults: Any) -> tuple[datetime, ...]:
    from app.agent.service import Agent

    agent = Agent(agent_engine, settings)
    start = datetime.now(UTC)
    await agent.start()
    try:
        await asyncio.sleep(BEFORE_S)
        fault_start = datetime.now(UTC)
        faults(True)
        await asyncio.sleep(FAULT_S)
        faults(False)
        fault_end = datetime.now(UTC)
        await asyncio.sleep(AFTER_S)
    finally:
        await agent.stop()
    return start, fault_start, fault_end, datetime.now(UTC)


@pytest.fixture(scope="module")
def run(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    drcp = OracleSimHandle(SimConfig.default(no_latency=True)).start()
    rac_cfg = SimConfig.default(no_latency=True)
    rac_cfg.instances = (InstanceConfig("SALES1", 1), InstanceConfig("SALES2", 2))
    rac = OracleSimHandle(rac_cfg).start()
    key = Fernet.generate_key().decode()
    db_url = migrated_database(pg_cluster, "srv_")
    try:
        with serve_app(db_url, key) as server:
            with server.engine.begin() as conn:
                import_targets(conn, parse_targets(_targets(drcp, rac), "t"), server.vault)
            settings = Settings(
                database_url=db_url, data_dir=Path(tmp_path_factory.mktemp("agent")), secret_key=key
            )
            held: dict[str, Any] = {}

            def faults(on: bool) -> None:
                if on:
                    held["pool"] = drcp.faults.add("pool_exhausted", delay_ms=POOL_DELAY_MS)
                    held["down"] = rac.faults.add("instance_down", instance="SALES2")
                else:
                    drcp.faults.clear()
                    rac.faults.clear()

            # its own thread: Playwright's sync API holds this thread's event loop
            out: list[tuple[datetime, ...]] = []
            agent = threading.Thread(
                target=lambda: out.append(asyncio.run(_drive(server.engine, settings, faults)))
            )
            agent.start()
            agent.join(120)
            assert out, "the agent run did not finish"
            yield Run(server, *out[0])
    finally:
        drcp.stop()
        rac.stop()


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _ready(page: Any, *ids: str) -> None:
    for i in ids:
        page.wait_for_selector(
            f"#{i}[data-state=ready]:not([aria-busy]), #{i}[data-state=empty]", timeout=30000
        )


def _trace(page: Any, chart: str, name: str, yaxis: str | None = None) -> list[tuple[str, float]]:
    """(x, y) of a drawn trace, non-null y only."""
    pts = page.eval_on_selector(
        f"#{chart}",
        """(el, [name, yaxis]) => el.data
             .filter(t => t.name === name && (!yaxis || (t.yaxis || 'y') === yaxis))
             .flatMap(t => t.x.map((x, i) => [x, t.y[i]]))""",
        [name, yaxis],
    )
    return [(x, float(y)) for x, y in pts if y is not None]


def test_pool_exhaustion_shows_as_logon_spike_and_pool_waits_in_the_same_minutes(
    run: Run, page: Any
) -> None:
    q = "&".join(f"{k}={v.replace('+', '%2B')}" for k, v in run.window().items())
    page.goto(f"{run.server.url}/target/drcp?{q}")
    _ready(page, "chart-logon", "chart-server")
    logon = _trace(page, "chart-logon", "pooled p50")
    spiky = {x for x, y in logon if y >= POOL_DELAY_MS * 0.8}
    calm = [y for _, y in logon if y < POOL_DELAY_MS * 0.5]
    assert spiky and calm, logon  # the fault's buckets stand out from the rest
    waits = page.eval_on_selector(
        "#chart-server",
        "el => { const i = el.layout.annotations"
        ".findIndex(a => a.name === 'panel-pool_waits_per_s');"
        " return i < 0 ? null : (i === 0 ? 'y' : 'y' + (i + 1)); }",
    )
    assert waits is not None
    server = _trace(page, "chart-server", "FREE", waits)
    waiting = {x for x, y in server if y > 0}
    assert waiting, server
    assert spiky & waiting, (sorted(spiky), sorted(waiting))  # the same buckets
    # a window resize keeps the small multiples' own height (no overlap with what follows)
    tall = page.eval_on_selector("#chart-server", "el => el.getBoundingClientRect().height")
    page.set_viewport_size({"width": 1200, "height": 900})
    page.wait_for_timeout(1000)
    assert page.eval_on_selector("#chart-server", "el => el.getBoundingClientRect().height") == tall
    page.set_viewport_size({"width": 1400, "height": 1000})
    axis_logon = page.eval_on_selector("#chart-logon", "el => el.layout.xaxis.range")
    axis_server = page.eval_on_selector("#chart-server", "el => el.layout.xaxis.range")
    assert axis_logon == axis_server  # one time axis
    assert page.console_errors == []
    _shot(page, "server_drcp_target_desktop")
    page.locator("#chart-server").screenshot(path=str(ARTIFACTS / "server_drcp_chart.png"))
    page.set_viewport_size(PHONE)
    page.goto(f"{run.server.url}/target/drcp/server?{q}")
    _ready(page, "chart-logon", "chart-server")
    assert "DRCP pool waits" in page.inner_text("[data-server-panel]")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"] + 1, width
    # each instance's title (the table's caption) stands above its figures, not under them
    order = page.evaluate(
        """() => [...document.querySelectorAll('[data-server-panel] table.cards')]
             .filter(t => t.caption && t.tBodies[0].rows.length)
             .map(t => t.caption.getBoundingClientRect().bottom
                       <= t.tBodies[0].rows[0].getBoundingClientRect().top + 1)"""
    )
    assert order and all(order), order
    _shot(page, "server_drcp_window_phone")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.reload()
    _ready(page, "chart-logon", "chart-server")
    _shot(page, "server_drcp_window_desktop")
    page.locator("[data-server-panel]").screenshot(path=str(ARTIFACTS / "server_drcp_panel.png"))


def test_rac_breakdown_shows_both_instances_and_the_down_one_fails_alone(
    run: Run, page: Any
) -> None:
    q = "&".join(f"{k}={v.replace('+', '%2B')}" for k, v in run.window().items())
    page.goto(f"{run.server.url}/target/rac?{q}")
    _ready(page, "chart-instance", "chart-server")
    data = page.eval_on_selector(
        "#chart-instance",
        "el => el.data.map(t => ({name: t.name, x: t.x, y: t.y, text: t.text, type: t.type}))",
    )
    bars = {t["name"]: t for t in data if t["type"] == "bar"}
    assert set(bars["dedicated"]["x"]) >= {"SALES1", "SALES2"}
    failed = {t["name"]: t for t in data if t["name"].endswith(" failed")}
    assert failed, data
    for name, t in failed.items():
        counts = dict(zip(t["x"], t["text"], strict=True))
        assert counts.get("SALES2"), (name, counts)
        assert not counts.get("SALES1"), (name, counts)  # the instance that stayed up
    instances = page.eval_on_selector(
        "#chart-server", "el => [...new Set(el.data.filter(t => t.showlegend).map(t => t.name))]"
    )
    assert sorted(instances) == ["SALES1", "SALES2"]
    assert page.console_errors == []
    _shot(page, "server_rac_target_desktop")
    page.locator("#chart-instance").screenshot(path=str(ARTIFACTS / "server_rac_instances.png"))
    page.locator("#chart-server").screenshot(path=str(ARTIFACTS / "server_rac_chart.png"))
    page.set_viewport_size(PHONE)
    page.reload()
    _ready(page, "chart-instance", "chart-server")
    _shot(page, "server_rac_target_phone")
    page.set_viewport_size({"width": 1440, "height": 900})
