"""Notifications: contact points, the SMTP configuration, the outbox in PostgreSQL and its
delivery log, and the channels that deliver (webhook, Slack-compatible, e-mail, Alertmanager).

The small public API (docs/alerts.md, "Notifications"):

- :func:`app.notify.outbox.enqueue` / :func:`app.notify.outbox.enqueue_email`: put a
  message in the outbox inside the caller's transaction (delivered at least once, never
  again once a delivery succeeded);
- :class:`app.notify.deliver.Deliverer`: claims due messages and sends them;
- :mod:`app.notify.contacts`: contact points (validated, secrets encrypted).
"""
