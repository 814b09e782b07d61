"""The rule kinds beyond latency/availability/no-data, each fired and resolved on real data
in the store (samples written through the store's writer and rolled up, or an agent's
own heartbeats) by the real evaluator, and delivered by the real deliverer to a real HTTP
receiver that checks the webhook signature: baseline, mode comparison, agent heartbeat,
and a quorum of sites (``sites_required``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from app.agent.coordination.registry import Registry
from app.notify.contacts import ContactPointSpec, upsert_contact_point
from app.notify.deliver import Deliverer
from tests.alerts.conftest import T0, World, ok
from tests.fixtures.receivers import HttpReceiver
from tests.notify.conftest import notify_settings


class Wired:
    """The world, a signed webhook to the receiver, and a deliverer that sends what is due."""

    def __init__(self, world: World, receiver: HttpReceiver, tmp: Path) -> None:
        self.world, self.receiver = world, receiver
        with world.engine.begin() as conn:
            upsert_contact_point(
                conn,
                ContactPointSpec(
                    name="hook", channel="webhook", url=receiver.url, secret=receiver.secret
                ),
                world.vault,
            )
        self.deliverer = Deliverer(world.engine, notify_settings(tmp), vault=world.vault)

    def step(self, at: datetime) -> list[str]:
        """One evaluation at ``at``, then deliver; the statuses received by then."""
        self.world.cycle(at)
        self.deliverer.run_once()
        return self.received()

    def received(self) -> list[str]:
        assert all(r.signature_ok for r in self.receiver.requests)
        return [r.json()["status"] for r in self.receiver.requests]

    def alert(self, i: int) -> dict[str, object]:
        (alert,) = self.receiver.requests[i].json()["alerts"]
        assert isinstance(alert, dict)
        return alert


@pytest.fixture
def wired(world: World, http_receiver: HttpReceiver, tmp_path: Path) -> Iterator[Wired]:
    w = Wired(world, http_receiver, tmp_path)
    yield w
    w.deliverer.close()


POLICY = {"contact_points": ["hook"], "group_wait": "0s"}


def test_baseline_rule_fires_on_a_tripled_logon_and_resolves(wired: Wired) -> None:
    world = wired.world
    world.rule(
        name="vs-trailing",
        kind="baseline",
        selector={"modes": ["pooled"]},
        baseline="trailing",
        trailing="1h",
        percentile="p50",
        window="1m",
        ratio=2.0,
        clear_ratio=1.5,
        **POLICY,
    )
    world.minutes("pooled", T0, 40, 80.0)  # 40 minutes of history at 80 ms
    world.rollup()
    assert wired.step(T0 + timedelta(minutes=40)) == []
    assert world.state("vs-trailing", mode="pooled") == "normal"
    world.minutes("pooled", T0 + timedelta(minutes=40), 2, 260.0)  # 3.25x
    assert wired.step(T0 + timedelta(minutes=41)) == ["firing"]
    alert = wired.alert(0)
    assert alert["labels"] == {"target": "sales", "mode": "pooled", "probe": "connping"}
    assert alert["value"] == pytest.approx(3.25, rel=0.05) and alert["threshold"] == 2.0
    assert "logon p50 260 ms is 3.2x its baseline 80 ms (threshold 2x)" in str(alert["summary"])
    world.rollup()
    # 1.75x: inside the hysteresis band (1.5-2.0), keeps firing, sends nothing
    world.minutes("pooled", T0 + timedelta(minutes=42), 1, 140.0)
    assert wired.step(T0 + timedelta(minutes=43)) == ["firing"]
    assert world.state("vs-trailing", mode="pooled") == "firing"
    world.minutes("pooled", T0 + timedelta(minutes=43), 1, 85.0)
    assert wired.step(T0 + timedelta(minutes=44)) == ["firing", "resolved"]
    assert world.state("vs-trailing", mode="pooled") == "resolved"
    assert world.state("vs-trailing", mode="dedicated") == "normal"  # not selected: no data


def test_mode_comparison_fires_only_on_a_clear_difference_and_resolves(wired: Wired) -> None:
    world = wired.world
    world.rule(
        name="pooled-vs-dedicated",
        kind="mode_compare",
        mode="pooled",
        against="dedicated",
        window="20m",
        slower_pct=50,
        **POLICY,
    )
    sd, sp = world.sid["dedicated"], world.sid["pooled"]

    def minutes(start: datetime, n: int, dedicated: float, pooled: float) -> None:
        at = [start + timedelta(seconds=10 * i) for i in range(6 * n)]
        jitter = [float(i % 7) for i in range(6 * n)]  # a spread, not a constant
        world.write([ok(sd, t, dedicated + j) for t, j in zip(at, jitter, strict=True)])
        world.write([ok(sp, t, pooled + j) for t, j in zip(at, jitter, strict=True)])
        world.rollup()

    minutes(T0, 20, 80.0, 88.0)  # +10 %: under the threshold
    assert wired.step(T0 + timedelta(minutes=20)) == []
    assert world.state("pooled-vs-dedicated", mode="pooled") == "normal"
    minutes(T0 + timedelta(minutes=20), 20, 80.0, 200.0)  # +150 %
    assert wired.step(T0 + timedelta(minutes=40)) == ["firing"]
    alert = wired.alert(0)
    assert alert["labels"] == {"target": "sales", "mode": "pooled", "probe": "connping"}
    assert float(str(alert["value"])) > 100 and alert["threshold"] == 50
    assert "vs dedicated (95 % CI" in str(alert["summary"])
    minutes(T0 + timedelta(minutes=40), 20, 80.0, 81.0)
    assert wired.step(T0 + timedelta(minutes=60)) == ["firing", "resolved"]
    assert world.state("pooled-vs-dedicated", mode="pooled") == "resolved"


def test_agent_heartbeat_rule_fires_when_it_stops_and_resolves_when_it_beats(
    wired: Wired,
) -> None:
    world = wired.world
    world.rule(name="agent-gone", kind="agent", after="5s", **POLICY)
    agent = Registry(world.engine, "probe-east-1", "east")
    try:
        agent.register()
        agent.heartbeat({})
        with world.engine.connect() as conn:
            beat = conn.execute(text("select heartbeat_at from agents")).scalar_one()
        assert wired.step(beat + timedelta(seconds=2)) == []
        assert world.state("agent-gone", agent="probe-east-1") == "normal"
        # the agent stays silent: 6 s after its last beat the evaluator says so
        assert wired.step(beat + timedelta(seconds=6)) == ["firing"]
        alert = wired.alert(0)
        assert alert["labels"] == {"agent": "probe-east-1", "site": "east"}
        assert "last heartbeat 6 s ago" in str(alert["summary"])
        # it beats again (its own heartbeat, the store's clock): resolved
        deadline = time.monotonic() + 30
        while True:
            agent.heartbeat({})
            with world.engine.connect() as conn:
                now = conn.execute(text("select heartbeat_at from agents")).scalar_one()
            if now >= beat + timedelta(seconds=2) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert wired.step(beat + timedelta(seconds=6.5)) == ["firing", "resolved"]
        assert world.state("agent-gone", agent="probe-east-1") == "resolved"
    finally:
        agent.session.close()


def _sites(world: World, mode: str, sites: list[str]) -> dict[str, int]:
    """The same mode probed from several sites: one series per site."""
    out = {}
    with world.engine.begin() as conn:
        for site in sites:
            out[site] = conn.execute(
                text(
                    "insert into series (mode_id, probe, interval_ms, timeout_ms, site) "
                    "select mode_id, probe, interval_ms, timeout_ms, :site from series "
                    "where id = :sid returning id"
                ),
                {"site": site, "sid": world.sid[mode]},
            ).scalar_one()
    return out


def test_quorum_fires_only_when_enough_sites_see_it(wired: Wired) -> None:
    world = wired.world
    world.rule(
        name="slow-from-2-sites",
        kind="latency",
        selector={"modes": ["pooled"]},
        sites_required=2,
        percentile="p50",
        window="1m",
        threshold_ms=200,
        clear_ms=150,
        **POLICY,
    )
    sid = _sites(world, "pooled", ["east", "west"])
    sid["default"] = world.sid["pooled"]

    def minute(k: int, **logon: float) -> None:
        start = T0 + timedelta(minutes=k)
        world.write(
            [
                ok(sid[site], start + timedelta(seconds=10 * i), ms)
                for site, ms in logon.items()
                for i in range(6)
            ]
        )

    minute(0, default=400.0, east=90.0, west=90.0)  # one site slow: its own trouble
    assert wired.step(T0 + timedelta(minutes=1)) == []
    assert world.state("slow-from-2-sites", mode="pooled") == "normal"
    minute(1, default=400.0, east=400.0, west=90.0)  # two of three: fires
    assert wired.step(T0 + timedelta(minutes=2)) == ["firing"]
    alert = wired.alert(0)
    assert alert["labels"] == {"target": "sales", "mode": "pooled", "probe": "connping"}
    assert "2 of 3 sites see logon p50 > 200 ms (needs 2)" in str(alert["summary"])
    minute(2, default=400.0, east=90.0, west=90.0)  # back to one site: clears
    assert wired.step(T0 + timedelta(minutes=3)) == ["firing", "resolved"]
    assert world.state("slow-from-2-sites", mode="pooled") == "resolved"
