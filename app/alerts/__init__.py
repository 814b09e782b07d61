"""Alerting for on-call: rules over the measured series, their evaluation in exactly one
process, alert states and history, silences, maintenance windows, acknowledgements,
annotations and backtests; notifications go out through :mod:`app.notify`'s outbox.

See docs/alerts.md.
"""
