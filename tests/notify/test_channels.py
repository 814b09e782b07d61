"""Every channel against a real receiver: aiosmtpd (STARTTLS, implicit TLS, AUTH), an HTTP
receiver that checks the HMAC signature itself, a Slack-compatible receiver, and Debian's
prometheus-alertmanager."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Engine

from app.notify import outbox
from app.notify.contacts import ContactPointSpec, upsert_contact_point
from app.notify.deliver import Deliverer
from app.notify.outbox import Attachment
from app.secrets import Vault
from tests.fixtures.receivers import (
    Alertmanager,
    HttpReceiver,
    SmtpServer,
    run_smtp,
    wait_until,
)

MakeDeliverer = Callable[..., Deliverer]
ALERT = {
    "status": "firing",
    "rule": "logon-slow",
    "severity": "page",
    "labels": {"target": "sales", "mode": "pooled"},
    "summary": "sales/pooled logon p95 412 ms > 200 ms for 2 min",
    "value": 412.0,
    "threshold": 200.0,
    "starts_at": "2026-11-22T10:00:00+00:00",
    "chart_url": "http://connwatch.example/target/sales?from=x",
}


def _contact(engine: Engine, vault: Vault, **spec: Any) -> int:
    with engine.begin() as conn:
        cp_id, created = upsert_contact_point(conn, ContactPointSpec(**spec), vault)
    assert created
    return cp_id


def _alert(engine: Engine, cp_id: int, channel: str, **payload: Any) -> int:
    with engine.begin() as conn:
        mid = outbox.enqueue(
            conn,
            channel=channel,
            kind="alert",
            contact_point_id=cp_id,
            payload={
                "subject": "[FIRING] logon-slow",
                "text": "sales/pooled is slow",
                "alerts": [ALERT],
                **payload,
            },
        )
    assert mid is not None
    return mid


def test_email_with_attachments_over_starttls_and_auth(
    migrated_engine: Engine, smtp_server: SmtpServer, make_deliverer: MakeDeliverer
) -> None:
    with migrated_engine.begin() as conn:
        mid = outbox.enqueue_email(
            conn,
            to=["DBA team <dba@example.org>", "oncall@example.org"],
            subject="Weekly report 2026-W46",
            text_body="Availability 99.98 %",
            html_body="<p>Availability <b>99.98 %</b></p>",
            attachments=[
                Attachment("week.pdf", "application/pdf", b"%PDF-1.7 fake"),
                Attachment("week.csv", "text/csv", b"target,mode\nsales,pooled\n"),
            ],
            kind="report",
        )
    d = make_deliverer(smtp_server)
    assert d.run_once() == [(mid, "delivered")]
    (msg,) = smtp_server.messages
    assert smtp_server.envelopes == [
        ("connwatch@example.org", ["dba@example.org", "oncall@example.org"])
    ]
    assert msg["Subject"] == "Weekly report 2026-W46"
    assert msg["Message-ID"] == f"<connwatch.{mid}@example.org>"
    assert msg["X-Connwatch-Delivery"] == str(mid)
    body = msg.get_body(("plain",))
    assert body is not None and "99.98 %" in body.get_content()
    files = {p.get_filename(): p.get_content() for p in msg.iter_attachments()}
    assert files == {"week.pdf": b"%PDF-1.7 fake", "week.csv": "target,mode\nsales,pooled\n"}
    with migrated_engine.connect() as conn:
        (row,) = outbox.delivery_log(conn)
    assert row.ok and row.detail and "accepted" in row.detail


def test_email_over_implicit_tls(migrated_engine: Engine, make_deliverer: MakeDeliverer) -> None:
    with run_smtp(implicit_tls=True) as server:
        with migrated_engine.begin() as conn:
            mid = outbox.enqueue_email(conn, to=["a@example.org"], subject="s", text_body="t")
        d = make_deliverer(server, smtp_security="tls")
        assert d.run_once() == [(mid, "delivered")]
        assert len(server.messages) == 1


def test_email_refuses_to_fall_back_to_plain_text(
    migrated_engine: Engine, make_deliverer: MakeDeliverer
) -> None:
    with run_smtp(starttls=False) as server:
        with migrated_engine.begin() as conn:
            mid = outbox.enqueue_email(conn, to=["a@example.org"], subject="s", text_body="t")
        d = make_deliverer(server)
        assert d.run_once() == [(mid, "pending")]
        assert server.messages == []
        with migrated_engine.connect() as conn:
            assert outbox.get_status(conn, mid) == (
                "pending",
                f"127.0.0.1:{server.port} does not offer STARTTLS",
            )


def test_wrong_smtp_password_fails_without_showing_it(
    migrated_engine: Engine, smtp_server: SmtpServer, make_deliverer: MakeDeliverer
) -> None:
    with migrated_engine.begin() as conn:
        mid = outbox.enqueue_email(conn, to=["a@example.org"], subject="s", text_body="t")
    d = make_deliverer(smtp_server, smtp_password="Wr0ngPassw0rd")
    assert d.run_once() == [(mid, "failed")]
    with migrated_engine.connect() as conn:
        _status, error = outbox.get_status(conn, mid) or ("", "")
    assert error and "refused the login" in error and "Wr0ngPassw0rd" not in error


def test_smtp_not_configured_says_so(
    migrated_engine: Engine, make_deliverer: MakeDeliverer
) -> None:
    with migrated_engine.begin() as conn:
        mid = outbox.enqueue_email(conn, to=["a@example.org"], subject="s", text_body="t")
    assert make_deliverer().run_once() == [(mid, "pending")]
    with migrated_engine.connect() as conn:
        assert outbox.get_status(conn, mid) == (
            "pending",
            "SMTP is not configured (set CONNWATCH_SMTP_HOST)",
        )


def test_email_contact_point_recipients(
    migrated_engine: Engine, vault: Vault, smtp_server: SmtpServer, make_deliverer: MakeDeliverer
) -> None:
    cp = _contact(
        migrated_engine, vault, name="oncall-mail", channel="email", to=["oncall@example.org"]
    )
    mid = _alert(migrated_engine, cp, "email")
    assert make_deliverer(smtp_server).run_once() == [(mid, "delivered")]
    assert smtp_server.envelopes[0][1] == ["oncall@example.org"]
    assert smtp_server.messages[0]["Subject"] == "[FIRING] logon-slow"


def test_webhook_is_signed_retried_and_delivered_once(
    migrated_engine: Engine,
    vault: Vault,
    http_receiver: HttpReceiver,
    make_deliverer: MakeDeliverer,
) -> None:
    cp = _contact(
        migrated_engine,
        vault,
        name="hook",
        channel="webhook",
        url=f"{http_receiver.url}/hooks/connwatch",
        secret=http_receiver.secret,
    )
    mid = _alert(migrated_engine, cp, "webhook")
    http_receiver.fail_next = 1
    d = make_deliverer()
    assert d.run_once() == [(mid, "pending")]
    with migrated_engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("update notify_outbox set next_attempt_at = now()"))
    assert d.run_once() == [(mid, "delivered")]
    assert d.run_once() == []
    first, second = http_receiver.requests
    assert first.signature_ok and second.signature_ok
    assert (
        first.headers["x-connwatch-delivery"] == second.headers["x-connwatch-delivery"] == str(mid)
    )
    doc = second.json()
    assert doc["version"] == "1" and doc["id"] == mid and doc["kind"] == "alert"
    assert doc["alerts"][0]["labels"] == {"target": "sales", "mode": "pooled"}
    with migrated_engine.connect() as conn:
        log = outbox.delivery_log(conn, contact_point_id=cp)
    assert [(r.attempt, r.ok, r.detail) for r in log] == [
        (2, True, "HTTP 200"),
        (1, False, "HTTP 500"),
    ]


def test_a_tampered_body_fails_the_receivers_check(http_receiver: HttpReceiver) -> None:
    from app.notify.channels.webhook import signature
    from tests.fixtures.receivers import check_signature

    header = signature("key", 1_900_000_000, b'{"a":1}')
    assert not check_signature("key", header, b'{"a":2}')


def test_webhook_4xx_is_permanent(
    migrated_engine: Engine,
    vault: Vault,
    http_receiver: HttpReceiver,
    make_deliverer: MakeDeliverer,
) -> None:
    cp = _contact(migrated_engine, vault, name="hook", channel="webhook", url=http_receiver.url)
    mid = _alert(migrated_engine, cp, "webhook")
    http_receiver.status = 410
    assert make_deliverer().run_once() == [(mid, "failed")]
    assert http_receiver.requests[0].signature_ok is None  # no secret: not signed


def test_unreachable_webhook_is_retried_later(
    migrated_engine: Engine, vault: Vault, make_deliverer: MakeDeliverer
) -> None:
    from tests.fixtures.receivers import free_port

    cp = _contact(
        migrated_engine,
        vault,
        name="hook",
        channel="webhook",
        url=f"http://127.0.0.1:{free_port()}/x",
    )
    mid = _alert(migrated_engine, cp, "webhook")
    assert make_deliverer().run_once() == [(mid, "pending")]
    with migrated_engine.connect() as conn:
        _, error = outbox.get_status(conn, mid) or ("", "")
    assert error and error.startswith("webhook http://127.0.0.1:") and "cannot connect" in error


def test_slack_compatible_webhook(
    migrated_engine: Engine,
    vault: Vault,
    http_receiver: HttpReceiver,
    make_deliverer: MakeDeliverer,
) -> None:
    url = f"{http_receiver.url}/services/T000/B000/XXXXSECRET"
    cp = _contact(
        migrated_engine, vault, name="slack", channel="slack", secret=url, channel_name="#oncall"
    )
    mid = _alert(migrated_engine, cp, "slack")
    assert make_deliverer().run_once() == [(mid, "delivered")]
    (req,) = http_receiver.requests
    assert req.path == "/services/T000/B000/XXXXSECRET"
    doc = req.json()
    assert doc["text"].startswith("[FIRING] logon-slow") and doc["channel"] == "#oncall"
    assert doc["blocks"][0]["text"]["text"].startswith("*[FIRING] logon-slow*")


def test_alertmanager_receives_the_alert(
    migrated_engine: Engine,
    vault: Vault,
    alertmanager: Alertmanager,
    make_deliverer: MakeDeliverer,
) -> None:
    cp = _contact(migrated_engine, vault, name="am", channel="alertmanager", url=alertmanager.url)
    mid = _alert(migrated_engine, cp, "alertmanager")
    assert make_deliverer().run_once() == [(mid, "delivered")]

    def ours() -> list[dict[str, Any]]:
        return [a for a in alertmanager.alerts() if a["labels"].get("alertname") == "logon-slow"]

    assert wait_until(lambda: bool(ours()), timeout=10)
    (a,) = ours()
    assert a["labels"] == {
        "alertname": "logon-slow",
        "severity": "page",
        "target": "sales",
        "mode": "pooled",
    }
    assert a["annotations"]["summary"] == ALERT["summary"]
    assert a["generatorURL"] == ALERT["chart_url"]
    assert a["status"]["state"] == "active"
