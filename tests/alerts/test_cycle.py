"""Evaluation cycles on real samples: pending, firing, hysteresis, resolution, messages."""

from __future__ import annotations

from datetime import timedelta

from tests.alerts.conftest import T0, World, bad, ok

LATENCY = {
    "name": "logon-slow",
    "kind": "latency",
    "selector": {"targets": ["sales"]},
    "phase": "logon",
    "percentile": "p95",
    "window": "1m",
    "threshold_ms": 200,
    "clear_ms": 150,
    "pending": "2m",
    "contact_points": ["hook"],
    "group_wait": "0s",
}


def test_latency_rule_pends_fires_and_resolves_with_one_message_each(world: World) -> None:
    world.webhook()
    world.rule(**LATENCY)
    world.minutes("dedicated", T0, 3, 80.0)
    world.minutes("pooled", T0, 3, 80.0)
    assert world.cycle(T0 + timedelta(minutes=3)).transitions == []
    world.minutes("pooled", T0 + timedelta(minutes=3), 4, 400.0)
    world.minutes("dedicated", T0 + timedelta(minutes=3), 4, 80.0)
    world.cycle(T0 + timedelta(minutes=4))
    assert world.state("logon-slow", mode="pooled") == "pending"
    assert world.messages() == []
    world.cycle(T0 + timedelta(minutes=5))
    assert world.state("logon-slow", mode="pooled") == "pending"
    world.cycle(T0 + timedelta(minutes=6))
    assert world.state("logon-slow", mode="pooled") == "firing"
    assert world.state("logon-slow", mode="dedicated") == "normal"
    (msg,) = world.messages()
    assert msg["subject"] == "[FIRING:1] logon-slow (page): sales / pooled (connping)"
    (alert,) = msg["alerts"]
    assert alert["labels"] == {"target": "sales", "mode": "pooled", "probe": "connping"}
    assert alert["value"] > 200 and alert["threshold"] == 200
    assert "logon p95 4" in alert["summary"] and "> 200 ms over 1m" in alert["summary"]
    assert alert["chart_url"].startswith("http://cw.example/target/sales?from=")
    assert "modes=pooled" in alert["chart_url"] and "probe=connping" in alert["chart_url"]
    assert "samples?target=sales" in alert["samples_url"]
    assert "chart:   http://cw.example/target/sales" in msg["text"]
    # inside the hysteresis band (150-200 ms): still firing, nothing sent
    world.minutes("pooled", T0 + timedelta(minutes=7), 3, 175.0)
    world.cycle(T0 + timedelta(minutes=8))
    world.cycle(T0 + timedelta(minutes=9))
    assert world.state("logon-slow", mode="pooled") == "firing"
    assert len(world.messages()) == 1
    # below the clear threshold: resolved, and said so once
    world.minutes("pooled", T0 + timedelta(minutes=10), 2, 90.0)
    world.cycle(T0 + timedelta(minutes=11))
    world.cycle(T0 + timedelta(minutes=12))
    assert world.state("logon-slow", mode="pooled") == "resolved"
    msgs = world.messages()
    assert len(msgs) == 2 and msgs[1]["subject"].startswith("[RESOLVED] logon-slow")
    assert world.transitions("logon-slow", "pooled") == [
        ("normal", "pending"),
        ("pending", "firing"),
        ("firing", "resolved"),
    ]


def test_flapping_around_the_threshold_within_pending_sends_nothing(world: World) -> None:
    world.webhook()
    world.rule(**LATENCY)
    for k in range(8):  # one slow minute, one fast minute, ...
        world.minutes("pooled", T0 + timedelta(minutes=k), 1, 400.0 if k % 2 == 0 else 90.0)
        world.cycle(T0 + timedelta(minutes=k + 1))
    assert world.messages() == []
    assert world.state("logon-slow", mode="pooled") in ("normal", "pending")
    assert ("pending", "firing") not in world.transitions("logon-slow")


def test_availability_m_of_n_only_for_the_codes_asked(world: World) -> None:
    world.webhook()
    world.rule(
        name="refused",
        kind="availability",
        m=3,
        n=5,
        codes=["TNS-125*"],
        contact_points=["hook"],
        group_wait="0s",
    )
    world.rule(name="any-failure", kind="availability", m=3, n=5)
    sid = world.sid["dedicated"]
    from app.samples import ErrorClass

    world.write(
        [bad(sid, T0 + timedelta(seconds=10 * i), "ORA-01017", ErrorClass.ORA) for i in range(5)]
    )
    world.cycle(T0 + timedelta(minutes=1))
    assert world.state("refused", mode="dedicated") == "normal"
    assert world.state("any-failure", mode="dedicated") == "firing"
    world.write([bad(sid, T0 + timedelta(seconds=60 + 10 * i)) for i in range(3)])
    world.cycle(T0 + timedelta(minutes=2))
    assert world.state("refused", mode="dedicated") == "firing"
    (msg,) = world.messages()
    assert "3 of the last 5 runs failed" in msg["alerts"][0]["summary"]
    assert "TNS-12520" in msg["alerts"][0]["summary"]  # explained by app.explain
    assert "status=failed" in msg["alerts"][0]["samples_url"]


def test_error_rate_and_nodata(world: World) -> None:
    world.rule(name="rate", kind="availability", error_rate_pct=50, window="2m")
    world.rule(name="silent", kind="nodata", intervals=3, per="series")
    sid = world.sid["dedicated"]
    world.minutes("pooled", T0, 4, 50.0)
    world.write([bad(sid, T0 + timedelta(seconds=10 * i)) for i in range(12)])
    world.cycle(T0 + timedelta(minutes=2))
    assert world.state("rate", mode="dedicated") == "firing"
    assert world.state("rate", mode="pooled") == "normal"
    world.cycle(T0 + timedelta(minutes=4))
    assert world.state("silent", mode="dedicated") == "firing"  # last sample at 1:50
    assert world.state("silent", mode="pooled") == "normal"


def test_a_rule_that_cannot_be_evaluated_is_in_error_and_others_go_on(world: World) -> None:
    world.rule(name="burn", kind="slo_burn", slo="missing")
    world.rule(name="slow", kind="latency", threshold_ms=10, window="1m")
    world.minutes("pooled", T0, 1, 90.0)
    report = world.cycle(T0 + timedelta(minutes=1))
    assert report.errors == 2  # one per instance (dedicated, pooled)
    assert world.state("burn", mode="pooled") == "error"
    assert world.state("slow", mode="pooled") == "firing"


def test_group_wait_gathers_alerts_into_one_message(world: World) -> None:
    world.webhook()
    world.rule(**{**LATENCY, "pending": "0s", "group_wait": "30s"})
    world.minutes("pooled", T0, 2, 400.0)
    world.minutes("dedicated", T0, 2, 400.0)
    world.cycle(T0 + timedelta(minutes=1))
    assert world.messages() == []  # waiting for the group
    world.cycle(T0 + timedelta(minutes=1, seconds=30))
    (msg,) = world.messages()
    assert msg["subject"] == "[FIRING:2] logon-slow (page)"
    assert len(msg["alerts"]) == 2


def test_too_few_samples_is_nodata_and_a_firing_alert_keeps_firing_without_data(
    world: World,
) -> None:
    """The nodata state (fewer than min_samples), absence of data that is no recovery, and
    ``send_resolved: false`` (the resolution is recorded, not sent)."""
    world.webhook()
    world.rule(**{**LATENCY, "pending": "0s", "send_resolved": False})
    sid = world.sid["pooled"]
    world.write([ok(sid, T0 + timedelta(seconds=10 * i), 400.0) for i in range(2)])
    world.cycle(T0 + timedelta(minutes=1))
    assert world.state("logon-slow", mode="pooled") == "nodata"  # 2 samples < 3
    world.minutes("pooled", T0 + timedelta(minutes=1), 1, 400.0)
    world.cycle(T0 + timedelta(minutes=2))
    assert world.state("logon-slow", mode="pooled") == "firing"
    world.cycle(T0 + timedelta(minutes=3, seconds=30))  # the window holds no sample
    assert world.state("logon-slow", mode="pooled") == "firing"
    world.minutes("pooled", T0 + timedelta(minutes=4), 1, 90.0)
    world.cycle(T0 + timedelta(minutes=5))
    assert world.state("logon-slow", mode="pooled") == "resolved"
    assert [m["subject"].split("]")[0] for m in world.messages()] == ["[FIRING:1"]
    assert world.transitions("logon-slow", "pooled") == [
        ("normal", "nodata"),
        ("nodata", "firing"),  # pending 0: at once
        ("firing", "resolved"),
    ]
