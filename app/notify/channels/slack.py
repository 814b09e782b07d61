"""Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat, Teams' Slack mode).

The webhook URL carries its own token, so it is the contact point's secret, never shown.
Body: ``text`` (the fallback every client shows: the subject and the message) and one
``section`` block in mrkdwn, plus ``channel``/``username`` when the contact point sets them.
"""

from __future__ import annotations

import json
from typing import Any

from app.notify.channels.base import Destination, SendContext, post_json
from app.notify.outbox import Claimed, Outcome

MAX_TEXT = 3000  # a Slack section's text limit


def body_of(msg: Claimed, dest: Destination) -> bytes:
    subject = str(msg.payload.get("subject", ""))
    text = str(msg.payload.get("text", ""))
    full = f"*{subject}*\n{text}".strip()
    if len(full) > MAX_TEXT:
        full = full[: MAX_TEXT - 1] + "…"
    doc: dict[str, Any] = {
        "text": f"{subject}\n{text}"[:MAX_TEXT],
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": full}}],
    }
    for key in ("channel", "username"):
        if dest.settings.get(key):
            doc[key] = str(dest.settings[key])
    return json.dumps(doc).encode()


class SlackChannel:
    name = "slack"

    def send(self, msg: Claimed, dest: Destination, ctx: SendContext) -> Outcome:
        if not dest.secret:
            return Outcome(False, None, "slack: no webhook URL stored", permanent=True)
        headers = {"X-Connwatch-Delivery": str(msg.id)}
        # the host of a Slack URL is not secret, its path is: name only the host
        from app.notify.channels.base import host_of

        return post_json(ctx, dest.secret, body_of(msg, dest), headers, host_of(dest.secret))
