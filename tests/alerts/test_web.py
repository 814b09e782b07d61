"""Alerting on the web: pages and API as an operator and a viewer would use them; every
change audited; secrets never shown; bad input a 422 naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.alerts.conftest import T0, World
from tests.fixtures.auth import web_client
from tests.fixtures.receivers import HttpReceiver

FORM = {"content-type": "application/x-www-form-urlencoded"}
HTML = {"accept": "text/html"}


def _audit(engine: object) -> list[str]:
    """The actions the audit log holds (app.auth.audit), oldest first."""
    from sqlalchemy import text

    with engine.connect() as conn:  # type: ignore[attr-defined]
        rows = conn.execute(text("select action from audit_log order by id")).scalars().all()
    return [r for r in rows if not r.startswith(("login.", "user."))]


def test_alerts_page_and_actions(
    world: World, http_receiver: HttpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="connwatch.audit")
    world.webhook(url=f"{http_receiver.url}/x")
    world.rule(
        name="slow",
        kind="latency",
        threshold_ms=200,
        window="1m",
        group_wait="0s",
        contact_points=["hook"],
    )
    world.minutes("pooled", T0, 2, 400.0)
    world.cycle(T0 + timedelta(minutes=1))
    with web_client(world.engine, world.vault, role="operator") as client:
        page = client.get("/alerts", headers=HTML)
        assert page.status_code == 200
        assert 'id="alerts-firing"' in page.text and "sales / pooled (connping)" in page.text
        assert "/samples?target=sales" in page.text and "/target/sales?" in page.text
        overview = client.get("/", headers=HTML).text
        assert 'id="firing-alerts"' in overview and "slow" in overview
        fp = "mode=pooled,probe=connping,target=sales"
        res = client.post(
            "/alerts/ack",
            content=f"rule=slow&fingerprint={fp}&comment=on+it",
            headers=FORM,
            follow_redirects=False,
        )
        assert res.status_code == 303
        assert 'id="alerts-acknowledged"' in client.get("/alerts", headers=HTML).text
        bad = client.post(
            "/alerts/silences",
            content="targets=sales&duration=forever&comment=",
            headers={**FORM, **HTML},
        )
        assert bad.status_code == 422 and "for:" in bad.text
        ok = client.post(
            "/alerts/silences",
            content="targets=sales&duration=2h&comment=resize",
            headers=FORM,
            follow_redirects=False,
        )
        assert ok.status_code == 303
        note = client.post(
            "/annotations",
            content="text=DRCP+pool+resized&target=sales",
            headers=FORM,
            follow_redirects=False,
        )
        assert note.status_code == 303
        events = client.get("/api/v1/targets/sales/events?range=30d").json()
        assert any(e["text"] == "DRCP pool resized" for e in events["events"])
        assert any(e["kind"] == "firing" for e in events["events"])
        spikes = client.get("/spikes?range=30d", headers=HTML).text
        assert 'id="events"' in spikes and "DRCP pool resized" in spikes
    assert _audit(world.engine) == ["alert.ack", "silence.create", "annotation.create"]


def test_rule_editor_backtests_before_saving(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="connwatch.audit")
    world.minutes("pooled", T0, 3, 400.0)
    world.rollup()
    rule = "name: r1\nkind: latency\nthreshold_ms: 200\nwindow: 1m\n"
    with web_client(world.engine, world.vault, role="operator") as client:
        from urllib.parse import quote

        res = client.post(
            "/alerts/rules/edit",
            content=f"rule={quote(rule)}&action=backtest",
            headers={**FORM, **HTML},
        )
        assert res.status_code == 200 and 'id="backtest-sentence"' in res.text
        assert "Over the last 7 days this rule would have fired" in res.text
        assert client.get("/api/v1/alerts/rules").json() == []  # not saved yet
        bad = client.post(
            "/alerts/rules/edit",
            content=f"rule={quote('name: r1' + chr(10) + 'kind: latency')}&action=save",
            headers={**FORM, **HTML},
        )
        assert (
            bad.status_code == 422 and "threshold_ms: a latency rule needs threshold_ms" in bad.text
        )
        ok = client.post(
            "/alerts/rules/edit",
            content=f"rule={quote(rule)}&action=save",
            headers=FORM,
            follow_redirects=False,
        )
        assert ok.status_code == 303
        assert [r["name"] for r in client.get("/api/v1/alerts/rules").json()] == ["r1"]
        api = client.put(
            "/api/v1/alerts/rules/r2",
            json={"name": "r2", "kind": "nodata", "contact_points": ["ghost"]},
        )
        assert api.status_code == 422 and "no contact point 'ghost'" in api.text
    assert _audit(world.engine) == ["rule.create"]


def test_contact_points_test_message_and_no_secret_shown(
    world: World, http_receiver: HttpReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="connwatch.audit")
    http_receiver.secret = "hunter2"  # the receiver checks signatures with the same key
    with web_client(world.engine, world.vault, role="operator") as client:
        res = client.post(
            "/alerts/contacts",
            content=f"name=hook&channel=webhook&url={http_receiver.url}/t&secret=hunter2&enabled=on",
            headers=FORM,
            follow_redirects=False,
        )
        assert res.status_code == 303
        sent = client.post(
            "/alerts/contacts/hook/test", content="", headers=FORM, follow_redirects=False
        )
        assert "delivered" in sent.headers["location"]
        page = client.get("/alerts/contacts", headers=HTML).text
        assert "hunter2" not in page and "encrypted" in page and "HTTP 200" in page
        assert "hunter2" not in client.get("/api/v1/contact-points").text
        assert "hunter2" not in client.get("/alerts/contacts?edit=hook", headers=HTML).text
    (req,) = http_receiver.requests
    assert req.signature_ok and req.json()["kind"] == "test"
    assert "hunter2" not in caplog.text
