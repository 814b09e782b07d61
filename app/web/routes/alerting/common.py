"""What the alerting pages and API share: the public URL, the test message."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import HTTPException
from sqlalchemy.engine import Connection, Engine

from app.alerts.annotations import AnnotationSpec, add_annotation
from app.alerts.mute.silences import SilenceSpec, create_silence
from app.auth.audit import record
from app.auth.principal import Principal as Actor
from app.config import get_settings
from app.notify.deliver import Deliverer, public_url
from app.notify.outbox import get_status
from app.notify.testmessage import enqueue_test
from app.secrets import Vault


def base_url() -> str:
    return public_url(get_settings())


def send_test(engine: Engine, who: Actor, name: str, vault: Vault | None = None) -> dict[str, Any]:
    """Queue a test message to ``name`` and deliver it now; say what the receiver answered."""
    with engine.begin() as conn:
        try:
            mid = enqueue_test(conn, name, author=who.name)
        except LookupError as exc:
            raise HTTPException(404, str(exc)) from None
        record(conn, who, "contact_point.test", object_type="contact_point", object_name=name)
    deliverer = Deliverer(engine, get_settings(), vault=vault, name=f"web-test-{mid}")
    try:
        deliverer.run_once(only_id=mid)
    finally:
        deliverer.close()
    with engine.connect() as conn:
        status, error = get_status(conn, mid) or ("pending", None)
    return {"id": mid, "status": status, "error": error}


def create_annotation_audited(
    conn: Connection, who: Actor, spec: AnnotationSpec, *, source: str, now: datetime
) -> int:
    """Store an annotation and its audit entry in the caller's transaction (page and API)."""
    aid = add_annotation(conn, spec, author=who.name, source=source, now=now)
    record(
        conn,
        who,
        "annotation.create",
        object_type="annotation",
        object_name=str(aid),
        after=spec.model_dump(mode="json"),
    )
    return aid


def create_silence_audited(conn: Connection, who: Actor, spec: SilenceSpec) -> int:
    """Store a silence and its audit entry in the caller's transaction (page and API)."""
    sid = create_silence(conn, spec)
    record(
        conn,
        who,
        "silence.create",
        object_type="silence",
        object_name=str(sid),
        after=spec.model_dump(mode="json"),
    )
    return sid
