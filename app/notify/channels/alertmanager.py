"""Push to an existing Prometheus Alertmanager through its v2 API (``POST /api/v2/alerts``).

Each alert of the message becomes one Alertmanager alert: ``labels`` (``alertname`` = the
rule, ``severity``, ``target``, ``mode``, ... : Alertmanager groups, routes, inhibits and
de-duplicates on them), ``annotations`` (``summary``, ``description``, ``value``,
``threshold``), ``startsAt``, ``generatorURL`` (the chart window). A firing alert's
``endsAt`` is the send time plus ``resend_s`` x 4 (the evaluator re-pushes firing alerts
every ``resend_s``, as Prometheus does, so Alertmanager never times them out while they
fire); a resolved one carries its resolution time. Basic auth when the contact point has
a ``username``; the password is its secret.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from app.notify.channels.base import Destination, SendContext, host_of, post_json
from app.notify.outbox import Claimed, Outcome

RESEND_S = 60


def alerts_of(msg: Claimed, now: datetime) -> list[dict[str, Any]]:
    out = []
    for a in msg.payload.get("alerts") or []:
        labels = {str(k): str(v) for k, v in (a.get("labels") or {}).items() if v is not None}
        labels.setdefault("alertname", str(a.get("rule", "connwatch")))
        if a.get("severity"):
            labels.setdefault("severity", str(a["severity"]))
        annotations = {
            "summary": str(a.get("summary", "")),
            "description": str(a.get("description", "")),
        }
        for key in ("value", "threshold"):
            if a.get(key) is not None:
                annotations[key] = str(a[key])
        if a.get("status") == "resolved":
            ends = a.get("ends_at") or now.isoformat()
        else:
            ends = (now + timedelta(seconds=4 * RESEND_S)).isoformat()
        item: dict[str, Any] = {"labels": labels, "annotations": annotations, "endsAt": ends}
        if a.get("starts_at"):
            item["startsAt"] = a["starts_at"]
        if a.get("chart_url"):
            item["generatorURL"] = a["chart_url"]
        out.append(item)
    if not out:  # a test message: one alert that resolves itself at once
        out.append(
            {
                "labels": {"alertname": "ConnwatchTest", "severity": "info"},
                "annotations": {"summary": str(msg.payload.get("subject", ""))},
                "startsAt": now.isoformat(),
                "endsAt": (now + timedelta(minutes=1)).isoformat(),
            }
        )
    return out


class AlertmanagerChannel:
    name = "alertmanager"

    def send(self, msg: Claimed, dest: Destination, ctx: SendContext) -> Outcome:
        base = str(dest.settings.get("url", "")).rstrip("/")
        url = f"{base}/api/v2/alerts"
        body = json.dumps(alerts_of(msg, datetime.now(UTC))).encode()
        headers = {"X-Connwatch-Delivery": str(msg.id)}
        user = dest.settings.get("username")
        if user:
            import base64

            token = base64.b64encode(f"{user}:{dest.secret or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        return post_json(ctx, url, body, headers, f"alertmanager {host_of(base)}")
