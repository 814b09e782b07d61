"""`connwatch report` as a real subprocess on a real store: files, sending, subscriptions
as YAML, the archive, and one-line errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import create_engine, func, select

from app import migrate
from app.demo.pgcluster import PgCluster
from app.notify.tables import notify_outbox
from app.reports.delivery.subscriptions import dump_yaml, list_subscriptions
from app.reports.delivery.tables import report_archive
from app.secrets import Vault
from tests.test_cli import assert_clean_failure, run_cli
from tests.web.weekly_data import seed_weeks

SUBS = """
subscriptions:
  - name: managers
    targets: ["week*"]
    schedule: {every: week, day: monday, at: "08:00", timezone: Europe/Berlin}
    recipients: [boss@example.org]
    paper: Letter
"""


def test_report_files_send_subscriptions_and_archive(
    pg_cluster: PgCluster, pg_database: str, tmp_path: Path
) -> None:
    env = {
        "CONNWATCH_DATABASE_URL": f"postgresql://{pg_cluster.user}@127.0.0.1:{pg_cluster.port}/{pg_database}",
        "CONNWATCH_DATA_DIR": str(tmp_path / "data"),
        "CONNWATCH_PUBLIC_URL": "https://cw.example.org",
    }
    engine = create_engine(pg_cluster.url(pg_database))
    migrate.upgrade(engine)
    weeks = seed_weeks(engine, Vault(Fernet.generate_key()))
    pdf, csv = tmp_path / "out.pdf", tmp_path / "out.csv"
    res = run_cli("report", "--week", weeks.b_label, "--pdf", str(pdf), "--csv", str(csv),
                  env=env, timeout=180)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"report {weeks.b_label}, all targets:" in res.stdout
    assert "1 of 2 modes got slower" in res.stdout
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, check=True).stdout
    assert b"96.98" in text and b"https://cw.example.org/report?week=" in text
    assert csv.read_text().splitlines()[0].startswith("Target,Mode,Probe,Samples")
    assert_clean_failure(
        run_cli("report", "--week", "2026-W99", "--csv", "/nonexistent/x.csv", env=env),
        "--week: 2026 has no ISO week 99",
    )
    subs = tmp_path / "subs.yaml"
    subs.write_text(SUBS.replace("boss@example.org", "boss@"))
    assert_clean_failure(
        run_cli("report", "subscriptions", "import", str(subs), env=env),
        "subscription #1 'managers': recipients: 'boss@' is not an e-mail address",
    )
    subs.write_text(SUBS)
    res = run_cli("report", "subscriptions", "import", str(subs), env=env)
    assert res.returncode == 0 and "1 created, 0 updated, 0 removed" in res.stdout
    with engine.connect() as conn:
        exported = dump_yaml(list_subscriptions(conn))  # what `subscriptions export` prints
    assert "timezone: Europe/Berlin" in exported and "paper: Letter" in exported
    res = run_cli("report", "send", "--subscription", "managers", "--week", weeks.b_label,
                  env=env, timeout=180)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "queued 'connwatch weekly report" in res.stdout and "boss@example.org" in res.stdout
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(notify_outbox)).scalar_one() == 1
        arch_id = conn.execute(select(report_archive.c.id)).scalar_one()
    again = tmp_path / "again.pdf"
    assert (
        run_cli("report", "archive", "get", str(arch_id), "--pdf", str(again), env=env).returncode
        == 0
    )
    info = subprocess.run(["pdfinfo", str(again)], capture_output=True, check=True).stdout
    assert b"(letter)" in info
    engine.dispose()
