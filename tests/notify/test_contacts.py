"""Contact points: validated per channel, secrets encrypted or referenced, never shown."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine

from app.notify.contacts import (
    ContactPointSpec,
    delete_contact_point,
    destination,
    export_spec,
    get_contact_point,
    list_contact_points,
    upsert_contact_point,
)
from app.notify.tables import contact_points, notify_attachments, notify_deliveries, notify_outbox
from app.secrets import Vault
from app.slo.tables import slos


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"name": "a", "channel": "webhook"}, "a webhook contact point needs a url"),
        ({"name": "a", "channel": "webhook", "url": "file:///etc/passwd"}, "http:// or https://"),
        ({"name": "a", "channel": "webhook", "url": "http://u:p@h/x"}, "credentials in the URL"),
        ({"name": "a", "channel": "email"}, "at least one recipient"),
        ({"name": "a", "channel": "email", "to": ["x"]}, "'x' is not an e-mail address"),
        ({"name": "a", "channel": "email", "to": ["a@b.c"], "secret": "x"}, "SMTP settings"),
        ({"name": "a", "channel": "slack", "secret": "ftp://x"}, "http:// or https://"),
        ({"name": "a b", "channel": "slack"}, "letters, digits"),
        ({"name": "a", "channel": "pager"}, "Input should be"),
        ({"name": "a", "channel": "webhook", "url": "http://h", "bogus": 1}, "Extra inputs"),
    ],
)
def test_bad_contact_points_say_why(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ContactPointSpec.model_validate(doc)


def test_secrets_are_encrypted_referenced_and_never_shown(
    migrated_engine: Engine, vault: Vault
) -> None:
    with migrated_engine.begin() as conn:
        upsert_contact_point(
            conn,
            ContactPointSpec(name="hook", channel="webhook", url="https://h/x", secret="hunter2"),
            vault,
        )
        upsert_contact_point(
            conn,
            ContactPointSpec(
                name="am",
                channel="alertmanager",
                url="http://am:9093",
                username="cw",
                secret="env:AM_PASSWORD",
            ),
            vault,
        )
        stored = conn.execute(text("select secret_enc from contact_points where name='hook'"))
        token = stored.scalar_one()
        assert token and "hunter2" not in token
        views = list_contact_points(conn)
        assert [(v.name, v.secret, v.secret_ref) for v in views] == [
            ("am", "reference", "env:AM_PASSWORD"),
            ("hook", "encrypted", None),
        ]
        assert "hunter2" not in repr(views)
        hook = get_contact_point(conn, "hook")
        assert hook is not None
        assert destination(conn, hook.id, vault).secret == "hunter2"
        exported = export_spec(hook, conn, include_secrets=True)
        assert exported["secret_encrypted"] == token and "secret" not in exported
        assert "secret_encrypted" not in export_spec(hook, conn, include_secrets=False)
        # updating without a secret keeps it; the export round-trips
        upsert_contact_point(conn, ContactPointSpec.model_validate(exported), vault)
        upsert_contact_point(
            conn, ContactPointSpec(name="hook", channel="webhook", url="https://h/y"), vault
        )
        assert destination(conn, hook.id, vault).secret == "hunter2"
        assert delete_contact_point(conn, "hook") and not delete_contact_point(conn, "hook")


def test_tables_match_the_migration(migrated_engine: Engine) -> None:
    insp = inspect(migrated_engine)
    for table in (contact_points, notify_outbox, notify_attachments, notify_deliveries, slos):
        assert {c["name"] for c in insp.get_columns(table.name)} == {c.name for c in table.columns}
