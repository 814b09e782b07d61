"""The deliverer: claims due outbox messages, sends them, records every attempt.

:meth:`Deliverer.run_once` is one pass (claim up to ``parallel`` messages, send them at
once on a small thread pool, record the outcomes); :meth:`Deliverer.loop` repeats it
until asked to stop. Any number of deliverers may run (claims never overlap); connwatch
runs one, in the process that holds the alerting lease (app/alerts/service.py).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx2
from sqlalchemy.engine import Engine

from app.config import Settings
from app.notify import outbox
from app.notify.channels.base import Destination, SendContext
from app.notify.channels.registry import CHANNELS
from app.notify.contacts import ContactPointError, destination
from app.notify.outbox import Claimed, Outcome
from app.notify.smtp import SmtpConfig
from app.secrets import SecretError, Vault

log = logging.getLogger(__name__)


def public_url(settings: Settings) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/")
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    return f"http://{host}:{settings.port}"


class Deliverer:
    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        *,
        vault: Vault | None = None,
        name: str | None = None,
        parallel: int = 4,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self._vault = vault
        self.name = name or f"{socket.gethostname()}-{os.getpid()}-notify"
        self.parallel = parallel
        self.smtp = SmtpConfig.from_settings(settings)
        self.http = httpx2.Client(timeout=settings.notify_timeout_s, follow_redirects=False)
        self.public_url = public_url(settings)
        slowest = max(settings.notify_timeout_s, settings.smtp_timeout_s)
        self.lease = timedelta(seconds=2 * slowest + 30)
        self.give_up = timedelta(hours=settings.notify_give_up_h)
        self._pool = ThreadPoolExecutor(parallel, thread_name_prefix="connwatch-notify")

    def vault(self) -> Vault | None:
        if self._vault is None:
            try:
                self._vault = Vault.from_settings(self.settings)
            except SecretError as exc:
                log.warning("notifications: %s", exc)
        return self._vault

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.http.close()

    # -- one pass -------------------------------------------------------------------
    def run_once(self, *, only_id: int | None = None) -> list[tuple[int, str]]:
        """Deliver what is due now; return (outbox id, new status) per message tried."""
        with self.engine.begin() as conn:
            claimed = outbox.claim(
                conn, self.name, limit=self.parallel, lease=self.lease, only_id=only_id
            )
        if not claimed:
            return []
        outcomes = list(self._pool.map(self._send, claimed))
        done: list[tuple[int, str]] = []
        with self.engine.begin() as conn:
            for msg, outcome in zip(claimed, outcomes, strict=True):
                status = outbox.finish(conn, msg, self.name, outcome, give_up=self.give_up)
                done.append((msg.id, status))
        for (mid, status), outcome in zip(done, outcomes, strict=True):
            if status == "delivered":
                log.info("notification %d delivered (%s)", mid, outcome.detail)
            else:
                log.warning("notification %d: %s (%s)", mid, outcome.error, status)
        return done

    def _send(self, msg: Claimed) -> Outcome:
        channel = CHANNELS.get(msg.channel)
        if channel is None:
            return Outcome(False, None, f"unknown channel {msg.channel!r}", permanent=True)
        try:
            if msg.contact_point_id is not None:
                with self.engine.connect() as conn:
                    dest = destination(conn, msg.contact_point_id, self.vault())
            elif msg.channel == "email":
                dest = Destination("e-mail", {})
            else:
                return Outcome(False, None, "no contact point", permanent=True)
        except (ContactPointError, SecretError) as exc:
            return Outcome(False, None, str(exc))

        def attachments() -> list[outbox.Attachment]:
            with self.engine.connect() as conn:
                return outbox.attachments_of(conn, msg.id)

        ctx = SendContext(self.http, self.smtp, self.public_url, attachments)
        try:
            return channel.send(msg, dest, ctx)
        except Exception as exc:  # a channel bug must not stop the other deliveries
            log.exception("notification %d: channel %s failed", msg.id, msg.channel)
            return Outcome(False, None, f"internal error in channel {msg.channel}: {exc!r}"[:300])

    # -- forever ----------------------------------------------------------------------
    def loop(self, stop: threading.Event, *, poll_s: float = 1.0) -> None:
        """Deliver until ``stop`` is set; a store outage is waited out (messages stay)."""
        failing = False
        while not stop.is_set():
            try:
                busy = bool(self.run_once())
                if failing:
                    log.warning("notifications: store reachable again")
                failing = False
            except Exception as exc:
                if not failing:
                    log.warning(
                        "notifications: cannot reach the store (%s)", str(exc).splitlines()[0]
                    )
                failing, busy = True, False
            if not busy:
                stop.wait(poll_s)
