"""What the alerting pages and API share: the public URL, the test message."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel
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
    return _created(conn, who, "annotation", aid, spec)


def create_silence_audited(conn: Connection, who: Actor, spec: SilenceSpec) -> int:
    """Store a silence and its audit entry in the caller's transaction (page and API)."""
    return _created(conn, who, "silence", create_silence(conn, spec), spec)


def _created(conn: Connection, who: Actor, kind: str, oid: int, spec: BaseModel) -> int:
    """The audit entry of a ``kind`` just created (its spec as "after"); returns its id."""
    record(conn, who, f"{kind}.create", object_type=kind, object_name=str(oid),
           after=spec.model_dump(mode="json"))  # fmt: skip
    return oid
