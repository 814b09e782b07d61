"""Scheduled reports end to end: a real SMTP server (aiosmtpd) receives the mail through the
notify outbox; the attached PDF, read back with pdftotext, holds the API's figures; its
pages are kept as PNGs; a report that fell due while nothing ran goes out exactly once,
late, however many processes run the schedule."""

from __future__ import annotations

import subprocess
import threading
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, func, select, update
from sqlalchemy.engine import Engine

from app.notify.deliver import Deliverer
from app.notify.tables import notify_outbox
from app.reports.delivery.archive import fetch_file, list_archive
from app.reports.delivery.schedule import last_due, run_due
from app.reports.delivery.subscriptions import (
    SubscriptionError,
    get_subscription,
    save,
    validate,
)
from app.reports.delivery.tables import report_archive, report_subscriptions
from app.secrets import Vault
from tests.fixtures.auth import web_client
from tests.fixtures.browser import ARTIFACTS
from tests.fixtures.receivers import SmtpServer
from tests.notify.conftest import notify_settings
from tests.web.weekly_data import Weeks, seed_weeks

BASE = "http://connwatch.example.org"


def _subscribe(engine: Engine, name: str = "managers", **over: Any) -> None:
    spec = validate(
        {
            "name": name,
            "schedule": {"every": "week", "day": "monday", "at": "08:00", "timezone": "UTC"},
            "recipients": ["boss@example.org", "dba-lead@example.org"],
            **over,
        }
    )
    with engine.begin() as conn:
        save(conn, spec)
        # subscribed long ago: every recent Monday 08:00 was due
        conn.execute(
            update(report_subscriptions)
            .where(report_subscriptions.c.name == name)
            .values(created_at=datetime(2020, 1, 1, tzinfo=UTC))
        )


def _pdftotext(pdf: bytes, tmp: Path) -> str:
    f = tmp / "mail.pdf"
    f.write_bytes(pdf)
    return subprocess.run(
        ["pdftotext", "-layout", str(f), "-"], capture_output=True, check=True, timeout=60
    ).stdout.decode()


def _parts(msg: EmailMessage) -> tuple[str, str, dict[str, bytes]]:
    body_text = msg.get_body(("plain",))
    body_html = msg.get_body(("html",))
    assert body_text is not None and body_html is not None
    files = {str(p.get_filename()): p.get_payload(decode=True) for p in msg.iter_attachments()}
    return str(body_text.get_content()), str(body_html.get_content()), files  # type: ignore[misc]


@pytest.fixture
def seeded(migrated_engine: Engine) -> Weeks:
    return seed_weeks(migrated_engine, Vault(Fernet.generate_key()))


def test_scheduled_mail_has_html_text_pdf_csv_and_the_apis_figures(
    migrated_engine: Engine, seeded: Weeks, smtp_server: SmtpServer, tmp_path: Path
) -> None:
    _subscribe(migrated_engine)
    now = seeded.b + timedelta(days=7, hours=8, minutes=2)  # Monday 08:02 after week B
    res = run_due(migrated_engine, now, base_url=BASE)
    assert [(r.subscription, r.outcome) for r in res] == [("managers", "sent")]
    d = Deliverer(migrated_engine, notify_settings(tmp_path, smtp_server))
    try:
        assert [s for _, s in d.run_once()] == ["delivered"]
    finally:
        d.close()
    (msg,) = smtp_server.messages
    assert sorted(smtp_server.envelopes[0][1]) == ["boss@example.org", "dba-lead@example.org"]
    subject = str(msg["Subject"]).strip()  # a long subject is folded, then unfolded
    assert subject.startswith(f"connwatch weekly report {seeded.b_label}: 98.50 % available")
    assert "1 mode slower" in subject and "1 outage" in subject
    text, html, files = _parts(msg)
    pdf_name, csv_name = (f"connwatch-report-{seeded.b_label}.{x}" for x in ("pdf", "csv"))
    assert set(files) == {pdf_name, csv_name}
    assert files[pdf_name][:5] == b"%PDF-"
    # readable without images: no <img>, the figures and sentences are text
    assert "<img" not in html and "96.98 %" in html and "<b>weekly</b><br>dedicated" in html
    assert f'href="{BASE}/report?week={seeded.b_label}"' in html
    assert "96.98" in text and "TNS-12520" in text and f"{BASE}/samples?" in text
    # the API's figures for the same week are in the PDF (and in the CSV)
    with web_client(migrated_engine, Vault(Fernet.generate_key()), role="viewer") as client:
        doc = client.get("/api/v1/report", params={"week": seeded.b_label}).json()
    pdf_text = _pdftotext(files[pdf_name], tmp_path)
    rows = {r["mode"]: r for r in doc["rows"]}
    for r in rows.values():
        for fig in (f"{r['availability_pct']:.2f}", f"{r['logon_p95_ms']:.1f}",
                    f"{r['ping_p95_ms']:.2f}", str(r["samples"])):  # fmt: skip
            assert fig in pdf_text, fig
            assert fig in files[csv_name].decode()
    for sentence in doc["summary"]:
        assert sentence.split(":")[0] in " ".join(pdf_text.split())
    assert "Page 1 of" in pdf_text
    # kept as test artifacts, to be looked at
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report-mail.html").write_text(html)
    (ARTIFACTS / "report-mail.pdf").write_bytes(files[pdf_name])
    subprocess.run(
        ["pdftoppm", "-r", "70", "-png", str(ARTIFACTS / "report-mail.pdf"),
         str(ARTIFACTS / "report-mail-page")], check=True, timeout=120,
    )  # fmt: skip
    assert (ARTIFACTS / "report-mail-page-1.png").exists()
    # the archive keeps what was sent
    with migrated_engine.connect() as conn:
        (arch,) = list_archive(conn)
        assert (arch.period, arch.trigger, arch.late) == (seeded.b_label, "schedule", False)
        assert arch.recipients == ["boss@example.org", "dba-lead@example.org"]
        got = fetch_file(conn, arch.id, "pdf")
        assert got is not None and got[1] == files[pdf_name]


def test_a_report_due_during_an_outage_goes_out_once_late_across_processes(
    migrated_engine: Engine, seeded: Weeks, pg_url: str
) -> None:
    _subscribe(migrated_engine)
    # nothing ran on Monday 08:00; two processes come back on Tuesday at once
    now = seeded.b + timedelta(days=8, hours=10)
    engines = [create_engine(pg_url) for _ in range(3)]
    results: list[Any] = []
    barrier = threading.Barrier(3)

    def process(engine: Engine) -> None:
        barrier.wait()
        results.extend(run_due(engine, now, base_url=BASE))

    threads = [threading.Thread(target=process, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    outcomes = sorted(r.outcome for r in results)
    assert outcomes.count("sent late") == 1, outcomes
    assert set(outcomes) <= {"sent late", "busy", "already sent"}
    # and the next ticks find it sent
    later = run_due(migrated_engine, now + timedelta(minutes=1), base_url=BASE)
    assert [r.outcome for r in later] == ["already sent"]
    with migrated_engine.connect() as conn:
        n_arch = conn.execute(select(func.count()).select_from(report_archive)).scalar_one()
        n_mail = conn.execute(select(func.count()).select_from(notify_outbox)).scalar_one()
        subject = conn.execute(select(report_archive.c.subject)).scalar_one()
        late = conn.execute(select(report_archive.c.late)).scalar_one()
    assert (n_arch, n_mail, late) == (1, 1, True)
    assert subject.startswith("[late] connwatch weekly report")
    for e in engines:
        e.dispose()


def test_a_new_subscription_is_not_due_for_instants_before_it_existed(
    migrated_engine: Engine,
) -> None:
    spec = validate({"name": "fresh", "recipients": ["a@example.org"]})
    with migrated_engine.begin() as conn:
        save(conn, spec)
    assert run_due(migrated_engine, base_url=BASE) == []


def test_due_instants_follow_the_time_zone_and_the_month() -> None:
    weekly = validate(
        {"name": "w", "recipients": ["a@example.org"],
         "schedule": {"day": "monday", "at": "08:00", "timezone": "Europe/Berlin"}}
    )  # fmt: skip
    # Monday 30 March 2026 07:30 Berlin (05:30 UTC, summer time): not yet; the week before's
    assert last_due(weekly, datetime(2026, 3, 30, 5, 30, tzinfo=UTC)) == datetime(
        2026, 3, 23, 7, 0, tzinfo=UTC
    )  # 08:00 CET the week before (summer time began on 29 March)
    assert last_due(weekly, datetime(2026, 3, 30, 6, 0, tzinfo=UTC)) == datetime(
        2026, 3, 30, 6, 0, tzinfo=UTC
    )  # 08:00 CEST
    monthly = validate(
        {"name": "m", "recipients": ["a@example.org"],
         "schedule": {"every": "month", "day": 3, "at": "06:30", "timezone": "UTC"}}
    )  # fmt: skip
    assert last_due(monthly, datetime(2026, 1, 2, tzinfo=UTC)) == datetime(
        2025, 12, 3, 6, 30, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"name": "x y", "recipients": ["a@example.org"]}, "name: 'x y'"),
        ({"name": "x", "recipients": []}, "recipients: at least one"),
        ({"name": "x", "recipients": ["not-mail"]}, "'not-mail' is not an e-mail address"),
        ({"name": "x", "recipients": ["a@b.org"], "schedule": {"timezone": "Mars/Base"}},
         "'Mars/Base' is not an IANA time zone"),
        ({"name": "x", "recipients": ["a@b.org"], "schedule": {"day": "funday"}},
         "schedule.day: 'funday' is not a weekday"),
        ({"name": "x", "recipients": ["a@b.org"], "schedule": {"every": "month", "day": 31}},
         "1..28"),
        ({"name": "x", "recipients": ["a@b.org"], "schedule": {"at": "25:00"}}, "not a time"),
        ({"name": "x", "recipients": ["a@b.org"], "targets": ["a/b"]}, "target name pattern"),
        ({"name": "x", "recipients": ["a@b.org"], "bcc": "x"}, "bcc: Extra inputs"),
    ],
)  # fmt: skip
def test_bad_subscriptions_are_named(data: dict[str, Any], needle: str) -> None:
    with pytest.raises(SubscriptionError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        validate(data)


def test_saving_twice_updates(migrated_engine: Engine) -> None:
    with migrated_engine.begin() as conn:
        save(conn, validate({"name": "s", "recipients": ["a@example.org"]}))
        save(conn, validate({"name": "s", "recipients": ["b@example.org"], "paper": "Letter"}))
        got = get_subscription(conn, "s")
    assert got is not None and got.spec.recipients == ["b@example.org"]
    assert got.spec.paper == "Letter"
