"""E-mail through the one SMTP configuration: to a contact point's recipients, or to the
explicit ``to`` of an :func:`~app.notify.outbox.enqueue_email` message, with attachments."""

from __future__ import annotations

from app.notify.addresses import AddressError, check_addresses
from app.notify.channels.base import Destination, SendContext
from app.notify.outbox import Claimed, Outcome
from app.notify.smtp import build_message, send


class EmailChannel:
    name = "email"

    def send(self, msg: Claimed, dest: Destination, ctx: SendContext) -> Outcome:
        raw = msg.payload.get("to") or dest.settings.get("to") or []
        try:
            to = check_addresses(raw if isinstance(raw, list) else [raw], where="to")
        except AddressError as exc:
            return Outcome(False, None, str(exc), permanent=True)
        email = build_message(
            ctx.smtp,
            to=to,
            subject=str(msg.payload.get("subject", "")),
            text_body=str(msg.payload.get("text", "")),
            html_body=msg.payload.get("html"),
            attachments=ctx.attachments(),
            message_id=f"connwatch.{msg.id}",
            headers={"X-Connwatch-Delivery": str(msg.id), "X-Connwatch-Event": msg.kind},
        )
        return send(ctx.smtp, email)
