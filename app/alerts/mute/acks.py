"""Acknowledgements: someone is on it. An acknowledged firing alert sends no repeats until
it resolves (which clears the acknowledgement) or the acknowledgement expires; the first
notification and the resolution are sent as usual."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection


class AckError(ValueError):
    """Nothing to acknowledge (the text says why)."""


def acknowledge(
    conn: Connection,
    *,
    rule: str,
    fingerprint: str,
    by: str,
    comment: str,
    until: datetime | None = None,
) -> None:
    if not by.strip() or not comment.strip():
        raise AckError("who and why are both needed to acknowledge")
    if until is not None and until.tzinfo is None:
        raise AckError("until: give a time zone")
    done = conn.execute(
        text(
            "update alert_instances i set ack_by = :by, ack_at = now(), ack_until = :until, "
            "ack_comment = :c from alert_rules r where r.id = i.rule_id and r.name = :rule "
            "and i.fingerprint = :fp and i.state in ('firing', 'pending')"
        ),
        {"by": by.strip(), "until": until, "c": comment.strip(), "rule": rule, "fp": fingerprint},
    ).rowcount
    if not done:
        raise AckError(f"rule {rule!r} has no firing or pending alert {fingerprint!r}")


def unacknowledge(conn: Connection, *, rule: str, fingerprint: str) -> bool:
    return (
        conn.execute(
            text(
                "update alert_instances i set ack_by = null, ack_at = null, ack_until = null, "
                "ack_comment = null from alert_rules r where r.id = i.rule_id "
                "and r.name = :rule and i.fingerprint = :fp and i.ack_by is not null"
            ),
            {"rule": rule, "fp": fingerprint},
        ).rowcount
        > 0
    )
