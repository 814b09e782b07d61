"""The outbox: messages to deliver, stored in PostgreSQL with what caused them.

A message is inserted in the caller's transaction (:func:`enqueue`, :func:`enqueue_email`),
so it exists exactly when its cause does (an alert transition, a scheduled report). A
deliverer (:mod:`app.notify.deliver`) then

1. **claims** due messages (:func:`claim`): ``claimed_by``/``claimed_until`` set in one
   short transaction, ``FOR UPDATE SKIP LOCKED`` so two deliverers never take the same row;
2. sends each one through its channel, outside any transaction;
3. records the outcome (:func:`finish`): ``delivered`` (never sent again), or back to
   ``pending`` with ``next_attempt_at`` pushed out by exponential backoff, or ``failed``
   (a permanent error, or still undelivered ``give_up`` after it was created).

A deliverer that dies between 1 and 3 leaves a claim that expires after ``lease``: the
message is sent again (at least once). Once 3 committed ``delivered``, no deliverer can
claim it again (never twice after a success). The one gap, a send that succeeded and a
store that became unreachable before 3 committed, resends; every channel carries the
outbox id (``X-Connwatch-Delivery`` header, the e-mail's ``Message-ID``, Alertmanager's
own de-duplication by labels) so the receiver can tell.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection

from app.notify.tables import CHANNELS, notify_attachments, notify_deliveries, notify_outbox

KINDS = ("alert", "test", "report", "email")
PAYLOAD_VERSION = 1


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file carried by an e-mail: name as the recipient sees it, MIME type, bytes."""

    filename: str
    content_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Claimed:
    id: int
    contact_point_id: int | None
    channel: str
    kind: str
    payload: dict[str, Any]
    attempts: int  # including this one
    created_at: datetime


class OutboxError(ValueError):
    """A message cannot be enqueued as given (the text says which field)."""


def enqueue(
    conn: Connection,
    *,
    channel: str,
    kind: str,
    payload: Mapping[str, Any],
    contact_point_id: int | None = None,
    attachments: Sequence[Attachment] = (),
    dedupe_key: str | None = None,
    not_before: datetime | None = None,
) -> int | None:
    """Insert one message; return its id, or None when ``dedupe_key`` was enqueued before.

    ``payload`` is the channel-neutral message (docs/alerts.md, "The message"): at least
    ``subject`` and ``text``. Runs in the caller's transaction: it is delivered only if the
    caller commits.
    """
    if channel not in CHANNELS:
        raise OutboxError(f"channel: {channel!r} is not one of {', '.join(CHANNELS)}")
    if kind not in KINDS:
        raise OutboxError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    if not str(payload.get("subject", "")).strip():
        raise OutboxError("payload.subject: a message needs a subject")
    if attachments and channel != "email":
        raise OutboxError("attachments: only e-mail messages carry attachments")
    body = {"version": PAYLOAD_VERSION, **payload}
    values: dict[str, Any] = {
        "contact_point_id": contact_point_id,
        "channel": channel,
        "kind": kind,
        "payload": body,
        "dedupe_key": dedupe_key,
    }
    if not_before is not None:
        if not_before.tzinfo is None:
            raise OutboxError("not_before: must be timezone-aware")
        values["next_attempt_at"] = not_before
    stmt = pg_insert(notify_outbox).values(**values)
    if dedupe_key is not None:
        stmt = stmt.on_conflict_do_nothing(index_elements=["dedupe_key"])
    new_id = conn.execute(stmt.returning(notify_outbox.c.id)).scalar_one_or_none()
    if new_id is None:
        return None
    for pos, att in enumerate(attachments):
        if not att.filename or "/" in att.filename or "\\" in att.filename:
            raise OutboxError(f"attachments[{pos}].filename: {att.filename!r} is not a file name")
        conn.execute(
            notify_attachments.insert().values(
                outbox_id=new_id,
                position=pos,
                filename=att.filename,
                content_type=att.content_type or "application/octet-stream",
                data=att.data,
            )
        )
    return int(new_id)


def enqueue_email(
    conn: Connection,
    *,
    to: Sequence[str],
    subject: str,
    text_body: str,
    html_body: str | None = None,
    attachments: Sequence[Attachment] = (),
    kind: str = "email",
    dedupe_key: str | None = None,
    not_before: datetime | None = None,
) -> int | None:
    """Queue an e-mail to explicit recipients through the one SMTP configuration.

    What the reports use: ``enqueue_email(conn, to=["dba@example.com"], subject="Weekly
    report", text_body="...", attachments=[Attachment("week.pdf", "application/pdf", pdf)],
    kind="report", dedupe_key="report:2026-W46:dba")``. Returns the outbox id, or None when
    ``dedupe_key`` was already enqueued (so a re-run of a schedule sends nothing twice).
    """
    from app.notify.addresses import check_addresses

    recipients = check_addresses(to, where="to")
    payload: dict[str, Any] = {"subject": subject, "text": text_body, "to": recipients}
    if html_body is not None:
        payload["html"] = html_body
    return enqueue(
        conn,
        channel="email",
        kind=kind,
        payload=payload,
        attachments=attachments,
        dedupe_key=dedupe_key,
        not_before=not_before,
    )


def attachments_of(conn: Connection, outbox_id: int) -> list[Attachment]:
    rows = conn.execute(
        notify_attachments.select()
        .where(notify_attachments.c.outbox_id == outbox_id)
        .order_by(notify_attachments.c.position)
    ).all()
    return [Attachment(r.filename, r.content_type, bytes(r.data)) for r in rows]


def claim(
    conn: Connection,
    claimer: str,
    *,
    limit: int = 20,
    lease: timedelta = timedelta(seconds=60),
    only_id: int | None = None,
) -> list[Claimed]:
    """Take up to ``limit`` due messages (oldest first) for ``lease``; commit right after."""
    rows = conn.execute(
        text(
            "update notify_outbox o set claimed_by = :me, claimed_until = now() + :lease, "
            "attempts = o.attempts + 1 "
            "where o.id in (select id from notify_outbox where status = 'pending' "
            "and next_attempt_at <= now() and (claimed_until is null or claimed_until < now()) "
            "and (cast(:only as bigint) is null or id = :only) "
            "order by next_attempt_at, id limit :n for update skip locked) "
            "returning o.id, o.contact_point_id, o.channel, o.kind, o.payload, o.attempts, "
            "o.created_at"
        ),
        {"me": claimer, "lease": lease, "n": limit, "only": only_id},
    ).all()
    return [Claimed(*r) for r in sorted(rows, key=lambda r: r[0])]


def backoff(attempts: int, *, base_s: float = 15.0, cap_s: float = 1800.0) -> timedelta:
    """Wait before attempt ``attempts + 1``: 15 s, 30 s, 1 min, ... up to 30 min, +-20 %."""
    delay = min(cap_s, base_s * 2 ** max(0, attempts - 1))
    return timedelta(seconds=delay * random.uniform(0.8, 1.2))


@dataclass(frozen=True, slots=True)
class Outcome:
    ok: bool
    detail: str | None = None  # e.g. "HTTP 200", "250 OK queued as ..."
    error: str | None = None  # one line, no secrets
    permanent: bool = False  # retrying cannot help (HTTP 4xx, SMTP 5xx, bad address)
    duration_ms: int = 0


def finish(
    conn: Connection,
    msg: Claimed,
    claimer: str,
    outcome: Outcome,
    *,
    give_up: timedelta = timedelta(hours=24),
) -> str:
    """Record one attempt in the delivery log and the message's new status; return it.

    Only the claimer that still holds the claim may finish a message: a deliverer that
    lost its claim (it expired and someone else took the row) records its attempt in the
    log but leaves the status to the new claimer.
    """
    conn.execute(
        notify_deliveries.insert().values(
            outbox_id=msg.id,
            contact_point_id=msg.contact_point_id,
            channel=msg.channel,
            attempt=msg.attempts,
            duration_ms=outcome.duration_ms,
            ok=outcome.ok,
            detail=outcome.detail,
            error=outcome.error,
        )
    )
    if outcome.ok:
        status, nxt = "delivered", None
    else:
        age = conn.execute(text("select now() - cast(:c as timestamptz)"), {"c": msg.created_at})
        too_old = age.scalar_one() >= give_up
        status = "failed" if outcome.permanent or too_old else "pending"
        nxt = backoff(msg.attempts)
    conn.execute(
        text(
            "update notify_outbox set status = :st, claimed_by = null, claimed_until = null, "
            "delivered_at = case when :st = 'delivered' then now() end, "
            "last_error = :err, next_attempt_at = now() + coalesce(:nxt, interval '0') "
            "where id = :id and claimed_by = :me and status = 'pending'"
        ),
        {"st": status, "err": outcome.error, "nxt": nxt, "id": msg.id, "me": claimer},
    )
    return status


def cancel_for_contact_point(conn: Connection, contact_point_id: int) -> int:
    """Cancel the pending messages of a contact point (it was deleted or disabled)."""
    return conn.execute(
        text(
            "update notify_outbox set status = 'cancelled', last_error = 'contact point removed' "
            "where contact_point_id = :id and status = 'pending'"
        ),
        {"id": contact_point_id},
    ).rowcount


def prune(conn: Connection, *, days: int) -> int:
    """Delete delivered, failed and cancelled messages (and their log) older than ``days``."""
    return conn.execute(
        text(
            "delete from notify_outbox where status <> 'pending' "
            "and created_at < now() - make_interval(days => :d)"
        ),
        {"d": days},
    ).rowcount


@dataclass(frozen=True, slots=True)
class DeliveryRow:
    outbox_id: int
    at: datetime
    channel: str
    kind: str
    subject: str
    attempt: int
    ok: bool
    detail: str | None
    error: str | None
    duration_ms: int
    status: str  # the message's status now


def delivery_log(
    conn: Connection, *, contact_point_id: int | None = None, limit: int = 50
) -> list[DeliveryRow]:
    """The newest delivery attempts, of one contact point or of all."""
    rows = conn.execute(
        text(
            "select d.outbox_id, d.at, d.channel, o.kind, o.payload->>'subject', d.attempt, "
            "d.ok, d.detail, d.error, d.duration_ms, o.status from notify_deliveries d "
            "join notify_outbox o on o.id = d.outbox_id "
            "where cast(:cp as int) is null or d.contact_point_id = :cp "
            "order by d.at desc, d.id desc limit :n"
        ),
        {"cp": contact_point_id, "n": limit},
    ).all()
    return [DeliveryRow(*r) for r in rows]


def status_counts(conn: Connection) -> dict[str, int]:
    """Messages per status (for /metrics and the contact points page)."""
    rows = conn.execute(text("select status, count(*) from notify_outbox group by 1")).all()
    return {str(s): int(n) for s, n in rows}


def get_status(conn: Connection, outbox_id: int) -> tuple[str, str | None] | None:
    row = conn.execute(
        text("select status, last_error from notify_outbox where id = :id"), {"id": outbox_id}
    ).first()
    return None if row is None else (str(row[0]), row[1])
