"""Alerting on the web: the Alerts page, rules with their backtest, contact points with
"send a test message", silences, maintenance windows, annotations, and their JSON API.
Thin routes over app.alerts, app.notify and app.slo; every change is audited."""
