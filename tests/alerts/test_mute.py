"""Silences, maintenance windows and acknowledgements keep notifications quiet (and only
notifications: the alerts are still evaluated and recorded)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from app.alerts.mute.acks import AckError, acknowledge
from app.alerts.mute.maintenance import Cron, Schedule, WindowSpec, upsert_window
from app.alerts.mute.silences import SilenceSpec, create_silence
from app.targets.selector import Selector
from tests.alerts.conftest import T0, World

RULE = {
    "name": "slow",
    "kind": "latency",
    "threshold_ms": 200,
    "window": "1m",
    "contact_points": ["hook"],
    "group_wait": "0s",
    "repeat_interval": "5m",
}


def test_a_silence_holds_the_message_until_it_ends(world: World) -> None:
    world.webhook()
    world.rule(**RULE)
    with world.engine.begin() as conn:
        create_silence(
            conn,
            SilenceSpec(
                rules=["sl*"],
                selector=Selector(targets=["sales"], modes=["pooled"]),
                starts_at=T0,
                ends_at=T0 + timedelta(minutes=3),
                author="ann",
                comment="DRCP pool resize",
            ),
        )
    world.minutes("pooled", T0, 6, 400.0)
    world.cycle(T0 + timedelta(minutes=1))
    world.cycle(T0 + timedelta(minutes=2))
    assert world.state("slow", mode="pooled") == "firing"
    assert world.messages() == []
    world.cycle(T0 + timedelta(minutes=4))  # the silence ended at 3
    (msg,) = world.messages()
    assert msg["subject"].startswith("[FIRING:1] slow")


def test_a_maintenance_window_holds_the_message(world: World) -> None:
    world.webhook()
    world.rule(**RULE)
    local = T0.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))
    with world.engine.begin() as conn:
        upsert_window(
            conn,
            WindowSpec(
                name="patching",
                selector=Selector(targets=["sales"]),
                schedule=Schedule(
                    weekly={"days": [local.strftime("%a").lower()], "at": local.strftime("%H:%M")}
                ),
                timezone="Europe/Paris",
                duration="3m",
            ),
        )
    world.minutes("pooled", T0, 6, 400.0)
    world.cycle(T0 + timedelta(minutes=1))
    assert world.state("slow", mode="pooled") == "firing" and world.messages() == []
    world.cycle(T0 + timedelta(minutes=4))
    assert len(world.messages()) == 1


def test_an_acknowledgement_stops_repeats_until_resolved(world: World) -> None:
    world.webhook()
    world.rule(**RULE)
    world.minutes("pooled", T0, 20, 400.0)
    world.cycle(T0 + timedelta(minutes=1))
    world.cycle(T0 + timedelta(minutes=7))  # repeat interval 5m: a repeat
    assert [m["alerts"][0]["repeat"] for m in world.messages()] == [False, True]
    fp = "mode=pooled,probe=connping,target=sales"
    with world.engine.begin() as conn:
        acknowledge(conn, rule="slow", fingerprint=fp, by="bob", comment="on it")
        with pytest.raises(AckError, match="no firing or pending alert"):
            acknowledge(conn, rule="slow", fingerprint="x", by="bob", comment="?")
    world.cycle(T0 + timedelta(minutes=13))
    world.cycle(T0 + timedelta(minutes=19))
    assert len(world.messages()) == 2  # no repeat while acknowledged


def test_cron_and_weekly_schedules_in_a_time_zone() -> None:
    c = Cron.parse("30 2 * * 6")
    assert c.minutes == {30} and c.hours == {2} and c.wdays == {5}
    w = WindowSpec(
        name="w", schedule=Schedule(cron="30 2 * * 6"), timezone="Europe/Paris", duration="1h"
    )
    # Saturday 2026-11-28 02:30 Paris = 01:30 UTC
    assert w.open_at(datetime(2026, 11, 28, 1, 45, tzinfo=UTC)) == (
        datetime(2026, 11, 28, 1, 30, tzinfo=UTC),
        datetime(2026, 11, 28, 2, 30, tzinfo=UTC),
    )
    assert w.open_at(datetime(2026, 11, 28, 2, 31, tzinfo=UTC)) is None
    spans = w.spans(datetime(2026, 11, 20, tzinfo=UTC), datetime(2026, 12, 6, tzinfo=UTC))
    assert [s.date().isoformat() for s, _ in spans] == ["2026-11-21", "2026-11-28", "2026-12-05"]
    # summer time: 02:30 Paris = 00:30 UTC
    assert w.open_at(datetime(2026, 7, 4, 0, 45, tzinfo=UTC)) is not None


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"cron": "61 * * * *"}, "outside 0-59"),
        ({"cron": "* * *"}, "needs 5 fields"),
        ({"weekly": {"days": ["funday"]}}, "weekly.days"),
        ({"weekly": {"at": "25:00"}}, "not HH:MM"),
        ({}, "exactly one of"),
    ],
)
def test_bad_schedules_say_why(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Schedule.model_validate(doc)


def test_bad_silences_say_why() -> None:
    with pytest.raises(ValidationError, match="ends_at: must be after starts_at"):
        SilenceSpec(starts_at=T0, ends_at=T0, author="a", comment="c")
    with pytest.raises(ValidationError, match="comment"):
        SilenceSpec(starts_at=T0, ends_at=T0 + timedelta(hours=1), author="a", comment="")
