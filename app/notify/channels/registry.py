"""Channel name -> the object that delivers through it (the explicit registry)."""

from __future__ import annotations

from app.notify.channels.alertmanager import AlertmanagerChannel
from app.notify.channels.base import Channel
from app.notify.channels.email import EmailChannel
from app.notify.channels.slack import SlackChannel
from app.notify.channels.webhook import WebhookChannel

CHANNELS: dict[str, Channel] = {
    "webhook": WebhookChannel(),
    "slack": SlackChannel(),
    "email": EmailChannel(),
    "alertmanager": AlertmanagerChannel(),
}
