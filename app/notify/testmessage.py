"""The "send a test message" button: one message to one contact point, through the outbox
(so it is delivered, retried and logged like any other)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.engine import Connection

from app.notify.contacts import get_contact_point
from app.notify.outbox import enqueue


def enqueue_test(conn: Connection, name: str, *, author: str) -> int:
    """Queue a test message to contact point ``name``; LookupError if there is none."""
    cp = get_contact_point(conn, name)
    if cp is None:
        raise LookupError(f"no contact point named {name!r}")
    now = datetime.now(UTC)
    payload = {
        "subject": f"connwatch test message to {cp.name}",
        "text": (
            f"This is a test message from connwatch, sent by {author} at "
            f"{now:%Y-%m-%d %H:%M:%S} UTC to contact point {cp.name} ({cp.channel}).\n"
            "If you can read it, alerts will reach you here."
        ),
        "status": "test",
        "alerts": [],
    }
    new = enqueue(conn, channel=cp.channel, kind="test", payload=payload, contact_point_id=cp.id)
    assert new is not None
    return new
