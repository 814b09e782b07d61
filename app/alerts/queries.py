"""What the pages, the API, ``/metrics`` and the CLI show: current alerts and history."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.alerts.engine.notifications import links, where

# Order on the Alerts page: what needs someone first.
STATE_ORDER = {"firing": 0, "pending": 1, "error": 2, "nodata": 3, "resolved": 4, "normal": 5}
SEVERITY_ORDER = {"page": 0, "ticket": 1, "info": 2}


@dataclass(frozen=True, slots=True)
class AlertRow:
    rule: str
    kind: str
    severity: str
    state: str
    fingerprint: str
    labels: dict[str, str]
    summary: str
    value: float | None
    threshold: float | None
    state_since: datetime
    active_since: datetime | None
    fired_at: datetime | None
    resolved_at: datetime | None
    silenced: bool
    in_maintenance: bool
    ack_by: str | None
    ack_comment: str | None
    ack_until: datetime | None
    chart_url: str
    samples_url: str | None

    @property
    def where(self) -> str:
        return where(self.labels)

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["where"] = self.where
        for k, v in d.items():
            if isinstance(v, datetime):
                d[k] = v.isoformat()
        return d


def current_alerts(
    conn: Connection, now: datetime, *, base_url: str = "", target: str | None = None
) -> list[AlertRow]:
    """Every stored (non-normal) alert instance, most urgent first."""
    rows = (
        conn.execute(
            text(
                "select r.name, r.kind, r.severity, r.spec, i.* from alert_instances i "
                "join alert_rules r on r.id = i.rule_id "
                "where cast(:t as text) is null or i.labels->>'target' = :t"
            ),
            {"t": target},
        )
        .mappings()
        .all()
    )
    out = []
    for r in rows:
        labels = dict(r["labels"])
        window_ms = _window_ms(r["spec"])
        start = (r["active_since"] or r["state_since"]) - timedelta(
            milliseconds=max(window_ms, 600_000)
        )
        end = r["resolved_at"] or now
        lk = links(base_url, labels, start, end, r["kind"] == "availability")
        acked = r["ack_by"] is not None and (r["ack_until"] is None or r["ack_until"] > now)
        out.append(
            AlertRow(
                r["name"],
                r["kind"],
                r["severity"],
                r["state"],
                r["fingerprint"],
                labels,
                r["summary"],
                r["value"],
                r["threshold"],
                r["state_since"],
                r["active_since"],
                r["fired_at"],
                r["resolved_at"],
                r["silenced_by"] is not None,
                r["maintenance_by"] is not None,
                r["ack_by"] if acked else None,
                r["ack_comment"] if acked else None,
                r["ack_until"] if acked else None,
                lk["chart_url"],
                lk.get("samples_url"),
            )
        )
    out.sort(
        key=lambda a: (
            STATE_ORDER.get(a.state, 9),
            SEVERITY_ORDER.get(a.severity, 9),
            -a.state_since.timestamp(),
            a.rule,
            a.fingerprint,
        )
    )
    return out


def _window_ms(spec: dict[str, Any]) -> int:
    from app.targets.durations import parse_duration_ms

    try:
        return parse_duration_ms(spec.get("window", "5m"))
    except ValueError:
        return 300_000


@dataclass(frozen=True, slots=True)
class Transition:
    at: datetime
    rule: str
    severity: str
    labels: dict[str, str]
    from_state: str
    to_state: str
    value: float | None
    threshold: float | None
    summary: str

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["at"] = self.at.isoformat()
        return d


def history(
    conn: Connection,
    start: datetime,
    end: datetime,
    *,
    rule: str | None = None,
    target: str | None = None,
    limit: int = 200,
) -> list[Transition]:
    """State changes in ``[start, end)``, newest first."""
    rows = conn.execute(
        text(
            "select at, rule_name, severity, labels, from_state, to_state, value, threshold, "
            "summary from alert_transitions where at >= :a and at < :b "
            "and (cast(:r as text) is null or rule_name = :r) "
            "and (cast(:t as text) is null or labels->>'target' = :t) "
            "order by at desc, id desc limit :n"
        ),
        {"a": start, "b": end, "r": rule, "t": target, "n": limit},
    ).all()
    return [Transition(r[0], r[1], r[2], dict(r[3]), r[4], r[5], r[6], r[7], r[8]) for r in rows]


def firing_counts(conn: Connection) -> dict[tuple[str, str], int]:
    """(rule, state) -> instances, for /metrics."""
    rows = conn.execute(
        text(
            "select r.name, i.state, count(*) from alert_instances i join alert_rules r "
            "on r.id = i.rule_id group by 1, 2"
        )
    ).all()
    return {(str(a), str(b)): int(n) for a, b, n in rows}


def prometheus_text(conn: Connection) -> str:
    """``ALERTS`` and ``ALERTS_FOR_STATE`` as Prometheus itself exports them (one sample per
    pending or firing instance: ``alertname`` = the rule, ``alertstate``, ``severity`` and the
    instance's labels), plus the outbox per status (``connwatch_notifications``)."""
    from app.store.read.agents import label_value

    rows = conn.execute(
        text(
            "select r.name, r.severity, i.state, i.labels, coalesce(i.active_since, "
            "i.state_since) from alert_instances i join alert_rules r on r.id = i.rule_id "
            "where i.state in ('pending', 'firing') order by r.name, i.fingerprint"
        )
    ).all()
    out = []
    if rows:
        out += [
            "# HELP ALERTS Alert instances that are pending or firing (Prometheus convention)",
            "# TYPE ALERTS gauge",
        ]
        fors = []
        for name, severity, state, labels, since in rows:
            lab = {"alertname": name, "alertstate": state, "severity": severity}
            order = {"target": 0, "mode": 1, "probe": 2, "site": 3}
            for k in sorted(labels, key=lambda k: (order.get(k, 9), k)):
                lab.setdefault(str(k), str(labels[k]))
            body = ",".join(f'{k}="{label_value(v)}"' for k, v in lab.items())
            out.append(f"ALERTS{{{body}}} 1")
            lab.pop("alertstate")
            body = ",".join(f'{k}="{label_value(v)}"' for k, v in lab.items())
            fors.append(f"ALERTS_FOR_STATE{{{body}}} {int(since.timestamp())}")
        out += [
            "# HELP ALERTS_FOR_STATE Unix time the alert's condition started holding",
            "# TYPE ALERTS_FOR_STATE gauge",
            *fors,
        ]
    counts = conn.execute(text("select status, count(*) from notify_outbox group by 1")).all()
    out += [
        "# HELP connwatch_notifications Notifications in the outbox by status",
        "# TYPE connwatch_notifications gauge",
    ]
    have = {str(s): int(n) for s, n in counts}
    for status in ("pending", "delivered", "failed", "cancelled"):
        out.append(f'connwatch_notifications{{status="{status}"}} {have.get(status, 0)}')
    return "\n".join(out) + "\n"
