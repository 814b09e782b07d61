"""The outbox: enqueue in the caller's transaction, claims that never overlap, retries with
backoff, never again after a success, give-up, de-duplication, pruning."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.notify import outbox
from app.notify.outbox import Attachment, OutboxError, Outcome


def _enqueue(engine: Engine, **kw: object) -> int:
    with engine.begin() as conn:
        new = outbox.enqueue_email(
            conn,
            to=["a@example.org"],
            subject="s",
            text_body="t",
            **kw,  # type: ignore[arg-type]
        )
    assert new is not None
    return new


def test_enqueue_is_part_of_the_callers_transaction(migrated_engine: Engine) -> None:
    with migrated_engine.connect() as conn:
        trans = conn.begin()
        outbox.enqueue_email(conn, to=["a@example.org"], subject="s", text_body="t")
        trans.rollback()
    with migrated_engine.connect() as conn:
        assert conn.execute(text("select count(*) from notify_outbox")).scalar_one() == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"to": ["not-an-address"]}, "to[0]: 'not-an-address' is not an e-mail address"),
        ({"to": ["a@example.org\r\nBcc: x@evil"]}, "to[0]: line breaks are not allowed"),
        ({"to": []}, "to: at least one recipient is needed"),
        ({"subject": " "}, "payload.subject: a message needs a subject"),
    ],
)
def test_bad_messages_are_refused_with_the_field(
    migrated_engine: Engine, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"to": ["a@example.org"], "subject": "s", "text_body": "t"}
    args.update(kwargs)
    with (
        migrated_engine.begin() as conn,
        pytest.raises(ValueError, match=message.replace("[", r"\[")),
    ):
        outbox.enqueue_email(conn, **args)  # type: ignore[arg-type]


def test_attachments_only_on_email_and_with_plain_names(migrated_engine: Engine) -> None:
    with migrated_engine.begin() as conn, pytest.raises(OutboxError, match="only e-mail"):
        outbox.enqueue(
            conn,
            channel="webhook",
            kind="test",
            payload={"subject": "s"},
            attachments=[Attachment("a.csv", "text/csv", b"x")],
        )
    with migrated_engine.begin() as conn, pytest.raises(OutboxError, match="not a file name"):
        outbox.enqueue_email(
            conn,
            to=["a@example.org"],
            subject="s",
            text_body="t",
            attachments=[Attachment("../etc/passwd", "text/plain", b"x")],
        )


def test_dedupe_key_enqueues_once(migrated_engine: Engine) -> None:
    first = _enqueue(migrated_engine, dedupe_key="report:2026-W46")
    with migrated_engine.begin() as conn:
        again = outbox.enqueue_email(
            conn, to=["a@example.org"], subject="s", text_body="t", dedupe_key="report:2026-W46"
        )
    assert first and again is None


def test_claims_never_overlap_and_delivered_is_final(migrated_engine: Engine) -> None:
    ids = [_enqueue(migrated_engine) for _ in range(5)]
    with migrated_engine.begin() as conn:
        a = outbox.claim(conn, "a", limit=3)
    with migrated_engine.begin() as conn:
        b = outbox.claim(conn, "b", limit=10)
    assert sorted(m.id for m in a + b) == ids
    assert not {m.id for m in a} & {m.id for m in b}
    with migrated_engine.begin() as conn:
        for m in a:
            assert outbox.finish(conn, m, "a", Outcome(True, "HTTP 200")) == "delivered"
        # b's claims are still held: nothing is due
        assert outbox.claim(conn, "c", limit=10) == []
        for m in b:
            outbox.finish(conn, m, "b", Outcome(True, "ok"))
    with migrated_engine.begin() as conn:
        conn.execute(text("update notify_outbox set next_attempt_at = now() - interval '1 day'"))
        assert outbox.claim(conn, "c", limit=10) == []  # delivered: never again


def test_an_expired_claim_is_taken_again(migrated_engine: Engine) -> None:
    mid = _enqueue(migrated_engine)
    with migrated_engine.begin() as conn:
        (m,) = outbox.claim(conn, "dead", lease=timedelta(milliseconds=1))
    with migrated_engine.begin() as conn:
        conn.execute(text("select pg_sleep(0.01)"))
        (again,) = outbox.claim(conn, "alive")
    assert again.id == mid and again.attempts == 2
    # the dead claimer cannot overwrite the new claim's outcome
    with migrated_engine.begin() as conn:
        outbox.finish(conn, m, "dead", Outcome(False, None, "late"))
        assert outbox.get_status(conn, mid) == ("pending", None)
        outbox.finish(conn, again, "alive", Outcome(True, "ok"))
        assert outbox.get_status(conn, mid) == ("delivered", None)
        log = outbox.delivery_log(conn)
    assert [(r.attempt, r.ok) for r in log] == [(2, True), (1, False)]


def test_failures_back_off_then_give_up(migrated_engine: Engine) -> None:
    mid = _enqueue(migrated_engine)
    with migrated_engine.begin() as conn:
        (m,) = outbox.claim(conn, "a")
        assert outbox.finish(conn, m, "a", Outcome(False, None, "HTTP 503")) == "pending"
        wait = conn.execute(
            text("select next_attempt_at - now() from notify_outbox where id = :i"), {"i": mid}
        ).scalar_one()
        assert timedelta(seconds=10) < wait < timedelta(seconds=20)
        assert outbox.claim(conn, "a") == []  # not due yet
        conn.execute(text("update notify_outbox set next_attempt_at = now()"))
        (m,) = outbox.claim(conn, "a")
        status = outbox.finish(conn, m, "a", Outcome(False, None, "HTTP 503"), give_up=timedelta(0))
    assert status == "failed"


def test_permanent_errors_fail_at_once(migrated_engine: Engine) -> None:
    mid = _enqueue(migrated_engine)
    with migrated_engine.begin() as conn:
        (m,) = outbox.claim(conn, "a")
        outbox.finish(conn, m, "a", Outcome(False, "HTTP 404", "HTTP 404", permanent=True))
        assert outbox.get_status(conn, mid) == ("failed", "HTTP 404")


def test_backoff_grows_and_is_capped() -> None:
    waits = [outbox.backoff(n).total_seconds() for n in (1, 2, 3, 10, 30)]
    assert 12 <= waits[0] <= 18 and 24 <= waits[1] <= 36 and 48 <= waits[2] <= 72
    assert waits[3] <= 1800 * 1.2 and waits[4] <= 1800 * 1.2


def test_prune_keeps_pending_messages(migrated_engine: Engine) -> None:
    done, pending = _enqueue(migrated_engine), _enqueue(migrated_engine)
    with migrated_engine.begin() as conn:
        (m,) = outbox.claim(conn, "a", only_id=done)
        outbox.finish(conn, m, "a", Outcome(True, "ok"))
        conn.execute(text("update notify_outbox set created_at = now() - interval '100 days'"))
        assert outbox.prune(conn, days=90) == 1
        assert outbox.get_status(conn, pending) == ("pending", None)
        assert outbox.get_status(conn, done) is None
