"""The archive: every sent report with its PDF, CSV, mail body and recipients.

Kept independently of the samples' retention, so "the report we sent on 3 March" can be
fetched again after its raw samples are gone. Listing never reads the files.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection

from app.reports.delivery.tables import report_archive


@dataclass(frozen=True, slots=True)
class ArchivedReport:
    id: int
    subscription: str
    period: str
    period_start: datetime
    period_end: datetime
    due_at: datetime | None
    trigger: str
    late: bool
    created_at: datetime
    recipients: list[str]
    subject: str
    outbox_id: int | None
    pdf_bytes: int
    csv_bytes: int


_LIST_COLS = (
    report_archive.c.id, report_archive.c.subscription, report_archive.c.period,
    report_archive.c.period_start, report_archive.c.period_end, report_archive.c.due_at,
    report_archive.c.trigger, report_archive.c.late, report_archive.c.created_at,
    report_archive.c.recipients, report_archive.c.subject, report_archive.c.outbox_id,
    func.length(report_archive.c.pdf), func.length(report_archive.c.csv),
)  # fmt: skip


def store(conn: Connection, **values: Any) -> int | None:
    """Insert one sent report; None when its (subscription, due instant) is archived already."""
    stmt = (
        pg_insert(report_archive)
        .values(**values)
        .on_conflict_do_nothing(constraint="uq_report_archive_due")
    )
    got = conn.execute(stmt.returning(report_archive.c.id)).scalar_one_or_none()
    return None if got is None else int(got)


def set_outbox(conn: Connection, archive_id: int, outbox_id: int | None) -> None:
    conn.execute(
        report_archive.update().where(report_archive.c.id == archive_id).values(outbox_id=outbox_id)
    )


def list_archive(
    conn: Connection, *, subscription: str | None = None, limit: int = 200
) -> list[ArchivedReport]:
    q = select(*_LIST_COLS).order_by(report_archive.c.created_at.desc()).limit(limit)
    if subscription:
        q = q.where(report_archive.c.subscription == subscription)
    return [ArchivedReport(*([*list(r[:9]), list(r[9]), *list(r[10:])])) for r in conn.execute(q)]


def fetch_file(conn: Connection, archive_id: int, kind: str) -> tuple[str, bytes] | None:
    """(file name, bytes) of an archived report's ``pdf``, ``csv`` or ``html``."""
    col = {"pdf": report_archive.c.pdf, "csv": report_archive.c.csv, "html": report_archive.c.html}[
        kind
    ]
    row = conn.execute(
        select(report_archive.c.subscription, report_archive.c.period, col).where(
            report_archive.c.id == archive_id
        )
    ).one_or_none()
    if row is None:
        return None
    data = row[2].encode() if isinstance(row[2], str) else bytes(row[2])
    return f"connwatch-report-{row[1]}-{row[0]}.{kind}", data
