"""ALERTS on /metrics, in Prometheus' own convention."""

from __future__ import annotations

from datetime import timedelta

from tests.alerts.conftest import T0, World
from tests.fixtures.auth import web_client


def test_alerts_and_outbox_on_metrics(world: World) -> None:
    world.webhook()
    world.rule(
        name="slow",
        kind="latency",
        threshold_ms=200,
        window="1m",
        pending="5m",
        severity="ticket",
        contact_points=["hook"],
    )
    world.rule(
        name="down",
        kind="latency",
        threshold_ms=100,
        window="1m",
        group_wait="0s",
        contact_points=["hook"],
    )
    world.minutes("pooled", T0, 2, 400.0)
    world.cycle(T0 + timedelta(minutes=1))
    with web_client(world.engine, world.vault, role="viewer") as client:
        body = client.get("/metrics").text
    assert (
        'ALERTS{alertname="down",alertstate="firing",severity="page",target="sales",'
        'mode="pooled",probe="connping"} 1'
    ) in body
    assert 'ALERTS{alertname="slow",alertstate="pending",severity="ticket"' in body
    since = int((T0 + timedelta(minutes=1)).timestamp())
    assert (
        'ALERTS_FOR_STATE{alertname="down",severity="page",target="sales",mode="pooled",'
        f'probe="connping"}} {since}'
    ) in body
    assert 'connwatch_notifications{status="pending"} 1' in body
    assert body.count("# TYPE ALERTS gauge") == 1
