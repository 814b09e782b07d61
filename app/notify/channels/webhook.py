"""Generic webhook: a documented, versioned JSON body, signed with HMAC-SHA256.

Body (``version`` 1, docs/alerts.md "Webhook"): the outbox payload plus ``id`` (the
outbox id, stable across retries) and ``sent_at``. Headers:

- ``X-Connwatch-Delivery: <id>``: the same for every retry of one message (dedupe on it);
- ``X-Connwatch-Event: alert|test``;
- ``X-Connwatch-Signature: t=<unix seconds>,v1=<hex>`` when the contact point has a
  secret: ``v1 = HMAC-SHA256(secret, "<t>." + raw body)``. A receiver recomputes it over
  the raw bytes, compares in constant time and rejects a ``t`` too far from its clock
  (replays). :func:`verify` is that check.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime

from app.notify.channels.base import Destination, SendContext, host_of, post_json
from app.notify.outbox import Claimed, Outcome

BODY_VERSION = "1"


def body_of(msg: Claimed) -> bytes:
    doc = {
        **msg.payload,
        "version": BODY_VERSION,
        "id": msg.id,
        "kind": msg.kind,
        "sent_at": datetime.now(UTC).isoformat(),
    }
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, default=str).encode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(secret: str, header: str, body: bytes, *, tolerance_s: int = 300) -> bool:
    """True when ``header`` (X-Connwatch-Signature) signs ``body`` and is recent enough."""
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        ts = int(parts["t"])
        given = parts["v1"]
    except (ValueError, KeyError):
        return False
    if abs(time.time() - ts) > tolerance_s:
        return False
    expected = signature(secret, ts, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, given)


class WebhookChannel:
    name = "webhook"

    def send(self, msg: Claimed, dest: Destination, ctx: SendContext) -> Outcome:
        url = str(dest.settings.get("url", ""))
        body = body_of(msg)
        headers = {"X-Connwatch-Delivery": str(msg.id), "X-Connwatch-Event": msg.kind}
        if dest.secret:
            headers["X-Connwatch-Signature"] = signature(dest.secret, int(time.time()), body)
        return post_json(ctx, url, body, headers, f"webhook {host_of(url)}")
