"""The rule kinds beyond latency/availability/no-data, each fired and resolved on real data
in the store (samples written through the store's writer and rolled up, or an agent's
own heartbeats) by the real evaluator, and delivered by the real deliverer to a real HTTP
receiver that checks the webhook signature: baseline, mode comparison, agent heartbeat,
a quorum of sites (``sites_required``), and a latency rule on one logon round trip
(``phase: auth2``) fed by real logons against the Oracle Net simulator."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import text

from app.agent.coordination.registry import Registry
from app.alerts.rules import RuleSpec
from app.notify.contacts import ContactPointSpec, upsert_contact_point
from app.notify.deliver import Deliverer
from app.probes.spec import ProbeSpec
from app.slo.definitions import SloSpec, upsert_slo
from app.targets.selector import Selector
from tests.alerts.conftest import T0, World, bad, ok
from tests.fixtures.oraclesim import OracleSimHandle
from tests.fixtures.receivers import HttpReceiver
from tests.notify.conftest import notify_settings
from tests.probes.conftest import oracle_endpoint, run_probe
from tests.store.conftest import make_target


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


def test_a_rule_on_one_logon_round_trip(wired: Wired, oraclesim: OracleSimHandle) -> None:
    """``phase: auth2``: real connping logons (python-oracledb thin against the simulator)
    stored as the series' samples; a slow password check (the simulator's slow-logon
    fault lands in authentication phase two) fires the auth2 rule and not the rule on the
    listener's ``connect`` round trip, and resolves when the fault is gone."""
    world = wired.world
    for name, phase in (("auth2-slow", "auth2"), ("connect-slow", "connect")):
        world.rule(
            name=name,
            kind="latency",
            selector={"modes": ["dedicated"]},
            phase=phase,
            percentile="p50",
            window="1m",
            threshold_ms=250,
            clear_ms=200,
            **POLICY,
        )
    sid = world.sid["dedicated"]

    def logons(minute: int) -> None:
        runs = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim)), runs=3)
        at = [T0 + timedelta(minutes=minute, seconds=10 * i) for i in range(3)]
        assert all(s.ok and s.logon_phases for s in runs), [s.error_message for s in runs]
        world.write([replace(s, series_id=sid, scheduled_at=t, started_at=t) for s, t in zip(
            runs, at, strict=True)])  # fmt: skip

    logons(0)
    assert wired.step(T0 + timedelta(minutes=1)) == []
    oraclesim.faults.add("slow", "logon", delay_ms=400)
    logons(1)
    assert wired.step(T0 + timedelta(minutes=2)) == ["firing"]
    alert = wired.alert(0)
    assert alert["labels"] == {"target": "sales", "mode": "dedicated", "probe": "connping"}
    assert float(str(alert["value"])) >= 400 and alert["threshold"] == 250
    summary = str(alert["summary"])
    assert re.search(r"\(connping\): auth2 p50 4\d\d ms > 250 ms over 1m$", summary), summary
    assert world.state("connect-slow", mode="dedicated") == "normal"
    oraclesim.faults.clear()
    logons(2)
    assert wired.step(T0 + timedelta(minutes=3)) == ["firing", "resolved"]
    assert world.state("auth2-slow", mode="dedicated") == "resolved"
    assert world.transitions("connect-slow") == []


def test_round_trip_phases_are_named_and_kept_to_latency_rules() -> None:
    assert RuleSpec(name="r", kind="latency", phase="auth2", threshold_ms=50).round_trip
    assert not RuleSpec(name="r", kind="latency", phase="logon", threshold_ms=50).round_trip
    with pytest.raises(ValidationError, match=r"or a logon round trip: tcp_connect, .*auth2"):
        RuleSpec(name="r", kind="latency", phase="auth3", threshold_ms=50)
    with pytest.raises(ValidationError, match="only latency rules can use it"):
        RuleSpec(name="r", kind="baseline", phase="auth2", ratio=2)
    with pytest.raises(ValidationError, match="at most 2d for a logon round trip"):
        RuleSpec(name="r", kind="latency", phase="auth2", threshold_ms=50, window="3d")


def test_each_slo_burn_window_pair_fires_on_its_own(world: World) -> None:
    """Objective 99 % (1 % budget), one target per pair, a run a minute: 25 % failed over
    the last hour burns 25x (1 h & 5 min > 14.4x); 10 % over 6 hours burns 10x, under
    14.4x (6 h & 30 min > 6x); 3.3 % over 3 days burns 3.3x, under 6x (3 d & 6 h > 1x,
    a ticket)."""
    end = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=1)
    with world.engine.begin() as conn:
        upsert_slo(conn, SloSpec(name="up", selector=Selector(), objective=99.0))
    world.rule(name="burn", kind="slo_burn", slo="up", per="target")
    samples = []
    for name, minutes, every in (("fast", 60, 4), ("steady", 360, 10), ("slow", 4320, 30)):
        with world.engine.begin() as conn:
            sid = make_target(conn, name, "oracle", {"dedicated": [("connping", 60_000)]})[
                ("dedicated", "connping")
            ]
        for i in range(minutes):
            at = end - timedelta(minutes=i + 1)
            samples.append(bad(sid, at) if i % every == 0 else ok(sid, at, 80.0))
    world.write(samples)
    world.rollup()
    world.cycle(end)
    pairs = {"fast": "1h and 5m (> 14.4x: page)", "steady": "6h and 30m (> 6x: page)"}
    pairs["slow"] = "3d and 6h (> 1x: ticket)"
    for name, pair in pairs.items():
        assert world.state("burn", target=name) == "firing", name
        with world.engine.connect() as conn:
            summary = conn.execute(
                text("select summary from alert_instances where labels->>'target' = :t"),
                {"t": name},
            ).scalar_one()
        assert summary.endswith(pair), (name, summary)
    assert world.state("burn", target="sales") == "nodata"  # no runs: nothing to judge
