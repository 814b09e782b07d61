"""When a subscription is due, and sending each due report exactly once across processes.

A weekly subscription is due every week on its weekday at HH:MM in its time zone, a
monthly one on its day (1..28) at HH:MM; daylight saving is the zone's (zoneinfo). The
report covers the last complete ISO week (a month: calendar month), in UTC, at the due
instant, so a Monday-morning schedule in Europe or America reports the week just ended.

:func:`run_due` is called every ``TICK_S`` by every web process (and by
``connwatch report run-due``). For each enabled subscription it takes the most recent
due instant; if the archive has no report for it, it takes a PostgreSQL advisory lock
for that subscription (``pg_try_advisory_xact_lock``: a process that does not get it
moves on), checks the archive again, renders, stores the archive row and queues the
mail in ONE transaction (``uq_report_archive_due`` would refuse a second row anyway).
So however many processes run, each due report is sent once; a report that fell due
while every process was down is sent when one comes back, once, marked late (more than
``LATE_AFTER`` after its due instant). Only the most recent due instant is caught up:
after three missed weeks, one report (the last week's) goes out, not three.
A subscription created after an instant is not due for it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from sqlalchemy import select, text
from sqlalchemy.engine import Engine

from app.reports.content.period import Period, last_month, last_week
from app.reports.delivery.send import Delivery, deliver
from app.reports.delivery.subscriptions import Subscription, SubscriptionIn, list_subscriptions
from app.reports.delivery.tables import report_archive

log = logging.getLogger(__name__)
LOCK_CLASS = 0x5250  # "RP": the first key of the subscription's advisory lock
LATE_AFTER = timedelta(minutes=10)
TICK_S = 30.0


def last_due(spec: SubscriptionIn, now: datetime) -> datetime:
    """The most recent due instant at or before ``now`` (UTC)."""
    sched = spec.schedule
    tz = ZoneInfo(sched.timezone)
    h, m = (int(x) for x in sched.at.split(":"))
    local = now.astimezone(tz)

    def at(d: date) -> datetime:
        return datetime(d.year, d.month, d.day, h, m, tzinfo=tz).astimezone(UTC)

    if sched.every == "week":
        d = local.date() - timedelta(days=(local.isoweekday() - sched.weekday()) % 7)
        due = at(d)
        return due if due <= now else at(d - timedelta(days=7))
    dom = sched.day_of_month()
    due = at(date(local.year, local.month, dom))
    if due <= now:
        return due
    prev = date(local.year, local.month, 1) - timedelta(days=1)
    return at(date(prev.year, prev.month, dom))


def period_due(spec: SubscriptionIn, due: datetime) -> Period:
    """What a report sent at ``due`` covers: the last complete week or month (UTC)."""
    return last_week(due) if spec.schedule.every == "week" else last_month(due)


@dataclass(frozen=True, slots=True)
class DueResult:
    subscription: str
    due_at: datetime
    outcome: str  # "sent", "sent late", "already sent", "busy" (another process has it), "failed"
    archive_id: int | None = None
    detail: str = ""


def _archived(engine: Engine, sub: Subscription, due: datetime) -> bool:
    with engine.connect() as conn:
        return (
            conn.execute(
                select(report_archive.c.id).where(
                    report_archive.c.subscription_id == sub.id, report_archive.c.due_at == due
                )
            ).first()
            is not None
        )


def run_one(engine: Engine, sub: Subscription, due: datetime, now: datetime, *,
            base_url: str, browser: str | None = None) -> DueResult:  # fmt: skip
    """Send ``sub``'s report for ``due`` unless it went out already or another process is
    sending it right now."""
    if _archived(engine, sub, due):
        return DueResult(sub.name, due, "already sent")
    late = now - due > LATE_AFTER
    with engine.begin() as conn:
        got = conn.execute(
            text("select pg_try_advisory_xact_lock(:c, :k)"), {"c": LOCK_CLASS, "k": sub.id}
        ).scalar_one()
        if not got:
            return DueResult(sub.name, due, "busy")
        done = conn.execute(
            select(report_archive.c.id).where(
                report_archive.c.subscription_id == sub.id, report_archive.c.due_at == due
            )
        ).first()
        if done is not None:
            return DueResult(sub.name, due, "already sent", int(done[0]))
        d: Delivery = deliver(
            conn, sub, period_due(sub.spec, due), now=now, trigger="schedule", due_at=due,
            late=late, base_url=base_url, browser=browser,
        )  # fmt: skip
    return DueResult(sub.name, due, "sent late" if late else "sent", d.archive_id)


def run_due(
    engine: Engine, now: datetime | None = None, *, base_url: str, browser: str | None = None
) -> list[DueResult]:
    """Send every report that is due and not sent yet (safe to call from many processes)."""
    now = now or datetime.now(UTC)
    with engine.connect() as conn:
        subs = [s for s in list_subscriptions(conn) if s.spec.enabled]
    out: list[DueResult] = []
    for sub in subs:
        due = last_due(sub.spec, now)
        if due < sub.created_at:
            continue
        try:
            res = run_one(engine, sub, due, now, base_url=base_url, browser=browser)
        except Exception as exc:  # one bad subscription must not stop the others
            log.error("report %s due %s failed: %s", sub.name, due.isoformat(), exc, exc_info=exc)
            res = DueResult(sub.name, due, "failed", detail=f"{type(exc).__name__}: {exc}")
        if res.outcome.startswith("sent"):
            log.info("report %s for %s: %s", sub.name, due.isoformat(), res.outcome)
        out.append(res)
    return out
