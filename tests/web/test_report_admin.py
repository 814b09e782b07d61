"""Report subscriptions and the archive in the UI: form validation, send now, preview, files."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from app.auth.tables import audit_log
from app.notify.tables import notify_outbox
from app.secrets import Vault
from tests.web.weekly_data import seed_weeks

FORM = {"content-type": "application/x-www-form-urlencoded"}


def test_subscriptions_form_send_now_preview_archive(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    weeks = seed_weeks(migrated_engine, vault)
    page = client.get("/report/subscriptions", headers={"accept": "text/html"})
    assert page.status_code == 200 and 'id="no-subscriptions"' in page.text
    bad = client.post(
        "/report/subscriptions",
        content="name=managers&recipients=boss%40&timezone=Mars%2FBase&labels=env",
        headers={**FORM, "accept": "text/html"},
    )
    assert bad.status_code == 422
    for needle in ("'boss@' is not an e-mail address", "'Mars/Base' is not an IANA time zone",
                   "labels: 'env' is not key=value"):  # fmt: skip
        assert needle in bad.text.replace("&#39;", "'")
    ok = client.post(
        "/report/subscriptions",
        content="name=managers&recipients=boss%40example.org%2C+cto%40example.org&targets=week*"
        "&every=week&day=monday&at=08%3A00&timezone=Europe%2FBerlin&paper=A4&enabled=on",
        headers=FORM,
        follow_redirects=False,
    )
    assert ok.status_code == 303
    listing = client.get("/report/subscriptions", headers={"accept": "text/html"}).text
    assert "every Monday at 08:00 Europe/Berlin" in listing and "targets week*" in listing
    preview = client.get("/report/subscriptions/managers/preview")
    assert preview.status_code == 200 and "Per target and mode" in preview.text
    assert "<img" not in preview.text
    sent = client.post("/report/subscriptions/managers/send", content="", headers=FORM,
                       follow_redirects=False)  # fmt: skip
    assert sent.status_code == 303 and "queued" in sent.headers["location"]
    with migrated_engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(notify_outbox)).scalar_one() == 1
    listing = client.get("/report/subscriptions", headers={"accept": "text/html"}).text
    assert weeks.b_label in listing and "send-now" in listing
    pdf = client.get("/report/archive/1.pdf")
    assert pdf.status_code == 200 and pdf.content[:5] == b"%PDF-"
    assert client.get("/report/archive/1.csv").text.startswith("Target,Mode")
    assert client.get("/report/archive/99.pdf").status_code == 404
    assert client.get("/report/archive/1.exe").status_code == 404
    gone = client.post("/report/subscriptions/managers/delete", content="", headers=FORM,
                       follow_redirects=False)  # fmt: skip
    assert gone.status_code == 303
    # the sent report outlives its subscription
    assert client.get("/report/archive/1.pdf").status_code == 200
    assert client.post("/report/subscriptions/managers/send", content="",
                       headers=FORM).status_code == 404  # fmt: skip
    assert client.post("/report/subscriptions", content="{}",
                       headers={"content-type": "application/json"}).status_code == 415  # fmt: skip

    # every change and every send is in the audit log, in order, with who did it
    with migrated_engine.connect() as conn:
        rows = conn.execute(
            select(audit_log.c.action, audit_log.c.object_name, audit_log.c.actor_role,
                   audit_log.c.before, audit_log.c.after, audit_log.c.detail)
            .where(audit_log.c.object_type == "report_subscription")
            .order_by(audit_log.c.id)
        ).all()  # fmt: skip
    assert [r.action for r in rows] == [
        "report_subscription.save",  # the refused form (422) wrote nothing
        "report_subscription.send_now",
        "report_subscription.delete",
    ]
    assert {r.object_name for r in rows} == {"managers"} and rows[0].actor_role == "admin"
    assert rows[0].before is None and rows[0].after["recipients"] == [
        "boss@example.org", "cto@example.org"
    ]  # fmt: skip
    assert "queued" in rows[1].detail and "archive #1" in rows[1].detail
    assert rows[2].before["name"] == "managers" and rows[2].after is None  # what was deleted
